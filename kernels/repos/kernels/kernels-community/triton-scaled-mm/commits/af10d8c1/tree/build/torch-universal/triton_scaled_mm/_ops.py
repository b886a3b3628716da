import torch
ops = torch.ops._triton_scaled_mm_75dc070

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_triton_scaled_mm_75dc070::{op_name}"
