import torch
from . import _quantization_55y4ljco3vzcf
ops = torch.ops._quantization_55y4ljco3vzcf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_55y4ljco3vzcf::{op_name}"
