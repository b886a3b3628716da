import torch
from . import _quantization_3atrjdvtz7xxc
ops = torch.ops._quantization_3atrjdvtz7xxc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_3atrjdvtz7xxc::{op_name}"
