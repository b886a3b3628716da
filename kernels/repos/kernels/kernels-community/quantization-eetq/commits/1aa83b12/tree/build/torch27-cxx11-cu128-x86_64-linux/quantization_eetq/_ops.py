import torch
from . import _quantization_eetq_q4s65ohqke3rc
ops = torch.ops._quantization_eetq_q4s65ohqke3rc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_q4s65ohqke3rc::{op_name}"
