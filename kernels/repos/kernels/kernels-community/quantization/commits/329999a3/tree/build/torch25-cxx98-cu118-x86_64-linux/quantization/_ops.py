import torch
from . import _quantization_nxw74vvv2coka
ops = torch.ops._quantization_nxw74vvv2coka

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_quantization_nxw74vvv2coka::{op_name}"
