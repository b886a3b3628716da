import torch
from . import _moe_sjoxd2ojsuct2
ops = torch.ops._moe_sjoxd2ojsuct2

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_sjoxd2ojsuct2::{op_name}"
