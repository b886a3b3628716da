import torch
from . import _paged_attention_2fvg7hefsa7vg
ops = torch.ops._paged_attention_2fvg7hefsa7vg

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_2fvg7hefsa7vg::{op_name}"
