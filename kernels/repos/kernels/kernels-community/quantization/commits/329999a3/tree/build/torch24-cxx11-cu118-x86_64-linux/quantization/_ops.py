import torch
from . import _quantization_nikdbevszxcfa
ops = torch.ops._quantization_nikdbevszxcfa

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_nikdbevszxcfa::{op_name}"
