import torch
ops = torch.ops._versions_8fde26b

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_8fde26b::{op_name}"
