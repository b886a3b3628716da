import torch
from . import _quantization_rf4ojh4swyxww
ops = torch.ops._quantization_rf4ojh4swyxww

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_rf4ojh4swyxww::{op_name}"
