import torch
from . import _rotary_6arvuify2lxjm
ops = torch.ops._rotary_6arvuify2lxjm

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_6arvuify2lxjm::{op_name}"
