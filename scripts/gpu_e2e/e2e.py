"""Python half of scripts/gpu-e2e: probe torch, build and publish the kernel, load and assert.

  probe                          shell assignments: the variant names for this torch, its GPU
  publish MIRROR REPO [--dry] [--arch-decoy] [--new-grammar]
                                 build the scale_add variant (nvcc through torch's cpp_extension;
                                 with --dry a pure-Python stand-in) and write it, with decoys and
                                 benchmarks/benchmark_scale_add.py, as commit c1 (branches main, v1)
                                 of REPO in the mirror directory MIRROR; with --new-grammar the
                                 kernel is named in the 0.19 grammar (new_variant) and the legacy
                                 name is a decoy beside new-grammar decoys 0.19 must refuse
  bench-check REPORT             assert a `kernels benchmark --format json` report: every workload
                                 timed with cuda_event and matching its verify_*
  load REPO LOCKFILE [--dry] [--new-grammar]
                                 reference runtime, offline: load_kernel and get_kernel, then assert
  wheel SITE [--dry]             import the kernel from a `pip install --target SITE` of its wheel
"""

import base64
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

CSRC = Path(__file__).resolve().parent / "csrc"
ALPHA = 2.5


def torch_facts():
    import torch

    tmaj, tmin = (int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    cuda = torch.version.cuda or ""
    if not cuda or not torch.cuda.is_available():
        sys.exit(f"gpu-e2e: torch {torch.__version__} sees no CUDA GPU (torch.version.cuda={cuda!r})")
    cmaj, cmin = torch.cuda.get_device_capability()
    cu = "cu" + cuda.replace(".", "")[:3]
    abi = "cxx11" if torch.compiled_with_cxx11_abi() else "cxx98"
    # The 0.19 grammar: dotted versions, the minimum CPython and its ABI. Tagless, so that 0.19
    # ranks it above the cxx-tagged legacy name of the same build.
    py = sys.version_info.minor
    new = f"torch-{tmaj}.{tmin}-cuda-{cuda_major_minor(cuda)}-cpython-3.{py}-abi3-x86_64-linux"
    # Decoys 0.19 refuses: a higher minimum Python (it would rank first), the free-threaded ABI
    # (refused on a GIL Python before 3.15), another torch.
    new_decoys = [new.replace(f"cpython-3.{py}-", f"cpython-3.{py + 1}-"),
                  f"torch-{tmaj}.{tmin + 1}-cuda-{cuda_major_minor(cuda)}-cpython-3.{py}-abi3-x86_64-linux"]
    if py < 15:
        new_decoys.append(new.replace(f"cpython-3.{py}-abi3-", "cpython-3.15-abi3t-"))
    return {
        "variant": f"torch{tmaj}{tmin}-{abi}-{cu}-x86_64-linux",
        # Decoys: another torch (never fits), and a tagless name that ranks above the cxx-tagged
        # one in 0.15+ but declares an arch this GPU does not have.
        "other_variant": f"torch{tmaj}{tmin + 1}-{abi}-{cu}-x86_64-linux",
        "arch_decoy_variant": f"torch{tmaj}{tmin}-{cu}-x86_64-linux",
        "new_variant": new,
        "new_decoys": " ".join(new_decoys),
        "capability": f"{cmaj}.{cmin}",
        "decoy_arch": "8.0" if cmaj != 8 else "9.0",
        "wheel_label": f"torch{tmaj}{tmin}{cu}{abi}",
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
    }


def cuda_major_minor(cuda: str) -> str:
    """`12.8` from torch.version.cuda (`12.8`, or `12.8.1`)."""
    return ".".join(cuda.split(".")[:2])


def digest(variant_dir: Path) -> dict:
    """sha256 of every file but metadata.json(.sigstore), __pycache__ and *.pyc, base64 padded."""
    files = {}
    for path in sorted(variant_dir.rglob("*")):
        rel = path.relative_to(variant_dir).as_posix()
        skip = rel in ("metadata.json", "metadata.json.sigstore") or "__pycache__" in path.parts
        if path.is_file() and not skip and path.suffix != ".pyc":
            files[rel] = base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode()
    return {"algorithm": "sha256", "files": files}


def write_metadata(variant_dir: Path, name: str, ident: str, archs: list) -> None:
    meta = {"name": name, "id": ident, "version": 1, "license": "Apache-2.0", "python-depends": [],
            "backend": {"type": "cuda", "archs": archs}, "digest": digest(variant_dir)}
    (variant_dir / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")


def ops_py(ident: str) -> str:
    return (f"import torch\n\nfrom . import {ident}\n\nops = torch.ops.{ident}\n\n\n"
            f"def add_op_namespace_prefix(op_name: str) -> str:\n"
            f'    """`op_name` qualified with this build\'s op namespace."""\n'
            f'    return f"{ident}::{{op_name}}"\n')


INIT_GPU = '''"""scale_add: x * alpha + y (float32, CUDA), the kernel of scripts/gpu-e2e."""
import torch

from ._ops import add_op_namespace_prefix, ops


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.scale_add(out, x, y, alpha)
    return out
'''
INIT_DRY = '''"""Stand-in for the compiled scale_add (gpu-e2e --dry): x * alpha + y on lists
(or on the stub torch's tensors, for the benchmark)."""
from ._ops import add_op_namespace_prefix, ops


def scale_add(x, y, alpha=1.0):
    if isinstance(x, list):
        return [a * alpha + b for a, b in zip(x, y)]
    return x * alpha + y
'''

# The benchmark shipped beside build/ (kernels.benchmark protocol); LARGE and SMALL are the
# element counts of its two workloads.
BENCHMARK = '''"""Benchmarks of scale_add (run with `kernels benchmark`)."""
import torch

from kernels.benchmark import Benchmark


class ScaleAddBenchmark(Benchmark):
    seed = 0

    def setup(self):
        self.x = torch.randn(LARGE, device=self.device, dtype=torch.float32)
        self.y = torch.randn(LARGE, device=self.device, dtype=torch.float32)
        self.out = torch.empty_like(self.x)

    def setup_small(self):
        self.x = torch.randn(SMALL, device=self.device, dtype=torch.float32)
        self.y = torch.randn(SMALL, device=self.device, dtype=torch.float32)
        self.out = torch.empty_like(self.x)

    def benchmark_large(self):
        self.out = self.kernel.scale_add(self.x, self.y, ALPHA)

    def verify_large(self):
        return self.x * ALPHA + self.y

    def benchmark_small(self):
        self.out = self.kernel.scale_add(self.x, self.y, ALPHA)

    def verify_small(self):
        return self.x * ALPHA + self.y
'''


def compile_extension(ident: str, capability: str, dest: Path) -> None:
    """Build `ident`.abi3.so from csrc/ with setuptools + torch's BuildExtension (nvcc)."""
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    os.environ["TORCH_CUDA_ARCH_LIST"] = capability
    with tempfile.TemporaryDirectory() as tmp:
        ext = CUDAExtension(ident, [str(CSRC / "torch_binding.cpp"), str(CSRC / "scale_add.cu")],
                            py_limited_api=True, extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]})
        setup(name=ident, ext_modules=[ext], cmdclass={"build_ext": BuildExtension},
              script_args=["-q", "build_ext", "--build-lib", tmp, "--build-temp", f"{tmp}/tmp"])
        built = [p for p in Path(tmp).glob(f"{ident}*.so")]
        if len(built) != 1:
            sys.exit(f"gpu-e2e: expected one {ident}*.so from the build, found {built}")
        shutil.copy(built[0], dest / f"{ident}.abi3.so")


