import torch
from . import _paged_attention_ugyo7itofjxd4
ops = torch.ops._paged_attention_ugyo7itofjxd4

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_ugyo7itofjxd4::{op_name}"
