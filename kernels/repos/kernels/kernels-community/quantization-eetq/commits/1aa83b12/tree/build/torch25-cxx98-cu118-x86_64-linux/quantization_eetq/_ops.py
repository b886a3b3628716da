import torch
from . import _quantization_eetq_6pcktjfsbjjhc
ops = torch.ops._quantization_eetq_6pcktjfsbjjhc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_6pcktjfsbjjhc::{op_name}"
