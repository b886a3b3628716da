import torch
from . import _activation_6b78bb5
ops = torch.ops._activation_6b78bb5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_6b78bb5::{op_name}"
