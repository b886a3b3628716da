import torch
from . import _paged_attention_bnkhetirw65cf
ops = torch.ops._paged_attention_bnkhetirw65cf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_bnkhetirw65cf::{op_name}"
