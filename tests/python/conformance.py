"""Reference side of the variant-selection conformance test (tests/it/conformance.rs).

Reads one JSON object from stdin: {"cases": [...]}; each case has
- "id": the case number,
- "env": the STUB_TORCH_* / STUB_PLATFORM_* variables of tests/python/stub_torch,
- "python": {"version": "3.12", "free_threaded": false}: the interpreter facts,
- "torch": false for an environment without torch (default true),
- "tvm_ffi": the tvm_ffi version ("0.1") or null, "mlx": whether MLX with Metal is present,
- "names": [{"name": ..., "grammar": "legacy" | "new" | "invalid"}]: the directories under
  `build/` of one kernel.

For every case it sets the stubs up in this one process (a fresh stub `torch` per case) and calls
the release's own `parse_variant` and `resolve_variants`, the functions `get_kernel` uses. Facts
that cannot be stubbed from outside are emulated where the reference reads them: the interpreter's
version and free-threading (`sys.version_info` and `sysconfig.get_config_var("Py_GIL_DISABLED")`
as seen by the release's variants module), whether torch, tvm_ffi and MLX are importable (the
`has_*` flags the release computed at import, and stub modules), and the absence of a CUDA
runtime library when torch is absent. The real interpreter is never free-threaded.

The release's input is the names of the grammars it parses (found by parsing one probe name of
each grammar: a legacy-only release reads a new-grammar name as a noarch name, or not at all) plus
the invalid names. Prints a header line {"release", "grammars"} and then one line per case:
{"id", "input": [names], "chosen": name or null, "ties": [names tied for first place, when more
than one]} or {"id", "input", "error": "..."} when the
reference raises.
"""

import collections
import importlib
import json
import os
import sys
import sysconfig
import types

import sitecustomize

try:
    from kernels._internals import backends as backends_mod
    from kernels._internals import variants as variants_mod
except ImportError:
    from kernels import backends as backends_mod
    from kernels import variants as variants_mod

import kernels

VersionInfo = collections.namedtuple("version_info", "major minor micro releaselevel serial")

PROBE_NEW = "torch-2.9-cpu-cpython-3.9-abi3-x86_64-linux"
PROBE_LEGACY = "torch29-cxx11-cpu-x86_64-linux"


def parses_as_arch(name):
    try:
        variant = variants_mod.parse_variant(name)
    except ValueError:
        return False
    return type(variant).__name__ == "ArchVariant" and variant.variant_str == name


def grammars():
    found = [g for g, probe in (("legacy", PROBE_LEGACY), ("new", PROBE_NEW)) if parses_as_arch(probe)]
    return found + ["invalid"]


def emulate_interpreter(python):
    major, minor = (int(p) for p in python["version"].split("."))
    free_threaded = bool(python.get("free_threaded"))
    variants_mod.sys = types.SimpleNamespace(version_info=VersionInfo(major, minor, 0, "final", 0))

    def get_config_var(name):
        if name == "Py_GIL_DISABLED":
            return 1 if free_threaded else 0
        return sysconfig.get_config_var(name)

    variants_mod.sysconfig = types.SimpleNamespace(get_config_var=get_config_var)


def emulate_modules(case):
    has_torch = case.get("torch", True)
    tvm = case.get("tvm_ffi")
    mlx = bool(case.get("mlx"))
    for module in (variants_mod, backends_mod):
        if hasattr(module, "has_torch"):
            module.has_torch = has_torch
        if hasattr(module, "has_tvm_ffi"):
            module.has_tvm_ffi = tvm is not None
        if hasattr(module, "has_mlx"):
            module.has_mlx = mlx
    backends_mod._get_cuda = lambda: None
    for name in ("torch", "tvm_ffi", "mlx", "mlx.core"):
        sys.modules.pop(name, None)
    if has_torch:
        importlib.import_module("torch")
    if tvm is not None:
        sys.modules["tvm_ffi"] = types.SimpleNamespace(__version__=tvm + ".0")
    if mlx:
        core = types.SimpleNamespace(metal=types.SimpleNamespace(is_available=lambda: True))
        sys.modules["mlx"] = types.SimpleNamespace(core=core)
        sys.modules["mlx.core"] = core


def best(parsed):
    """The name of the variant `resolve_variants` puts first, or None."""
    result = variants_mod.resolve_variants([v for _, v in parsed])
    accepted = result[0] if isinstance(result, tuple) else result
    if not accepted:
        return None, []
    return next(name for name, v in parsed if v is accepted[0]), accepted


def choose(names):
    """The reference's pick among `names` (in this order) and, when several
    variants tie for first place, all of them: the sort is stable, so a
    variant moved to the front of the input comes out first exactly when no
    other variant ranks before it."""
    parsed = []
    for name in names:
        try:
            parsed.append((name, variants_mod.parse_variant(name)))
        except ValueError:
            pass
    chosen, accepted = best(parsed)
    ties = []
    for name, variant in parsed:
        if name == chosen or not any(variant is a for a in accepted):
            continue
        front = [(name, variant)] + [p for p in parsed if p[0] != name]
        if best(front)[0] == name:
            ties.append(name)
    return chosen, sorted(ties + [chosen]) if ties else []


def main():
    cases = json.load(sys.stdin)["cases"]
    readable = grammars()
    print(json.dumps({"release": kernels.__version__, "grammars": readable}))
    for case in cases:
        for key in [k for k in os.environ if k.startswith(("STUB_TORCH_", "STUB_PLATFORM_"))]:
            del os.environ[key]
        os.environ.update(case["env"])
        sitecustomize.apply()
        emulate_interpreter(case["python"])
        emulate_modules(case)
        names = [n["name"] for n in case["names"] if n["grammar"] in readable]
        out = {"id": case["id"], "input": names}
        try:
            out["chosen"], out["ties"] = choose(names)
        except Exception as err:  # noqa: BLE001 - a raise is the reference's answer
            out["error"] = "%s: %s" % (type(err).__name__, err)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
