"""Stub `torch` for tests: reports the build described by environment variables.

STUB_TORCH_VERSION (default "2.7.0"), STUB_TORCH_CUDA, STUB_TORCH_HIP, STUB_TORCH_XPU,
STUB_TORCH_MPS ("1" = available), STUB_TORCH_CXX11 ("0" = pre-cxx11 ABI).
Only what variant detection reads is provided.
"""

import os
import types

__version__ = os.environ.get("STUB_TORCH_VERSION", "2.7.0")

version = types.SimpleNamespace(
    cuda=os.environ.get("STUB_TORCH_CUDA") or None,
    hip=os.environ.get("STUB_TORCH_HIP") or None,
    xpu=os.environ.get("STUB_TORCH_XPU") or None,
)


class _Mps:
    @staticmethod
    def is_available():
        return os.environ.get("STUB_TORCH_MPS") == "1"


backends = types.SimpleNamespace(mps=_Mps())


def compiled_with_cxx11_abi():
    return os.environ.get("STUB_TORCH_CXX11", "1") != "0"
