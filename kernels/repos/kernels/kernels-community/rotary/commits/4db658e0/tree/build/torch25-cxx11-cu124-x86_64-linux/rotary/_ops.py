import torch
from . import _rotary_hn2dua6njlh7y
ops = torch.ops._rotary_hn2dua6njlh7y

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_hn2dua6njlh7y::{op_name}"
