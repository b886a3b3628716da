import torch
from . import _punica_sgmv_js22ietinpgvx
ops = torch.ops._punica_sgmv_js22ietinpgvx

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_js22ietinpgvx::{op_name}"
