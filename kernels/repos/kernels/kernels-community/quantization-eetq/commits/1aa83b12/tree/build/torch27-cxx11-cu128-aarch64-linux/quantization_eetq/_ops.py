import torch
from . import _quantization_eetq_bhkfd3xbwfoqs
ops = torch.ops._quantization_eetq_bhkfd3xbwfoqs

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_bhkfd3xbwfoqs::{op_name}"
