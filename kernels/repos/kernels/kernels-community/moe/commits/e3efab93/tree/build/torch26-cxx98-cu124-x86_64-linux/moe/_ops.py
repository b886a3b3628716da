import torch
from . import _moe_fxhhthfa6b5rb
ops = torch.ops._moe_fxhhthfa6b5rb

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_fxhhthfa6b5rb::{op_name}"
