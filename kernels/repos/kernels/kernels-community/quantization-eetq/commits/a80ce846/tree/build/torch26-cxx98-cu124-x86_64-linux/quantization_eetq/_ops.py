import torch
from . import _quantization_eetq_756kiv4vvlzsr
ops = torch.ops._quantization_eetq_756kiv4vvlzsr

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_756kiv4vvlzsr::{op_name}"
