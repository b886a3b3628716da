import torch
from . import _moe_ixm7456reoqe6
ops = torch.ops._moe_ixm7456reoqe6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_ixm7456reoqe6::{op_name}"
