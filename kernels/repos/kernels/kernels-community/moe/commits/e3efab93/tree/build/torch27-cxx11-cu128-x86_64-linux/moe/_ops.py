import torch
from . import _moe_ijz4pvgcggt4f
ops = torch.ops._moe_ijz4pvgcggt4f

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_ijz4pvgcggt4f::{op_name}"
