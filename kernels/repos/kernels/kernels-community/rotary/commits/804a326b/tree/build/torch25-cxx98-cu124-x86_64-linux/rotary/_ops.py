import torch
from . import _rotary_zujwwoiw4wl2i
ops = torch.ops._rotary_zujwwoiw4wl2i

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_zujwwoiw4wl2i::{op_name}"
