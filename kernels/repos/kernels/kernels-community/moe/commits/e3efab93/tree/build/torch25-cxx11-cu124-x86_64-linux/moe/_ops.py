import torch
from . import _moe_dcatsb37baqss
ops = torch.ops._moe_dcatsb37baqss

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_dcatsb37baqss::{op_name}"
