import torch
from . import _rotary_7yjz2p7t7f2wr
ops = torch.ops._rotary_7yjz2p7t7f2wr

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_7yjz2p7t7f2wr::{op_name}"
