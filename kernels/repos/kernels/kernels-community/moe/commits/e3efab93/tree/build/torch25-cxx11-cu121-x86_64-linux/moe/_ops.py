import torch
from . import _moe_tkppkhrwfdiuk
ops = torch.ops._moe_tkppkhrwfdiuk

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_tkppkhrwfdiuk::{op_name}"
