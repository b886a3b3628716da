import torch
from . import _moe_s6yuvxktl5esx
ops = torch.ops._moe_s6yuvxktl5esx

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_s6yuvxktl5esx::{op_name}"
