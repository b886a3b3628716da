import torch
ops = torch.ops._model_only_cuda_314beee

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_model_only_cuda_314beee::{op_name}"
