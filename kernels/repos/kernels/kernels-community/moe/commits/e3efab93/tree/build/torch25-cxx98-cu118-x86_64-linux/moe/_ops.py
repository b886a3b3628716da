import torch
from . import _moe_6hzgig6k2xf3p
ops = torch.ops._moe_6hzgig6k2xf3p

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_6hzgig6k2xf3p::{op_name}"
