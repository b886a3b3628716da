"""Run the reference's (0.17+) `kernels verify-signature` command against a custom
Sigstore trusted root.

Usage: python verify_signature_cli.py TRUSTED_ROOT_JSON ARGS...

`Verifier.production()` (which refreshes the production root over the
network) is replaced by a Verifier built from TRUSTED_ROOT_JSON; everything
else is the reference's command line, run with ARGS (for example
`verify-signature acme/fixtures 1 --all-variants`), its output and exit code
unchanged.
"""

import sys

from sigstore.models import TrustedRoot
from sigstore.verify import Verifier


def main() -> None:
    root = TrustedRoot.from_file(sys.argv[1])

    def production(cls, *, offline: bool = False) -> Verifier:
        return cls(trusted_root=root)

    Verifier.production = classmethod(production)

    try:  # 0.19 moved the modules under kernels._internals
        from kernels._internals.cli import main as kernels_main
    except ImportError:
        from kernels.cli import main as kernels_main

    sys.argv = ["kernels", *sys.argv[2:]]
    kernels_main()


if __name__ == "__main__":
    main()
