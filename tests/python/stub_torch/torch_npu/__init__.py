"""Stub `torch_npu` (Ascend) for tests: only what kernels' CANN detection imports."""
