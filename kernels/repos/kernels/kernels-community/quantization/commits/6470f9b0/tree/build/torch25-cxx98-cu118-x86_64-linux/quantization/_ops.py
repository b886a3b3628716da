import torch
from . import _quantization_fd23xlmzmxr3p
ops = torch.ops._quantization_fd23xlmzmxr3p

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_fd23xlmzmxr3p::{op_name}"
