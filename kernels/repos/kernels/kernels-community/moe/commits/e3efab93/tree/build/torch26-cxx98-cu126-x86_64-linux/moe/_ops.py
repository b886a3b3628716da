import torch
from . import _moe_hvpupejdrwe7i
ops = torch.ops._moe_hvpupejdrwe7i

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_hvpupejdrwe7i::{op_name}"
