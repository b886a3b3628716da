import torch
from . import _rotary_ovvvb5xambxth
ops = torch.ops._rotary_ovvvb5xambxth

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_ovvvb5xambxth::{op_name}"
