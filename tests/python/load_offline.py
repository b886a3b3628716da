"""Loads kernels offline with the reference runtime, every way it offers.

Usage: python load_offline.py LOCKFILE REPO_ID=VERSION...

For each repo prints one JSON object per loading call that the runtime has:
`get_kernel(repo, version=N)` (0.17+), `get_locked_kernel(repo, lockfile=…)`
(0.17+) and `load_kernel(repo, lockfile=…)`: {"repo", "call", "file"} with the
imported module's file, or {"repo", "call", "synthetic_so"} when the import
reached a compiled extension that cannot be loaded (the bundled mirror's `.so`
files are synthetic). Any other failure propagates (non-zero exit).
"""

import inspect
import json
import sys
from pathlib import Path

import kernels

lockfile = Path(sys.argv[1])
for arg in sys.argv[2:]:
    repo_id, version = arg.split("=")
    calls = [("load_kernel", lambda: kernels.load_kernel(repo_id, lockfile=lockfile))]
    if "version" in inspect.signature(kernels.get_kernel).parameters and "lockfile" in (
        inspect.signature(kernels.get_locked_kernel).parameters
    ):
        calls += [
            ("get_kernel", lambda: kernels.get_kernel(repo_id, version=int(version))),
            (
                "get_locked_kernel",
                lambda: kernels.get_locked_kernel(repo_id, lockfile=lockfile),
            ),
        ]
    for name, call in calls:
        try:
            module = call()
        except ImportError as err:
            if not (err.path or "").endswith(".so"):
                raise
            print(json.dumps({"repo": repo_id, "call": name, "synthetic_so": err.path}))
        else:
            print(json.dumps({"repo": repo_id, "call": name, "file": module.__file__}))
