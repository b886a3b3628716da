import torch
from . import _quantization_ytivo2fkthnjq
ops = torch.ops._quantization_ytivo2fkthnjq

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_ytivo2fkthnjq::{op_name}"
