import torch
from . import _paged_attention_cwq46nxfmjr6v
ops = torch.ops._paged_attention_cwq46nxfmjr6v

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_cwq46nxfmjr6v::{op_name}"
