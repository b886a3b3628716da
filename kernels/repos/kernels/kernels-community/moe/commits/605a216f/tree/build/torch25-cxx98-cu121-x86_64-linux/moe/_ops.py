import torch
from . import _moe_xjp4ob7uiaesz
ops = torch.ops._moe_xjp4ob7uiaesz

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_xjp4ob7uiaesz::{op_name}"
