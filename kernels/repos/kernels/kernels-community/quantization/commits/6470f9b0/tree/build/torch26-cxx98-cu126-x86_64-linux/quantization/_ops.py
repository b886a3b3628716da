import torch
from . import _quantization_vjpbw7som6pt6
ops = torch.ops._quantization_vjpbw7som6pt6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_vjpbw7som6pt6::{op_name}"
