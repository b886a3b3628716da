import torch
from . import _punica_sgmv_nlqx7rva2utzw
ops = torch.ops._punica_sgmv_nlqx7rva2utzw

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_nlqx7rva2utzw::{op_name}"
