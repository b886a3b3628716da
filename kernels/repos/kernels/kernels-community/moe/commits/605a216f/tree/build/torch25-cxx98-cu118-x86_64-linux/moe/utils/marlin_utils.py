"""moe: utils.marlin_utils helpers (synthetic stand-in for the real module)."""

def marlin_utils_0(x):
    return x  # 5d


def marlin_utils_1(x):
    return x  # 6a


def marlin_utils_2(x):
    return x  # 0c
