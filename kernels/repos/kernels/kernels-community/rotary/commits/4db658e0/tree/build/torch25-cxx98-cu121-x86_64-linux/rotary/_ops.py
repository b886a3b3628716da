import torch
from . import _rotary_x6spscgbdmdaj
ops = torch.ops._rotary_x6spscgbdmdaj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_x6spscgbdmdaj::{op_name}"
