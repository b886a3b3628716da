import torch
from . import _quantization_eetq_ftmcwu4l6grv5
ops = torch.ops._quantization_eetq_ftmcwu4l6grv5

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_ftmcwu4l6grv5::{op_name}"
