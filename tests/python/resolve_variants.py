"""Ranks build variants with the reference resolver (kernels 0.13+), for the matrix.

Reads a JSON list of cases from stdin; each case has "names" (variant names, in
the order to hand to the resolver), "backend" ([name, version or null]), "cpu",
"os", "torch" ("2.9"), "cxx11" (bool or null), "tvm" ("0.1" or null) and optionally "macos" ("15.5"),
passed to resolvers that take it (0.17+).
Prints one JSON list per case: the accepted variant names, best first.
"""

import inspect
import json
import sys

from packaging.version import Version

try:  # 0.19 moved the modules under kernels._internals
    from kernels._internals import backends
    from kernels._internals.variants import _resolve_variant_for_system, parse_variant
except ImportError:
    from kernels import backends
    from kernels.variants import _resolve_variant_for_system, parse_variant


def backend(name, version):
    if name == "cuda":
        return backends.CUDA(version=Version(version))
    if name == "rocm":
        return backends.ROCm(version=Version(version))
    if name == "xpu":
        return backends.XPU(version=Version(version))
    if name == "metal":
        return backends.Metal()
    return backends.CPU()


for case in json.load(sys.stdin):
    variants = []
    for name in case["names"]:
        try:
            variants.append(parse_variant(name))
        except ValueError:
            pass
    extra = {}
    if "macos_version" in inspect.signature(_resolve_variant_for_system).parameters:
        extra["macos_version"] = Version(case["macos"]) if case.get("macos") else None
    result = _resolve_variant_for_system(
        variants,
        backend(*case["backend"]),
        case["cpu"],
        case["os"],
        Version(case["torch"]),
        case["cxx11"],
        Version(case["tvm"]) if case["tvm"] else None,
        **extra,
    )
    accepted = result[0] if isinstance(result, tuple) else result
    print(json.dumps([v.variant_str for v in accepted]))
