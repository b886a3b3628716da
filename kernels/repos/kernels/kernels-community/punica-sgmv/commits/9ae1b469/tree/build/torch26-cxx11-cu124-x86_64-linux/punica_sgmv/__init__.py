"""Punica SGMV kernels for batched LoRA (used by text-generation-inference)."""

import torch

from ._ops import ops


def sgmv_shrink(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.sgmv_shrink(out, *args)
    return out


def sgmv_cutlass(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.sgmv_cutlass(out, *args)
    return out


def dispatch_bgmv(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.dispatch_bgmv(out, *args)
    return out


__all__ = ["sgmv_shrink", "sgmv_cutlass", "dispatch_bgmv"]
