import torch
from . import _rotary_33bwvgfibw6br
ops = torch.ops._rotary_33bwvgfibw6br

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_33bwvgfibw6br::{op_name}"
