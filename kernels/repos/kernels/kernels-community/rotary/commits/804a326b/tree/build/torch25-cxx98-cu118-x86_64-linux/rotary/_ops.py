import torch
from . import _rotary_hxxhkmjnwtgnp
ops = torch.ops._rotary_hxxhkmjnwtgnp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_hxxhkmjnwtgnp::{op_name}"
