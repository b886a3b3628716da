import torch
ops = torch.ops._versions_0b0c5e3

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_0b0c5e3::{op_name}"
