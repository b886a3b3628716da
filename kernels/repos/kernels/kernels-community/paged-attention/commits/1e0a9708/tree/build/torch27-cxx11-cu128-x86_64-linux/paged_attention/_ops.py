import torch
from . import _paged_attention_xgqwmqfqjnfev
ops = torch.ops._paged_attention_xgqwmqfqjnfev

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_xgqwmqfqjnfev::{op_name}"
