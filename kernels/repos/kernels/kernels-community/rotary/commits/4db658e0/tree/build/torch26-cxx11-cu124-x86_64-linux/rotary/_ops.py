import torch
from . import _rotary_3s5rusfsx7b5l
ops = torch.ops._rotary_3s5rusfsx7b5l

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_3s5rusfsx7b5l::{op_name}"