def publish(mirror: Path, repo: str, dry: bool, arch_decoy: bool, new_grammar: bool,
            local: bool = False) -> None:
    facts = torch_facts()
    owner, name = repo.split("/")
    source_hash = hashlib.sha256(b"dry" if dry else b"gpu")
    if local:
        # A developer's rebuild: its op namespace differs from the published build's, as a
        # changed source gives kernel-builder (two builds with one namespace cannot share a
        # process: torch aborts on the second TORCH_LIBRARY registration).
        source_hash.update(b"local")
    for src in sorted(CSRC.iterdir()):
        source_hash.update(src.read_bytes())
    ident = f"_{name.replace('-', '_')}_cuda_{source_hash.hexdigest()[:7]}"
    repo_dir = mirror / "repos" / "kernels" / owner / name
    tree = repo_dir / "commits" / "c1" / "tree"
    good = tree / "build" / facts["new_variant" if new_grammar else "variant"]
    good.mkdir(parents=True)
    if dry:
        (good / f"{ident}.py").write_text("# stands in for the compiled extension\n")
    else:
        compile_extension(ident, facts["capability"], good)
    (good / "_ops.py").write_text(ops_py(ident))
    (good / "__init__.py").write_text(INIT_DRY if dry else INIT_GPU)
    if new_grammar:
        # Weight for the receipts step: the runtime hashes every file of a variant at its first
        # load unless a digest receipt vouches for them (1 MiB in a dry run, 1 GiB on the GPU).
        with open(good / "weights.bin", "wb") as pad:
            for _ in range(1 if dry else 1024):
                pad.write(os.urandom(1 << 20))
    write_metadata(good, name, ident, [facts["capability"]])
    decoys = [(facts["other_variant"], [facts["capability"]])]
    if new_grammar:
        # The legacy name of the same build: what a runtime before 0.19 (or a tool that reads
        # only the legacy grammar) picks; 0.19 ranks the tagless new name above it.
        decoys = [(facts["variant"], [facts["capability"]])]
        decoys += [(v, [facts["capability"]]) for v in facts["new_decoys"].split()]
    elif arch_decoy:
        decoys.append((facts["arch_decoy_variant"], [facts["decoy_arch"]]))
    for variant, archs in decoys:
        d = tree / "build" / variant
        d.mkdir(parents=True)
        (d / "__init__.py").write_text(f'raise ImportError("gpu-e2e: decoy variant {variant} was loaded")\n')
        write_metadata(d, name, f"_{name.replace('-', '_')}_cuda_decoy", archs)
    (tree / "README.md").write_text(f"# {repo}\n\nscale_add, built by scripts/gpu-e2e.\n")
    sizes = (256, 32) if dry else (1 << 24, 1 << 12)
    script = BENCHMARK.replace("LARGE", str(sizes[0])).replace("SMALL", str(sizes[1]))
    (tree / "benchmarks").mkdir()
    (tree / "benchmarks" / "benchmark_scale_add.py").write_text(script.replace("ALPHA", repr(ALPHA)))
    (repo_dir / "commits" / "c1" / "commit.toml").write_text(
        'title = "scale_add built by gpu-e2e"\ndate = "2026-01-01T00:00:00Z"\n')
    (repo_dir / "repo.toml").write_text('commits = ["c1"]\nlfs = ["*.so"]\n\n[branches]\nmain = "c1"\nv1 = "c1"\n')
    (mirror / "orgs").mkdir(parents=True, exist_ok=True)
    (mirror / "orgs" / f"{owner}.toml").write_text(f'fullname = "{owner}"\ntrusted_kernel_publisher = true\n')
    for path in sorted(tree.rglob("*")):
        if path.is_file():
            print(f"    {path.relative_to(tree)} ({path.stat().st_size} bytes)")


