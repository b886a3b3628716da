import torch
from . import _moe_xczgpxm2ksixu
ops = torch.ops._moe_xczgpxm2ksixu

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_xczgpxm2ksixu::{op_name}"
