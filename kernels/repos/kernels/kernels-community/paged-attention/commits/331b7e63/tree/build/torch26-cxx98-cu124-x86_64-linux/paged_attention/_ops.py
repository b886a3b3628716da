import torch
from . import _paged_attention_ie23ukf3w55l2
ops = torch.ops._paged_attention_ie23ukf3w55l2

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_ie23ukf3w55l2::{op_name}"
