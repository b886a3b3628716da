import torch
from . import _activation_u3qvr56huj6gg
ops = torch.ops._activation_u3qvr56huj6gg

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_u3qvr56huj6gg::{op_name}"
