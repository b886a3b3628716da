import torch
from . import _moe_ps75qhzqlcsd4
ops = torch.ops._moe_ps75qhzqlcsd4

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_ps75qhzqlcsd4::{op_name}"
