import torch
from . import _paged_attention_z7r7ev4zi6icm
ops = torch.ops._paged_attention_z7r7ev4zi6icm

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_z7r7ev4zi6icm::{op_name}"
