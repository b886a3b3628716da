import torch
from . import _quantization_5lazq6qnkzeon
ops = torch.ops._quantization_5lazq6qnkzeon

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_5lazq6qnkzeon::{op_name}"
