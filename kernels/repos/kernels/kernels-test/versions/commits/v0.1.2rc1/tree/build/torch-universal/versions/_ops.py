import torch
ops = torch.ops._versions_233956e

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_versions_233956e::{op_name}"
