import torch
from . import _punica_sgmv_6qsrxq4a3lm6h
ops = torch.ops._punica_sgmv_6qsrxq4a3lm6h

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_6qsrxq4a3lm6h::{op_name}"
