"""paged-attention: platforms helpers (synthetic stand-in for the real module)."""

def platforms_0(x):
    return x  # bb


def platforms_1(x):
    return x  # 2b
