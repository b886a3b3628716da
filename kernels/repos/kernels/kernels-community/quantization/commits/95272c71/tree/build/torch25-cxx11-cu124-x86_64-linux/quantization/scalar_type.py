"""quantization: scalar_type helpers (synthetic stand-in for the real module)."""

def scalar_type_0(x):
    return x  # f1
