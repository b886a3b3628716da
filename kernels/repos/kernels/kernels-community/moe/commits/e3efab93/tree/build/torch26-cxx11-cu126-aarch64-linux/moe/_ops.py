import torch
from . import _moe_iiryha5hf6k4g
ops = torch.ops._moe_iiryha5hf6k4g

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_iiryha5hf6k4g::{op_name}"
