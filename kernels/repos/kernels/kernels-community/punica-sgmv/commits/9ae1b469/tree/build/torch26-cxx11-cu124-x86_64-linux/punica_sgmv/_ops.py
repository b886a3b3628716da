import torch
from . import _punica_sgmv_5gpbhu57d2gpa
ops = torch.ops._punica_sgmv_5gpbhu57d2gpa

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_5gpbhu57d2gpa::{op_name}"
