import torch
from . import _rotary_l2sj72wyenyul
ops = torch.ops._rotary_l2sj72wyenyul

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_l2sj72wyenyul::{op_name}"
