"""Run the reference's `verify_variant` (kernels 0.17: `kernels.verify`) on variant directories
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

try:  # 0.19 moved the modules under kernels._internals
    from kernels._internals import verify
except ImportError:
    from kernels import verify


def main() -> None:
    if not hasattr(verify, "verify_variant"):
        sys.exit(
            "verify_signatures.py: this kernels release has no verify_variant (0.17 only; "
            "0.18 split it into digest.verify_digest and verify.verify_signature)"
        )
    root = TrustedRoot.from_file(sys.argv[1])

    def production(cls, *, offline: bool = False) -> Verifier:
        return cls(trusted_root=root)

    Verifier.production = classmethod(production)
    results = {}
    for arg in sys.argv[2:]:
        path = Path(arg)
        try:
            result = verify.verify_variant(path)
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
