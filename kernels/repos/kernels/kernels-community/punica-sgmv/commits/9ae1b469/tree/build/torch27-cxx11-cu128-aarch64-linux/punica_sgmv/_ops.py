import torch
from . import _punica_sgmv_7ddl7jjg2uksf
ops = torch.ops._punica_sgmv_7ddl7jjg2uksf

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_punica_sgmv_7ddl7jjg2uksf::{op_name}"
