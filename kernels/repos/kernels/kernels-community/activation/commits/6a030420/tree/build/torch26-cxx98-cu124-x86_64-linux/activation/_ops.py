import torch
from . import _activation_xws5j2lgwljdn
ops = torch.ops._activation_xws5j2lgwljdn

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_xws5j2lgwljdn::{op_name}"
