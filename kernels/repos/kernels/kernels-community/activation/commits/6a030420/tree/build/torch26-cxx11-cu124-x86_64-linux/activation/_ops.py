import torch
from . import _activation_ybhnai6vrquq6
ops = torch.ops._activation_ybhnai6vrquq6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_ybhnai6vrquq6::{op_name}"
