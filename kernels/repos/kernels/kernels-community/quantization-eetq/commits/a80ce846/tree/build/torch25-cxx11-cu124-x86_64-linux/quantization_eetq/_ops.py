import torch
from . import _quantization_eetq_bfmhj66v5uurt
ops = torch.ops._quantization_eetq_bfmhj66v5uurt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_bfmhj66v5uurt::{op_name}"
