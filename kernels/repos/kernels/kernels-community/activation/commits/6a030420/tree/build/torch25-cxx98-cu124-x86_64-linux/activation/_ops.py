import torch
from . import _activation_f2untkwhudtvx
ops = torch.ops._activation_f2untkwhudtvx

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_f2untkwhudtvx::{op_name}"
