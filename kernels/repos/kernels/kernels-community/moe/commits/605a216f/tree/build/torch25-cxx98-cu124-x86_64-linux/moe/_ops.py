import torch
from . import _moe_7ljgwj2od3mjb
ops = torch.ops._moe_7ljgwj2od3mjb

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_7ljgwj2od3mjb::{op_name}"
