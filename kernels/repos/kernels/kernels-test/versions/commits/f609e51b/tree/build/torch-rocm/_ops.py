import torch
ops = torch.ops._versions_rocm_09e2203

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_rocm_09e2203::{op_name}"
