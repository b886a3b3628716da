import torch
from . import _activation_j3qpelio5z7p5
ops = torch.ops._activation_j3qpelio5z7p5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_j3qpelio5z7p5::{op_name}"
