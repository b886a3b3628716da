import torch
ops = torch.ops._einops_cuda_b24bde1

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_einops_cuda_b24bde1::{op_name}"
