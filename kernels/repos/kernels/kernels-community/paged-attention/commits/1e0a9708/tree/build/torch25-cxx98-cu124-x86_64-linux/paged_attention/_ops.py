import torch
from . import _paged_attention_3ghz2rwia2xlh
ops = torch.ops._paged_attention_3ghz2rwia2xlh

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_3ghz2rwia2xlh::{op_name}"
