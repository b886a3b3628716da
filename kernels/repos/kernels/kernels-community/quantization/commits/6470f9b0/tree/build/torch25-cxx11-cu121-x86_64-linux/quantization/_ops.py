import torch
from . import _quantization_ri7hbtqodlqve
ops = torch.ops._quantization_ri7hbtqodlqve

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ri7hbtqodlqve::{op_name}"
