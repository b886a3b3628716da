import torch
from . import _paged_attention_q5lyepmfnl2uo
ops = torch.ops._paged_attention_q5lyepmfnl2uo

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_q5lyepmfnl2uo::{op_name}"
