import torch
ops = torch.ops._cycle_a_cpu_c6a818f

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_cycle_a_cpu_c6a818f::{op_name}"