def check_result(module, dry: bool) -> str:
    if dry:
        got = module.scale_add([1.0, 2.0, -3.0], [0.5, 0.5, 0.5], ALPHA)
        if got != [3.0, 5.5, -7.0]:
            sys.exit(f"gpu-e2e: FAIL: scale_add returned {got}")
        return "scale_add([1, 2, -3], [0.5]*3, 2.5) == [3.0, 5.5, -7.0]"
    import torch

    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    got = module.scale_add(x, y, ALPHA)
    torch.cuda.synchronize()
    torch.testing.assert_close(got, x * ALPHA + y)
    op = getattr(module.ops, "scale_add")
    return f"scale_add on {x.numel()} float32 cuda values == x * {ALPHA} + y (torch.testing.assert_close); op {op}"


def load(repo: str, lockfile: Path, dry: bool, new_grammar: bool) -> None:
    import kernels

    expected = torch_facts()["new_variant" if new_grammar else "variant"]
    print(f"    reference runtime: kernels {kernels.__version__} from {Path(kernels.__file__).parent}")
    for how, call in [(f"load_kernel({repo!r}, lockfile=...)", lambda: kernels.load_kernel(repo, lockfile=lockfile)),
                      (f"get_kernel({repo!r}, version=1)", lambda: kernels.get_kernel(repo, version=1))]:
        module = call()
        variant = Path(module.__file__).parent
        print(f"    {how}: {variant}")
        if variant.name != expected:
            sys.exit(f"gpu-e2e: FAIL: {how} loaded variant {variant.name}, expected {expected}")
        print(f"      ok: {check_result(module, dry)}")


