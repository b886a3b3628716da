import torch
from . import _paged_attention_pzc7l62q75f7k
ops = torch.ops._paged_attention_pzc7l62q75f7k

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_pzc7l62q75f7k::{op_name}"
