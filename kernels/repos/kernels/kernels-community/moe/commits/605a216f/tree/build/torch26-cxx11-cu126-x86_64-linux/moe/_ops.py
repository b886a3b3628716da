import torch
from . import _moe_vsodjywemzk3k
ops = torch.ops._moe_vsodjywemzk3k

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_vsodjywemzk3k::{op_name}"
