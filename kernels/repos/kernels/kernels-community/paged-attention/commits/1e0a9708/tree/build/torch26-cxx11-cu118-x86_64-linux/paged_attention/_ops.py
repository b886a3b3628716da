import torch
from . import _paged_attention_dsexgpkf35hzu
ops = torch.ops._paged_attention_dsexgpkf35hzu

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_dsexgpkf35hzu::{op_name}"
