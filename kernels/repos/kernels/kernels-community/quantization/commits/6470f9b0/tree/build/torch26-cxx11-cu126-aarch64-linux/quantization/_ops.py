import torch
from . import _quantization_tkv4ftlyvanlf
ops = torch.ops._quantization_tkv4ftlyvanlf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_tkv4ftlyvanlf::{op_name}"
