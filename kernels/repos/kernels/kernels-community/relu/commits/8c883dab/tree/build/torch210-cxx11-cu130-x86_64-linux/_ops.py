import torch
from . import _relu_cuda_05f5220
ops = torch.ops._relu_cuda_05f5220

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_relu_cuda_05f5220::{op_name}"
