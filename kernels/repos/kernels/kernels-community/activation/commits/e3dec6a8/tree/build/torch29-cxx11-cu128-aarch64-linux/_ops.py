import torch
from . import _activation_cuda_75ce8d5
ops = torch.ops._activation_cuda_75ce8d5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_cuda_75ce8d5::{op_name}"
