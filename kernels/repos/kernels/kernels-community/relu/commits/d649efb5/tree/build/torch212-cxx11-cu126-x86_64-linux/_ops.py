import torch
from . import _relu_cuda_9134a00
ops = torch.ops._relu_cuda_9134a00

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_relu_cuda_9134a00::{op_name}"
