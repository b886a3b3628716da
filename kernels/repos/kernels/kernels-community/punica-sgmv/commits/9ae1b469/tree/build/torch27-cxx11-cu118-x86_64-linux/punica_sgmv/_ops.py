import torch
from . import _punica_sgmv_wlfcfmdlk2oyf
ops = torch.ops._punica_sgmv_wlfcfmdlk2oyf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_wlfcfmdlk2oyf::{op_name}"
