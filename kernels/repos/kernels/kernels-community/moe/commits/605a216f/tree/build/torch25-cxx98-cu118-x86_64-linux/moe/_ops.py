import torch
from . import _moe_yaku5kkark22q
ops = torch.ops._moe_yaku5kkark22q

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_yaku5kkark22q::{op_name}"
