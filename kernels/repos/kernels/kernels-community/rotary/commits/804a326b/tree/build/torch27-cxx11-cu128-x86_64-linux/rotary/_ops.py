import torch
from . import _rotary_ym7vtmvdw4a4v
ops = torch.ops._rotary_ym7vtmvdw4a4v

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_ym7vtmvdw4a4v::{op_name}"
