import torch
from . import _paged_attention_rwuqbktwyxpwh
ops = torch.ops._paged_attention_rwuqbktwyxpwh

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_rwuqbktwyxpwh::{op_name}"
