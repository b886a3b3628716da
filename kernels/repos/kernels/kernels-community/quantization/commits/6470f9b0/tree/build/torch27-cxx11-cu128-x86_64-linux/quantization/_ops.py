import torch
from . import _quantization_b3fxbgefpkm2q
ops = torch.ops._quantization_b3fxbgefpkm2q

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_b3fxbgefpkm2q::{op_name}"
