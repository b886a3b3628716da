import torch
from . import _quantization_k6wfsd6kons2s
ops = torch.ops._quantization_k6wfsd6kons2s

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_k6wfsd6kons2s::{op_name}"
