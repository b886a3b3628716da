import torch
from . import _paged_attention_exp2iwarrivxp
ops = torch.ops._paged_attention_exp2iwarrivxp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_exp2iwarrivxp::{op_name}"
