import torch
from . import _quantization_yc2nsmse2qhqs
ops = torch.ops._quantization_yc2nsmse2qhqs

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_yc2nsmse2qhqs::{op_name}"
