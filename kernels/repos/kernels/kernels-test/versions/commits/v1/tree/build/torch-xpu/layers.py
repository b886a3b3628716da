"""versions: layers helpers (synthetic stand-in for the real module)."""

def layers_0(x):
    return x  # f4
