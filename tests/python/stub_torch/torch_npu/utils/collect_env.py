"""`get_cann_version()` reports STUB_TORCH_CANN (default "8.0.RC1"), a string whose
characters 0 and 2 kernels 0.13+ read as the CANN major and minor."""

import os


def get_cann_version():
    return os.environ.get("STUB_TORCH_CANN", "8.0.RC1")
