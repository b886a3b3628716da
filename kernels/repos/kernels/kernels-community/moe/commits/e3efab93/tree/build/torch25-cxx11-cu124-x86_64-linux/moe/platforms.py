"""moe: platforms helpers (synthetic stand-in for the real module)."""

def platforms_0(x):
    return x  # a9
