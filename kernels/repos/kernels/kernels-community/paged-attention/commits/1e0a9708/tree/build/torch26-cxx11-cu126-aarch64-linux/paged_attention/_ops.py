import torch
from . import _paged_attention_ebneaz526nknj
ops = torch.ops._paged_attention_ebneaz526nknj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_ebneaz526nknj::{op_name}"
