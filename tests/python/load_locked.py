"""Loads locked kernels with the reference runtime, for the differential matrix.

Usage: python load_locked.py LOCKFILE REPO_ID...

Prints one JSON object per repo: {"repo", "file"} with the imported module's
file, or {"repo", "synthetic_so"} when the import reached a compiled extension
that cannot be loaded (the bundled mirror's `.so` files are synthetic), giving
that file's path. Any other failure propagates (non-zero exit).
"""

import json
import sys
from pathlib import Path

import kernels

lockfile = Path(sys.argv[1])
for repo_id in sys.argv[2:]:
    try:
        module = kernels.load_kernel(repo_id, lockfile=lockfile)
    except ImportError as err:
        if not (err.path or "").endswith(".so"):
            raise
        print(json.dumps({"repo": repo_id, "synthetic_so": err.path}))
    else:
        print(json.dumps({"repo": repo_id, "file": module.__file__}))
