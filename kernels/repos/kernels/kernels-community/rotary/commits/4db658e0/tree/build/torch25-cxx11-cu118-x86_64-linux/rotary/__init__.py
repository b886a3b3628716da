"""Rotary position embedding kernels (used by text-generation-inference)."""

import torch

from ._ops import ops


def apply_rotary(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.apply_rotary(out, *args)
    return out


__all__ = ["apply_rotary"]
