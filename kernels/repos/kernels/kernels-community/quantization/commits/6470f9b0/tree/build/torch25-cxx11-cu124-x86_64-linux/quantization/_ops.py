import torch
from . import _quantization_2svaivklflq5l
ops = torch.ops._quantization_2svaivklflq5l

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_2svaivklflq5l::{op_name}"
