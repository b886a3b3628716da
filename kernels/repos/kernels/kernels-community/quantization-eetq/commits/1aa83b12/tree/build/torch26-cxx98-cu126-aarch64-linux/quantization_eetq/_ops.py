import torch
from . import _quantization_eetq_ds247r6gg2kun
ops = torch.ops._quantization_eetq_ds247r6gg2kun

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_ds247r6gg2kun::{op_name}"
