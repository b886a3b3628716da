import torch
from . import _quantization_eetq_qqxglj2xdooxy
ops = torch.ops._quantization_eetq_qqxglj2xdooxy

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_qqxglj2xdooxy::{op_name}"
