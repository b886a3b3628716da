import torch
from . import _quantization_eetq_j76mh33w6xgvj
ops = torch.ops._quantization_eetq_j76mh33w6xgvj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_j76mh33w6xgvj::{op_name}"
