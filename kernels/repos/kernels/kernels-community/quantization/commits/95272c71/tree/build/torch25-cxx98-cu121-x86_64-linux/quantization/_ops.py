import torch
from . import _quantization_cjtuygqib24mo
ops = torch.ops._quantization_cjtuygqib24mo

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_cjtuygqib24mo::{op_name}"
