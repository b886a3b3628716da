import torch
from . import _quantization_recqcjgic4yjt
ops = torch.ops._quantization_recqcjgic4yjt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_recqcjgic4yjt::{op_name}"
