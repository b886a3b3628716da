"""Paged attention kernels from vLLM (used by text-generation-inference)."""

import torch

from ._ops import ops


def paged_attention_v1(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.paged_attention_v1(out, *args)
    return out


def paged_attention_v2(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.paged_attention_v2(out, *args)
    return out


def reshape_and_cache(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.reshape_and_cache(out, *args)
    return out


__all__ = ["paged_attention_v1", "paged_attention_v2", "reshape_and_cache"]
