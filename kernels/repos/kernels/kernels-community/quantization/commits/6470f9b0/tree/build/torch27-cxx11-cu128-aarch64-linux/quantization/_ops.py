import torch
from . import _quantization_xai6jnqk3yvmu
ops = torch.ops._quantization_xai6jnqk3yvmu

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_xai6jnqk3yvmu::{op_name}"
