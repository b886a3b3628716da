import torch
from . import _paged_attention_xnxm3qizduydk
ops = torch.ops._paged_attention_xnxm3qizduydk

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_xnxm3qizduydk::{op_name}"
