"""Activation kernels (SiLU/GELU and-mul, fast GELU) from vLLM."""

import torch

from ._ops import ops


def silu_and_mul(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.silu_and_mul(out, *args)
    return out


def gelu_and_mul(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.gelu_and_mul(out, *args)
    return out


def gelu_fast(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.gelu_fast(out, *args)
    return out


__all__ = ["silu_and_mul", "gelu_and_mul", "gelu_fast"]
