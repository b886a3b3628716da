import torch
from . import _quantization_2upd4ndb7oxlw
ops = torch.ops._quantization_2upd4ndb7oxlw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_2upd4ndb7oxlw::{op_name}"
