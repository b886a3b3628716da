import torch
from . import _quantization_ydkmqrh62v5ym
ops = torch.ops._quantization_ydkmqrh62v5ym

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ydkmqrh62v5ym::{op_name}"
