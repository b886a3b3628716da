import torch
from . import _quantization_eetq_ildhr4bj66vxw
ops = torch.ops._quantization_eetq_ildhr4bj66vxw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_ildhr4bj66vxw::{op_name}"
