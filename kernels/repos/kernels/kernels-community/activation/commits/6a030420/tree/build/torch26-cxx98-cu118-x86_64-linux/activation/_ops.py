import torch
from . import _activation_mdc6ocnxymqdc
ops = torch.ops._activation_mdc6ocnxymqdc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_mdc6ocnxymqdc::{op_name}"
