import torch
from . import _moe_klsgxbbzgldjt
ops = torch.ops._moe_klsgxbbzgldjt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_klsgxbbzgldjt::{op_name}"
