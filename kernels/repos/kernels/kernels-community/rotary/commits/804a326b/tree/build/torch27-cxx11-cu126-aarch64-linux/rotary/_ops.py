import torch
from . import _rotary_okwuyw62gqehc
ops = torch.ops._rotary_okwuyw62gqehc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_okwuyw62gqehc::{op_name}"
