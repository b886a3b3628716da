import torch
from . import _quantization_cf2wponrik3xk
ops = torch.ops._quantization_cf2wponrik3xk

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_cf2wponrik3xk::{op_name}"
