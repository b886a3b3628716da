import torch
from . import _quantization_eetq_ptgrfjhj2vmpi
ops = torch.ops._quantization_eetq_ptgrfjhj2vmpi

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_ptgrfjhj2vmpi::{op_name}"
