import torch
ops = torch.ops._versions_cuda_588cbb6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_cuda_588cbb6::{op_name}"
