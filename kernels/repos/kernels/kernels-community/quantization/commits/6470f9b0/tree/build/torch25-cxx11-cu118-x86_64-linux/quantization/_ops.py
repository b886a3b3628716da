import torch
from . import _quantization_4hetwkqarncx5
ops = torch.ops._quantization_4hetwkqarncx5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_4hetwkqarncx5::{op_name}"
