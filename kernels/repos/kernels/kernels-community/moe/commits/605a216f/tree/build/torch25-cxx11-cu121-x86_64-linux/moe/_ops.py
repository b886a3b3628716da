import torch
from . import _moe_v3cg63xs6oxzp
ops = torch.ops._moe_v3cg63xs6oxzp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_v3cg63xs6oxzp::{op_name}"
