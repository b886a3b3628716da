import torch
from . import _quantization_yfhlktvgvp2ug
ops = torch.ops._quantization_yfhlktvgvp2ug

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_yfhlktvgvp2ug::{op_name}"
