import torch
from . import _punica_sgmv_ycbwq4k2demg2
ops = torch.ops._punica_sgmv_ycbwq4k2demg2

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_ycbwq4k2demg2::{op_name}"
