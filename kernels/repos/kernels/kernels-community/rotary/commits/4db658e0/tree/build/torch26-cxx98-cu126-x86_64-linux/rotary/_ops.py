import torch
from . import _rotary_gzkgqkshor3pq
ops = torch.ops._rotary_gzkgqkshor3pq

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_rotary_gzkgqkshor3pq::{op_name}"
