import torch
from . import _quantization_srrzik3uw7tac
ops = torch.ops._quantization_srrzik3uw7tac

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_srrzik3uw7tac::{op_name}"
