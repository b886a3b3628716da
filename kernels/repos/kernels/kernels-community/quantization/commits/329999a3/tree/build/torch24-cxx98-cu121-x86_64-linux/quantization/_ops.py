import torch
from . import _quantization_ni5tfi7up4a5a
ops = torch.ops._quantization_ni5tfi7up4a5a

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ni5tfi7up4a5a::{op_name}"
