import torch
from . import _quantization_y3kg4tem3h7fh
ops = torch.ops._quantization_y3kg4tem3h7fh

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_y3kg4tem3h7fh::{op_name}"
