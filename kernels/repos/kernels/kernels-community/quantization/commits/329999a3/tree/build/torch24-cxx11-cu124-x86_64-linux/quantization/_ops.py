import torch
from . import _quantization_fsprdzcdnww3s
ops = torch.ops._quantization_fsprdzcdnww3s

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_fsprdzcdnww3s::{op_name}"
