import torch
from . import _punica_sgmv_yvpnhhkusuh54
ops = torch.ops._punica_sgmv_yvpnhhkusuh54

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_yvpnhhkusuh54::{op_name}"
