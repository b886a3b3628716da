import torch
from . import _activation_bqszswuvdbhip
ops = torch.ops._activation_bqszswuvdbhip

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_bqszswuvdbhip::{op_name}"
