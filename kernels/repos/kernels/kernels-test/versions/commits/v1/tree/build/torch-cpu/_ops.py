import torch
ops = torch.ops._versions_cpu_b751435

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_cpu_b751435::{op_name}"
