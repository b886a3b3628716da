import torch
from . import _quantization_ds5t2c4dvatzy
ops = torch.ops._quantization_ds5t2c4dvatzy

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ds5t2c4dvatzy::{op_name}"
