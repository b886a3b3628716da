import torch
from . import _paged_attention_u63khgoaqwcoi
ops = torch.ops._paged_attention_u63khgoaqwcoi

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_u63khgoaqwcoi::{op_name}"
