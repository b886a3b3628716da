import torch
from . import _punica_sgmv_oi3gi36omsgpy
ops = torch.ops._punica_sgmv_oi3gi36omsgpy

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_oi3gi36omsgpy::{op_name}"
