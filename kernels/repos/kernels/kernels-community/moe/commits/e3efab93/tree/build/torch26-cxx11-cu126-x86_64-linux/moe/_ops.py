import torch
from . import _moe_w5f2gh4y3qq2z
ops = torch.ops._moe_w5f2gh4y3qq2z

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_w5f2gh4y3qq2z::{op_name}"
