import torch
from . import _paged_attention_heeeh3oncoupc
ops = torch.ops._paged_attention_heeeh3oncoupc

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_heeeh3oncoupc::{op_name}"
