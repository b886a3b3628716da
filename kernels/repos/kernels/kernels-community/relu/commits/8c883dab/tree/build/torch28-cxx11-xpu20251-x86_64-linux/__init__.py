"""A small ReLU kernel used by the kernels test suite, built for every backend."""

import torch

from ._ops import ops


def relu(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.relu(out, *args)
    return out


__all__ = ["relu"]
