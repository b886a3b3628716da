import torch
from . import _moe_6mpck2ihxzk5k
ops = torch.ops._moe_6mpck2ihxzk5k

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_6mpck2ihxzk5k::{op_name}"
