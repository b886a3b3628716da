import torch
from . import _quantization_eetq_plf63wsyksjlj
ops = torch.ops._quantization_eetq_plf63wsyksjlj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_plf63wsyksjlj::{op_name}"
