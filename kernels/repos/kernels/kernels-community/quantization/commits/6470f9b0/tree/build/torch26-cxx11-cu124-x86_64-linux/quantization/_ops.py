import torch
from . import _quantization_oa3fhmqlfkhef
ops = torch.ops._quantization_oa3fhmqlfkhef

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_oa3fhmqlfkhef::{op_name}"
