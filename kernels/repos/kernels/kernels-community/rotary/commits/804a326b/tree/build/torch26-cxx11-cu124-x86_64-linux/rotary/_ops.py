import torch
from . import _rotary_vh7xv6p5gbfkl
ops = torch.ops._rotary_vh7xv6p5gbfkl

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_vh7xv6p5gbfkl::{op_name}"
