"""quantization: compressed_tensors helpers (synthetic stand-in for the real module)."""

def compressed_tensors_0(x):
    return x  # c2


def compressed_tensors_1(x):
    return x  # 06


def compressed_tensors_2(x):
    return x  # 86
