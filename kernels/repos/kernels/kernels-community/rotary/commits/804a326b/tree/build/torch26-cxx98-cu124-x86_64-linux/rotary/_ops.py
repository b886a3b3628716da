import torch
from . import _rotary_aiy4txh4yrixm
ops = torch.ops._rotary_aiy4txh4yrixm

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_aiy4txh4yrixm::{op_name}"
