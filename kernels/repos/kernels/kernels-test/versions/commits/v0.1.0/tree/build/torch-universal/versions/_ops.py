import torch
ops = torch.ops._versions_3a9cfb8

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_3a9cfb8::{op_name}"
