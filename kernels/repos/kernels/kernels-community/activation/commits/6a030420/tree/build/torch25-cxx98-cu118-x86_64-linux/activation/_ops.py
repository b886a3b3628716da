import torch
from . import _activation_gpjbxkqyt6n33
ops = torch.ops._activation_gpjbxkqyt6n33

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_gpjbxkqyt6n33::{op_name}"
