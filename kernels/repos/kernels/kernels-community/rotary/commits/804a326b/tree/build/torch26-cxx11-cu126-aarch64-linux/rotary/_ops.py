import torch
from . import _rotary_dr2fttevkkpkw
ops = torch.ops._rotary_dr2fttevkkpkw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_dr2fttevkkpkw::{op_name}"
