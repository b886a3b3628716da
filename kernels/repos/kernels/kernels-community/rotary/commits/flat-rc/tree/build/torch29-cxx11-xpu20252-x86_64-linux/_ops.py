import torch
from . import _rotary_xpu_196da9f
ops = torch.ops._rotary_xpu_196da9f

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_xpu_196da9f::{op_name}"
