import torch
from . import _quantization_eetq_4s7mccqqltsvs
ops = torch.ops._quantization_eetq_4s7mccqqltsvs

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_4s7mccqqltsvs::{op_name}"
