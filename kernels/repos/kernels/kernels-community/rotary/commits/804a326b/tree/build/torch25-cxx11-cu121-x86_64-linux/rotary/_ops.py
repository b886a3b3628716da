import torch
from . import _rotary_fe3k4yusfbwz7
ops = torch.ops._rotary_fe3k4yusfbwz7

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_fe3k4yusfbwz7::{op_name}"
