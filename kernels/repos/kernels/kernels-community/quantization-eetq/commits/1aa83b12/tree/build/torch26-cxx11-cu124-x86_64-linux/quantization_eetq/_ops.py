import torch
from . import _quantization_eetq_ahzollqkdtfey
ops = torch.ops._quantization_eetq_ahzollqkdtfey

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_ahzollqkdtfey::{op_name}"
