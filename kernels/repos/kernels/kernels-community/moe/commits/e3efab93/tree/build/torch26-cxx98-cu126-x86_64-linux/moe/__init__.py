"""Fused mixture-of-experts kernels from vLLM (used by text-generation-inference)."""

import torch

from ._ops import ops


def topk_softmax(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.topk_softmax(out, *args)
    return out


def moe_align_block_size(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.moe_align_block_size(out, *args)
    return out


def silu_and_mul(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.silu_and_mul(out, *args)
    return out


__all__ = ["topk_softmax", "moe_align_block_size", "silu_and_mul"]
