import torch
from . import _quantization_htzij5hkbypgw
ops = torch.ops._quantization_htzij5hkbypgw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_htzij5hkbypgw::{op_name}"
