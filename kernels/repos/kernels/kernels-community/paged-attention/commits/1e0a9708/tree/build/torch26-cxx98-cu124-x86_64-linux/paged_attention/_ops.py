import torch
from . import _paged_attention_6tixelroapzds
ops = torch.ops._paged_attention_6tixelroapzds

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_6tixelroapzds::{op_name}"
