import torch
from . import _paged_attention_eqwnmu4fqmpba
ops = torch.ops._paged_attention_eqwnmu4fqmpba

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_eqwnmu4fqmpba::{op_name}"
