import torch
from . import _rotary_drnas5rqajb2d
ops = torch.ops._rotary_drnas5rqajb2d

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_drnas5rqajb2d::{op_name}"
