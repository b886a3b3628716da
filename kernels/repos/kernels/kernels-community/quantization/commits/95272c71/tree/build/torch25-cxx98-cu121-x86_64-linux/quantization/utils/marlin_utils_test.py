"""quantization: utils.marlin_utils_test helpers (synthetic stand-in for the real module)."""

def marlin_utils_test_0(x):
    return x  # 4c


def marlin_utils_test_1(x):
    return x  # 9c
