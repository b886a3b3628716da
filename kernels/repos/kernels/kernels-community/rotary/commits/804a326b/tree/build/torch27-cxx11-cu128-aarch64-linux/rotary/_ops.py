import torch
from . import _rotary_viuoeqlltukut
ops = torch.ops._rotary_viuoeqlltukut

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_viuoeqlltukut::{op_name}"
