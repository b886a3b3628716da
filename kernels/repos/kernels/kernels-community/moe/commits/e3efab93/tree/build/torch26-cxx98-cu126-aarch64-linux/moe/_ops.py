import torch
from . import _moe_bxquhvny54rjl
ops = torch.ops._moe_bxquhvny54rjl

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_bxquhvny54rjl::{op_name}"
