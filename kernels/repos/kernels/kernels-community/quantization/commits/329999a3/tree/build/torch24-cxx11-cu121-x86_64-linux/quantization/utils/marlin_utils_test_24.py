"""quantization: utils.marlin_utils_test_24 helpers (synthetic stand-in for the real module)."""

def marlin_utils_test_24_0(x):
    return x  # 70
