import torch
from . import _moe_olm2ggtuz4mdl
ops = torch.ops._moe_olm2ggtuz4mdl

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_moe_olm2ggtuz4mdl::{op_name}"
