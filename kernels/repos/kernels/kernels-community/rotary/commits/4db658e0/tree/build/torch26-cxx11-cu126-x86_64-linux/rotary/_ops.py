import torch
from . import _rotary_6kv4mcqi75dkt
ops = torch.ops._rotary_6kv4mcqi75dkt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_6kv4mcqi75dkt::{op_name}"
