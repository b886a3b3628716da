import torch
from . import _quantization_eetq_2mbzvrftix77z
ops = torch.ops._quantization_eetq_2mbzvrftix77z

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_2mbzvrftix77z::{op_name}"
