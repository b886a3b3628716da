import torch
from . import _quantization_uqov56fwnow5m
ops = torch.ops._quantization_uqov56fwnow5m

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_uqov56fwnow5m::{op_name}"
