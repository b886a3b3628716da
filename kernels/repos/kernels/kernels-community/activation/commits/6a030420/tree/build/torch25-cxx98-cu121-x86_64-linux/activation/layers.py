"""activation: layers helpers (synthetic stand-in for the real module)."""

def layers_0(x):
    return x  # 06


def layers_1(x):
    return x  # fe


def layers_2(x):
    return x  # 52
