import torch
from . import _rotary_bm6bguac5jgyp
ops = torch.ops._rotary_bm6bguac5jgyp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_bm6bguac5jgyp::{op_name}"
