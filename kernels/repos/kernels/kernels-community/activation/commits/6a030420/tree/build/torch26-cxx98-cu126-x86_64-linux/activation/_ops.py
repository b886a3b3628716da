import torch
from . import _activation_pjxis3i4hs3p5
ops = torch.ops._activation_pjxis3i4hs3p5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_pjxis3i4hs3p5::{op_name}"
