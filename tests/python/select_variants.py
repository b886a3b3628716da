"""What a reference `kernels` fetches for stubbed platforms, for the matrix.

Reads a JSON list of cases from stdin; each has "env" (the STUB_TORCH_* and
STUB_PLATFORM_* variables) and "names" (the directories under `build/`).
Prints one JSON object per case: {"fetch": [...]} with the variants the
reference downloads, the first being the one it loads: for <=0.12 every
existing name of `build_variants()` (its `allow_patterns`), for 0.13+ the
resolver's best; or {"error": "..."} when variant detection raises.
"""

import importlib
import json
import os
import sys

import sitecustomize
import torch

try:  # 0.19 moved the modules under kernels._internals
    from kernels._internals.variants import parse_variant, resolve_variants
except ImportError:
    try:
        from kernels.variants import parse_variant, resolve_variants
    except ImportError:
        parse_variant = None
        from kernels.utils import build_variants

for case in json.load(sys.stdin):
    for key in [k for k in os.environ if k.startswith(("STUB_TORCH_", "STUB_PLATFORM_"))]:
        del os.environ[key]
    os.environ.update(case["env"])
    sitecustomize.apply()
    importlib.reload(torch)
    names = case["names"]
    try:
        if parse_variant is None:
            fetch = [v for v in build_variants() if v in names]
        else:
            variants = []
            for name in names:
                try:
                    variants.append(parse_variant(name))
                except ValueError:
                    pass
            result = resolve_variants(variants)
            accepted = result[0] if isinstance(result, tuple) else result
            fetch = [accepted[0].variant_str] if accepted else []
    except Exception as err:
        print(json.dumps({"error": "%s: %s" % (type(err).__name__, err)}))
    else:
        print(json.dumps({"fetch": fetch}))
