import torch
from . import _moe_qi4iegbq5nerw
ops = torch.ops._moe_qi4iegbq5nerw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_qi4iegbq5nerw::{op_name}"
