import torch
from . import _paged_attention_nuo7f6olecl7w
ops = torch.ops._paged_attention_nuo7f6olecl7w

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_nuo7f6olecl7w::{op_name}"
