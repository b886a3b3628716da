import torch
from . import _moe_oxswuqh4pogdy
ops = torch.ops._moe_oxswuqh4pogdy

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_oxswuqh4pogdy::{op_name}"
