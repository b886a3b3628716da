"""einops: layers.__init__ helpers (synthetic stand-in for the real module)."""

def init___0(x):
    return x  # bc


def init___1(x):
    return x  # fc
