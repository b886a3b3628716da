import torch
from . import _rotary_swi6sdaf536w7
ops = torch.ops._rotary_swi6sdaf536w7

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_swi6sdaf536w7::{op_name}"
