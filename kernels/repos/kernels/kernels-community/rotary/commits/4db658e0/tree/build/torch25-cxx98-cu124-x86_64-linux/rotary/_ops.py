import torch
from . import _rotary_qpxplr5essm6x
ops = torch.ops._rotary_qpxplr5essm6x

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_qpxplr5essm6x::{op_name}"
