import torch
from . import _moe_vwwg22dslroqr
ops = torch.ops._moe_vwwg22dslroqr

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_vwwg22dslroqr::{op_name}"
