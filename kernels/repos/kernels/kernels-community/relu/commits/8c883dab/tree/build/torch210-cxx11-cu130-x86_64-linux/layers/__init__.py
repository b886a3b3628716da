"""relu: layers.__init__ helpers (synthetic stand-in for the real module)."""

def init___0(x):
    return x  # 3b


def init___1(x):
    return x  # 7d


def init___2(x):
    return x  # 50
