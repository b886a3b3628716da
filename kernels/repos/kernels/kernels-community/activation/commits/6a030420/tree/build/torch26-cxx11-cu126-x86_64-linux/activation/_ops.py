import torch
from . import _activation_6be5tkz27euef
ops = torch.ops._activation_6be5tkz27euef

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_6be5tkz27euef::{op_name}"
