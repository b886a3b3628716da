import torch
from . import _moe_ejkadpten36cw
ops = torch.ops._moe_ejkadpten36cw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_ejkadpten36cw::{op_name}"
