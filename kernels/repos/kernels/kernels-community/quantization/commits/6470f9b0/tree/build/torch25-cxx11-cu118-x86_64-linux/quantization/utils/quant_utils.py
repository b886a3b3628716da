"""quantization: utils.quant_utils helpers (synthetic stand-in for the real module)."""

def quant_utils_0(x):
    return x  # be


def quant_utils_1(x):
    return x  # 8d
