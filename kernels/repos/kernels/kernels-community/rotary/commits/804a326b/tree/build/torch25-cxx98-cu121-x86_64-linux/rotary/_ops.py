import torch
from . import _rotary_4wag6uaoghnop
ops = torch.ops._rotary_4wag6uaoghnop

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_4wag6uaoghnop::{op_name}"
