import torch
from . import _activation_qvevj2rbb7mqa
ops = torch.ops._activation_qvevj2rbb7mqa

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_qvevj2rbb7mqa::{op_name}"
