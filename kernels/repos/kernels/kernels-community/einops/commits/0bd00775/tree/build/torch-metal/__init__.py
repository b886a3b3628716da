"""einops packaged as a noarch kernel (dependency of kernels-test/kernel-deps)."""

import torch

from ._ops import ops


def rearrange(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.rearrange(out, *args)
    return out


def reduce(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.reduce(out, *args)
    return out


def repeat(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.repeat(out, *args)
    return out


__all__ = ["rearrange", "reduce", "repeat"]
