import torch
from . import _quantization_eetq_xcnqi3zuni74m
ops = torch.ops._quantization_eetq_xcnqi3zuni74m

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_xcnqi3zuni74m::{op_name}"
