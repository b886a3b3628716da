import torch
from . import _paged_attention_wmjyjldpvh7cd
ops = torch.ops._paged_attention_wmjyjldpvh7cd

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_paged_attention_wmjyjldpvh7cd::{op_name}"
