import torch
from . import _quantization_eetq_aaat7c4s5xzfp
ops = torch.ops._quantization_eetq_aaat7c4s5xzfp

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_aaat7c4s5xzfp::{op_name}"
