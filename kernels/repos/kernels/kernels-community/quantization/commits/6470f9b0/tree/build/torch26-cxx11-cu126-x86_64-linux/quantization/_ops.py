import torch
from . import _quantization_3mlpjsa7nfxfc
ops = torch.ops._quantization_3mlpjsa7nfxfc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_3mlpjsa7nfxfc::{op_name}"
