import torch
from . import _moe_jmvk53sqxl2oh
ops = torch.ops._moe_jmvk53sqxl2oh

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_jmvk53sqxl2oh::{op_name}"
