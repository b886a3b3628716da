import torch
from . import _quantization_zkmoohdhd6iqb
ops = torch.ops._quantization_zkmoohdhd6iqb

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_zkmoohdhd6iqb::{op_name}"
