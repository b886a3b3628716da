import torch
from . import _rotary_wonugs573qx7u
ops = torch.ops._rotary_wonugs573qx7u

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_wonugs573qx7u::{op_name}"
