import torch
from . import _quantization_wjd74fv46ciif
ops = torch.ops._quantization_wjd74fv46ciif

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_wjd74fv46ciif::{op_name}"
