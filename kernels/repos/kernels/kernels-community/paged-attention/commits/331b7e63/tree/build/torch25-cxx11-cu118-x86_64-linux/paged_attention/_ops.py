import torch
from . import _paged_attention_apihh75dbtuj6
ops = torch.ops._paged_attention_apihh75dbtuj6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_apihh75dbtuj6::{op_name}"
