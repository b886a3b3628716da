import torch
from . import _quantization_7fvkxfdjondcu
ops = torch.ops._quantization_7fvkxfdjondcu

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_7fvkxfdjondcu::{op_name}"
