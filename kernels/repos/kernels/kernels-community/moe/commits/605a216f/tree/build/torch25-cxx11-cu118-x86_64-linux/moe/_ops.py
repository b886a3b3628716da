import torch
from . import _moe_buiqzrtlolny3
ops = torch.ops._moe_buiqzrtlolny3

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_buiqzrtlolny3::{op_name}"
