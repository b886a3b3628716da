import torch
ops = torch.ops._versions_xpu_5d96ca3

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_xpu_5d96ca3::{op_name}"
