import torch
from . import _punica_sgmv_nzmg537a45roj
ops = torch.ops._punica_sgmv_nzmg537a45roj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_nzmg537a45roj::{op_name}"
