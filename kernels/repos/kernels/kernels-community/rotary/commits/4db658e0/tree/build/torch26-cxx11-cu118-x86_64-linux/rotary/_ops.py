import torch
from . import _rotary_cqbwqiu5keosw
ops = torch.ops._rotary_cqbwqiu5keosw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_cqbwqiu5keosw::{op_name}"
