import torch
from . import _moe_l6zrf5kc7nidj
ops = torch.ops._moe_l6zrf5kc7nidj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_l6zrf5kc7nidj::{op_name}"
