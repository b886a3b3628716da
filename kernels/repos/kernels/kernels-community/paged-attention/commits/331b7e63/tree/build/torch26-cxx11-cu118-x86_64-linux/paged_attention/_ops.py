import torch
from . import _paged_attention_5zpzzut5arvik
ops = torch.ops._paged_attention_5zpzzut5arvik

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_5zpzzut5arvik::{op_name}"
