import torch
from . import _rotary_f6g2dkp4bp2gv
ops = torch.ops._rotary_f6g2dkp4bp2gv

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_f6g2dkp4bp2gv::{op_name}"
