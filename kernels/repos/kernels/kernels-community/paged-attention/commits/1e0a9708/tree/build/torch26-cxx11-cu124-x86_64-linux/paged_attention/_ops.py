import torch
from . import _paged_attention_6hd4rzshk2jfo
ops = torch.ops._paged_attention_6hd4rzshk2jfo

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_6hd4rzshk2jfo::{op_name}"
