import torch
from . import _rotary_74tjhjvc6denh
ops = torch.ops._rotary_74tjhjvc6denh

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_74tjhjvc6denh::{op_name}"
