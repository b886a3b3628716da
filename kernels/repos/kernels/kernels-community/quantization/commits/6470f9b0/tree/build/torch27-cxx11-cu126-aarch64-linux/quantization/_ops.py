import torch
from . import _quantization_7jun4y5qxheps
ops = torch.ops._quantization_7jun4y5qxheps

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_7jun4y5qxheps::{op_name}"
