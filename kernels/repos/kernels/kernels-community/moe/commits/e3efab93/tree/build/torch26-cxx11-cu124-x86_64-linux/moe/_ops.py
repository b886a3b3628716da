import torch
from . import _moe_oy55s6zxq2rtj
ops = torch.ops._moe_oy55s6zxq2rtj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_oy55s6zxq2rtj::{op_name}"
