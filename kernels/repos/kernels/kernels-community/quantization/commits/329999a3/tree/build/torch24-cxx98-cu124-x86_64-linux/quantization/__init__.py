"""Marlin, CUTLASS and GPTQ quantization kernels (used by text-generation-inference)."""

import torch

from ._ops import ops


def gptq_marlin_gemm(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.gptq_marlin_gemm(out, *args)
    return out


def cutlass_scaled_mm(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.cutlass_scaled_mm(out, *args)
    return out


def awq_marlin_repack(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.awq_marlin_repack(out, *args)
    return out


__all__ = ["gptq_marlin_gemm", "cutlass_scaled_mm", "awq_marlin_repack"]
