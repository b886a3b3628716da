"""Test kernel of an organization that is not a trusted kernel publisher."""

import torch

from ._ops import ops


def identity(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
    ops.identity(out, *args)
    return out


__all__ = ["identity"]
