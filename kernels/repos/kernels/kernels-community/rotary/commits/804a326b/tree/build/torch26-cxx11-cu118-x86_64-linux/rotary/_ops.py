import torch
from . import _rotary_ig6nahcdzzrx2
ops = torch.ops._rotary_ig6nahcdzzrx2

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_ig6nahcdzzrx2::{op_name}"
