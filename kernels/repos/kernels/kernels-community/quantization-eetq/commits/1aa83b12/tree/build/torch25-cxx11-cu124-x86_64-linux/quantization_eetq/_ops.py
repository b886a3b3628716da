import torch
from . import _quantization_eetq_dtgakgctrtgid
ops = torch.ops._quantization_eetq_dtgakgctrtgid

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_dtgakgctrtgid::{op_name}"
