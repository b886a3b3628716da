import torch
from . import _rotary_qqnp72ti5tz3w
ops = torch.ops._rotary_qqnp72ti5tz3w

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_qqnp72ti5tz3w::{op_name}"
