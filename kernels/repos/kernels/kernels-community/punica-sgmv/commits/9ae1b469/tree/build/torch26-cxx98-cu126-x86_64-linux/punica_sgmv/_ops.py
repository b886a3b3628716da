import torch
from . import _punica_sgmv_vmarf6djb24gg
ops = torch.ops._punica_sgmv_vmarf6djb24gg

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_vmarf6djb24gg::{op_name}"
