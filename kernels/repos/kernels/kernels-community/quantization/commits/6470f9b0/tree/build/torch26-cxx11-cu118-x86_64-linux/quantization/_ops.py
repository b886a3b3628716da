import torch
from . import _quantization_3ha34xsa2vue5
ops = torch.ops._quantization_3ha34xsa2vue5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_3ha34xsa2vue5::{op_name}"
