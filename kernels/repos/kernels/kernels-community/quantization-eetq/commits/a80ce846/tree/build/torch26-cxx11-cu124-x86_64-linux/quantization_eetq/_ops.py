import torch
from . import _quantization_eetq_i4ml3moiymclg
ops = torch.ops._quantization_eetq_i4ml3moiymclg

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_i4ml3moiymclg::{op_name}"
