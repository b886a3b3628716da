import torch
ops = torch.ops._identity_cpu_9fda9af

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_identity_cpu_9fda9af::{op_name}"
