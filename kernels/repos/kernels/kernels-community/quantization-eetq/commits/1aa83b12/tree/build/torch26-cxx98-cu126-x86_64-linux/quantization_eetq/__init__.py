"""EETQ int8 weight-only GEMM kernels (used by text-generation-inference)."""

import torch

from ._ops import ops


def w8_a16_gemm(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.w8_a16_gemm(out, *args)
    return out


def preprocess_weights(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.preprocess_weights(out, *args)
    return out


def quant_weights(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.quant_weights(out, *args)
    return out


__all__ = ["w8_a16_gemm", "preprocess_weights", "quant_weights"]
