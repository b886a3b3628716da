import torch
from . import _quantization_eetq_pgwp77bcjhilf
ops = torch.ops._quantization_eetq_pgwp77bcjhilf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_pgwp77bcjhilf::{op_name}"
