import torch
from . import _quantization_eetq_g7lirjnsedl4e
ops = torch.ops._quantization_eetq_g7lirjnsedl4e

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_g7lirjnsedl4e::{op_name}"
