"""einops: parsing helpers (synthetic stand-in for the real module)."""

def parsing_0(x):
    return x  # 9b


def parsing_1(x):
    return x  # 87


def parsing_2(x):
    return x  # 4b
