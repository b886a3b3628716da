import torch
from . import _punica_sgmv_2fjiibe45jmxk
ops = torch.ops._punica_sgmv_2fjiibe45jmxk

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_2fjiibe45jmxk::{op_name}"
