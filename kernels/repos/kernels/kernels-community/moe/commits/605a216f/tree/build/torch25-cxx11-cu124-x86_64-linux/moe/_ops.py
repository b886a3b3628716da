import torch
from . import _moe_ugnvjwduxqm5c
ops = torch.ops._moe_ugnvjwduxqm5c

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_ugnvjwduxqm5c::{op_name}"
