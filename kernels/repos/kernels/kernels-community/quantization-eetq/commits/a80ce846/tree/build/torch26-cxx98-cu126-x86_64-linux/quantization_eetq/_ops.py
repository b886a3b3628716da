import torch
from . import _quantization_eetq_qyclpeez7t5fs
ops = torch.ops._quantization_eetq_qyclpeez7t5fs

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_eetq_qyclpeez7t5fs::{op_name}"
