import torch
from . import _quantization_mug5x4i3632n7
ops = torch.ops._quantization_mug5x4i3632n7

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_mug5x4i3632n7::{op_name}"
