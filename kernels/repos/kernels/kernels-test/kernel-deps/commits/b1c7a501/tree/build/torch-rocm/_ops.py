import torch
ops = torch.ops._kernel_deps_rocm_ff0667f

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_kernel_deps_rocm_ff0667f::{op_name}"
