import torch
ops = torch.ops._identity_cuda_9fda9af

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_identity_cuda_9fda9af::{op_name}"
