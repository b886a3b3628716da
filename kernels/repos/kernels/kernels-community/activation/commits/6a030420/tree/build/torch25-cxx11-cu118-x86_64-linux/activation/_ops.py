import torch
from . import _activation_fxzy6lqp4hvr6
ops = torch.ops._activation_fxzy6lqp4hvr6

def add_op_namespace_prefix(op_name: str):
    """
    Prefix op by namespace.
    """
    return f"_activation_fxzy6lqp4hvr6::{op_name}"
