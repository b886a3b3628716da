import torch
from . import _quantization_eetq_gjgzuhdfqg45m
ops = torch.ops._quantization_eetq_gjgzuhdfqg45m

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_gjgzuhdfqg45m::{op_name}"
