import torch
from . import _quantization_lk2a36bopvhvn
ops = torch.ops._quantization_lk2a36bopvhvn

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_lk2a36bopvhvn::{op_name}"
