import torch
from . import _quantization_ugwd5nzknqltf
ops = torch.ops._quantization_ugwd5nzknqltf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ugwd5nzknqltf::{op_name}"
