"""quantization: utils.marlin_utils_test_qqq helpers (synthetic stand-in for the real module)."""

def marlin_utils_test_qqq_0(x):
    return x  # 19


def marlin_utils_test_qqq_1(x):
    return x  # 06


def marlin_utils_test_qqq_2(x):
    return x  # f1
