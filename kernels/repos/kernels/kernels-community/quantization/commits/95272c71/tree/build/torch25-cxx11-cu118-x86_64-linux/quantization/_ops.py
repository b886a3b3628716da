import torch
from . import _quantization_2irtzynjucdrm
ops = torch.ops._quantization_2irtzynjucdrm

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_2irtzynjucdrm::{op_name}"
