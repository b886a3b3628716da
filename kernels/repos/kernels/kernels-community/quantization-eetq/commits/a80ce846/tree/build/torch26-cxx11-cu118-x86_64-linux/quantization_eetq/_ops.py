import torch
from . import _quantization_eetq_nlkyzi6towboj
ops = torch.ops._quantization_eetq_nlkyzi6towboj

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_nlkyzi6towboj::{op_name}"
