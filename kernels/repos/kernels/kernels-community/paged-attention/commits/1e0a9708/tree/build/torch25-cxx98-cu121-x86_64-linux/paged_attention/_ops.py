import torch
from . import _paged_attention_m4vn3ayvhc3uj
ops = torch.ops._paged_attention_m4vn3ayvhc3uj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_m4vn3ayvhc3uj::{op_name}"
