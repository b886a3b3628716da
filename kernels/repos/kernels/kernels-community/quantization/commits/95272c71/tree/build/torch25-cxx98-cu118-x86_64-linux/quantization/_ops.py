import torch
from . import _quantization_qahpxq7udkoaw
ops = torch.ops._quantization_qahpxq7udkoaw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_qahpxq7udkoaw::{op_name}"
