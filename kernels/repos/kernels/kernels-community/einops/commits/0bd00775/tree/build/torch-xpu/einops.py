"""einops: einops helpers (synthetic stand-in for the real module)."""

def einops_0(x):
    return x  # 71


def einops_1(x):
    return x  # 32
