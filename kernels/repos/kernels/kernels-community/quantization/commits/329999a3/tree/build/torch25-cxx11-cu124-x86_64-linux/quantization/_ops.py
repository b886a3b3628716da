import torch
from . import _quantization_jotyxqrlkrs6e
ops = torch.ops._quantization_jotyxqrlkrs6e

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_jotyxqrlkrs6e::{op_name}"
