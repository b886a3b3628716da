import torch
from . import _quantization_eetq_5nq7dinzfqsnm
ops = torch.ops._quantization_eetq_5nq7dinzfqsnm

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_5nq7dinzfqsnm::{op_name}"
