"""quantization: utils.marlin_utils helpers (synthetic stand-in for the real module)."""

def marlin_utils_0(x):
    return x  # 7f


def marlin_utils_1(x):
    return x  # f7


def marlin_utils_2(x):
    return x  # a5
