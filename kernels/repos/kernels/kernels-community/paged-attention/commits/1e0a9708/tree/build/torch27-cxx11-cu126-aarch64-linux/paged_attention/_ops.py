import torch
from . import _paged_attention_q2qga5qhvranq
ops = torch.ops._paged_attention_q2qga5qhvranq

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_q2qga5qhvranq::{op_name}"
