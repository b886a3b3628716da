import torch
from . import _quantization_eetq_lbxdckkgdlaxt
ops = torch.ops._quantization_eetq_lbxdckkgdlaxt

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_lbxdckkgdlaxt::{op_name}"
