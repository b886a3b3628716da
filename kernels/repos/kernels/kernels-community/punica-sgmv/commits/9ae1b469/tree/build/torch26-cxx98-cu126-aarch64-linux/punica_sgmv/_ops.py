import torch
from . import _punica_sgmv_j4y4saxngqmkp
ops = torch.ops._punica_sgmv_j4y4saxngqmkp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_j4y4saxngqmkp::{op_name}"
