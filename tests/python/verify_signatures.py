"""Run the reference's `kernels.verify.verify_variant` on variant directories
against a custom Sigstore trusted root, offline.

Usage: python verify_signatures.py TRUSTED_ROOT_JSON VARIANT_DIR...

`Verifier.production()` (which refreshes the production root over the
network) is replaced by a Verifier built from TRUSTED_ROOT_JSON; the default
policies stay. Prints one JSON object: variant directory name -> {"outcome":
<VerificationResult class name>, "detail": <reason or violations>}. An
exception escaping `verify_variant` is reported as outcome "Exception".
"""

import json
import sys
from pathlib import Path

from sigstore.models import TrustedRoot
from sigstore.verify import Verifier

import kernels.verify


def main() -> None:
    root = TrustedRoot.from_file(sys.argv[1])

    def production(cls, *, offline: bool = False) -> Verifier:
        return cls(trusted_root=root)

    Verifier.production = classmethod(production)
    results = {}
    for arg in sys.argv[2:]:
        path = Path(arg)
        try:
            result = kernels.verify.verify_variant(path)
            detail = getattr(result, "reason", None)
            if detail is None and hasattr(result, "violations"):
                detail = [str(v) for v in result.violations]
            results[path.name] = {"outcome": type(result).__name__, "detail": detail}
        except Exception as e:  # noqa: BLE001 - every escape is a finding
            results[path.name] = {"outcome": "Exception", "detail": f"{type(e).__name__}: {e}"}
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
