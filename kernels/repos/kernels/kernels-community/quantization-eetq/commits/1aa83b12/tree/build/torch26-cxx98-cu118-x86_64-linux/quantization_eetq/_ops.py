import torch
from . import _quantization_eetq_7syoynabirvi7
ops = torch.ops._quantization_eetq_7syoynabirvi7

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_7syoynabirvi7::{op_name}"
