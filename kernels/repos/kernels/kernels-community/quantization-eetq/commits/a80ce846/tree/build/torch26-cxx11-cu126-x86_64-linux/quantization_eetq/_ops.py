import torch
from . import _quantization_eetq_6zyr263knrouz
ops = torch.ops._quantization_eetq_6zyr263knrouz

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_6zyr263knrouz::{op_name}"
