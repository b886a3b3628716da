import torch
from . import _quantization_eetq_oxeauyxoyjdz4
ops = torch.ops._quantization_eetq_oxeauyxoyjdz4

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_oxeauyxoyjdz4::{op_name}"
