import torch
ops = torch.ops._cycle_b_cuda_d4a1114

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_cycle_b_cuda_d4a1114::{op_name}"
