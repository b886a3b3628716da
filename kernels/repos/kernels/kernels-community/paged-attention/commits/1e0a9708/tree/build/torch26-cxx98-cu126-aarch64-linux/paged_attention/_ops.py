import torch
from . import _paged_attention_432qx7gpvlhaw
ops = torch.ops._paged_attention_432qx7gpvlhaw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_432qx7gpvlhaw::{op_name}"
