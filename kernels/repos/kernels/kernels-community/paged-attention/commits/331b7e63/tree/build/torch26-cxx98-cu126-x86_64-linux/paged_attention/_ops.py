import torch
from . import _paged_attention_eqcm7567bsndt
ops = torch.ops._paged_attention_eqcm7567bsndt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_eqcm7567bsndt::{op_name}"
