import torch
from . import _rotary_jvwoltkq6i22m
ops = torch.ops._rotary_jvwoltkq6i22m

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_jvwoltkq6i22m::{op_name}"