def time_load(repo: str, lockfile: Path) -> None:
    """Seconds from import to a loaded module, for load_kernel(repo, lockfile=...) in this process."""
    start = time.perf_counter()
    import kernels

    kernels.load_kernel(repo, lockfile=lockfile)
    print(f"    load_kernel({repo!r}, lockfile=...) with kernels {kernels.__version__}: "
          f"{time.perf_counter() - start:.3f} s")


def wheel(site: Path, dry: bool) -> None:
    sys.path.insert(0, str(site))
    import scale_add

    print(f"    import scale_add: {scale_add.__file__}")
    print(f"      ok: {check_result(scale_add, dry)}")


def bench_check(report: Path) -> None:
    doc = json.loads(report.read_text())
    machine = doc["machine"]
    print(f"    machine: {machine['gpu']} (capability {machine['capability']}, driver "
          f"{machine['driver']}), torch {machine['torch']}, CUDA {machine['cuda']}; timing {doc['timing']}")
    if doc["timing"] != "cuda_event":
        sys.exit(f"gpu-e2e: FAIL: timing {doc['timing']}, expected cuda_event")
    workloads = [w for k in doc["kernels"] for w in k["workloads"]]
    if len(workloads) != 2:
        sys.exit(f"gpu-e2e: FAIL: expected 2 workloads, found {len(workloads)}: {workloads}")
    for w in workloads:
        name = f"{w['class']}.{w['method']}"
        if w["status"] != "timed" or w["match"] != [True]:
            sys.exit(f"gpu-e2e: FAIL: {name}: status {w['status']}, match {w['match']}, error {w['error']}")
        peak = w.get("peak_bytes") or {}
        print(f"      ok: {name} {w['shape']} {w['dtype']}: {w['ours']['mean_ms']:.4f} ms, reference "
              f"{w['reference']['mean_ms']:.4f} ms, speed-up {w['speed_up']['ratio']:.2f}x, match; "
              f"peak memory ours {peak.get('ours')} B, reference {peak.get('reference')} B")


def main(argv: list) -> None:
    dry = "--dry" in argv
    args = [a for a in argv if not a.startswith("--")]
    if args[0] == "probe":
        for key, value in torch_facts().items():
            print(f"{key}={shlex.quote(value)}")
    elif args[0] == "publish":
        publish(Path(args[1]), args[2], dry, "--arch-decoy" in argv, "--new-grammar" in argv,
                "--local" in argv)
    elif args[0] == "load":
        load(args[1], Path(args[2]), dry, "--new-grammar" in argv)
    elif args[0] == "time-load":
        time_load(args[1], Path(args[2]))
    elif args[0] == "bench-check":
        bench_check(Path(args[1]))
    elif args[0] == "wheel":
        wheel(Path(args[1]), dry)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
