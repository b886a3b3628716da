#!/usr/bin/env python3
"""Wheel-building benchmark: `kernels to-wheel` against the reference `kernels`
0.11.3 `to-wheel`, on one generated large kernel.

Run it through `bench/wheel` (which builds the release binary and the Python
reference environment first); docs/performance.md explains the figures. This is
a measurement, not a test: it exits 0 when every run completed, whatever the
figures, and 1 when a run failed.

What happens:

1. A kernel `bench-kernels/flash-attn` with `--variants` Linux CUDA build
   variants (five-part names, the only kind the reference handles) is written
   as a `kernels serve` mirror in a temporary directory: per variant a package
   of Python files and one `.so` of about `--so-mib` MiB made of 64 KiB slices
   of this machine's own shared libraries (real machine code; synthetic bytes
   if there are none), so it deflates like real kernel libraries.
2. `kernels serve` serves it; each tool builds every wheel once online with an
   empty cache (the "cold" figure: download plus build, one run each).
3. Timed rounds: each tool builds every wheel again with `HF_HUB_OFFLINE=1`
   from its now-warm cache into an empty directory, so only wheel building is
   timed. The order of the tools rotates by one each round. Per tool the
   median, min and max are printed, and paired ratios: per round, ours over
   the reference run next to it, median [min-max] over the rounds.

Tools: ours at its defaults (deflate level 3, one build per core); the
reference at its defaults (zlib's level 6, one wheel after the other); and the
reference at our settings (`MATCHED_REFERENCE`: the same reference code, with
every zip entry at level 3 and the variants built on as many threads as
cores; zlib releases the GIL while it compresses), the like-for-like floor.
Wheel sizes of each tool are printed too, since the level trades size for time.

Standard library only. Everything lives in one temporary directory, removed on
exit unless `--keep` is given; the server is stopped on exit.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 1024 * 1024
REPO = "bench-kernels/flash-attn"
PACKAGE = "flash_attn"
VERSION = "0.1.0"
EPOCH = "315532800"

TORCHES = ["torch27", "torch28", "torch29", "torch210", "torch211"]
CUDAS = ["cu126", "cu128", "cu129", "cu130"]
CPUS = ["x86_64", "aarch64"]

# Python modules of the package: (relative path, approximate size in bytes).
PY_FILES = [
    ("__init__.py", 3_000),
    ("_ops.py", 400),
    ("layers.py", 12_000),
    ("interface.py", 28_000),
    ("bert_padding.py", 9_000),
    ("fused_softmax.py", 7_000),
    ("modules/__init__.py", 200),
    ("modules/mha.py", 40_000),
    ("modules/mlp.py", 8_000),
    ("ops/__init__.py", 200),
    ("ops/triton/__init__.py", 200),
    ("ops/triton/rotary.py", 9_000),
    ("ops/triton/layer_norm.py", 45_000),
]


def variant_names(count: int) -> list[str]:
    names = [
        f"{torch}-cxx11-{cuda}-{cpu}-linux"
        for torch in TORCHES
        for cuda in CUDAS
        for cpu in CPUS
    ]
    if not 1 <= count <= len(names):
        sys.exit(f"bench: --variants must be 1..{len(names)}, not {count}")
    return names[:count]


def system_library_pool(limit: int = 192 * MIB) -> bytes:
    """Bytes of this machine's own shared libraries (`/usr/lib`, largest first),
    up to `limit`: real machine code and data, which deflate like kernel
    libraries do (the level-for-speed trade-off of synthetic bytes is not real)."""
    files = []
    for root in ("/usr/lib", "/usr/lib64", "/usr/local/lib"):
        for path in Path(root).rglob("*.so*") if Path(root).is_dir() else []:
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_size > MIB:
                    files.append((path.stat().st_size, path))
            except OSError:
                continue
    pool = bytearray()
    for _, path in sorted(files, reverse=True):
        if len(pool) >= limit:
            break
        try:
            pool += path.read_bytes()[: limit - len(pool)]
        except OSError:
            continue
    return bytes(pool)


def library_bytes(rng: random.Random, size: int, pool: bytes) -> bytes:
    """`size` bytes for one `.so`: 64 KiB slices of `pool` at random offsets,
    or, without a pool, pages of one third random bytes and two thirds a
    repeated pattern (deflates about 3:1)."""
    chunk = 64 * 1024
    out = bytearray()
    if len(pool) >= 16 * MIB:
        while len(out) < size:
            start = rng.randrange(0, len(pool) - chunk)
            out += pool[start : start + chunk]
        return bytes(out[:size])
    page = 4096
    rand = page // 3
    while len(out) < size:
        out += rng.randbytes(rand)
        pattern = rng.randbytes(16)
        out += (pattern * (page // 16 + 1))[: page - rand]
    return bytes(out[:size])


def python_text(rng: random.Random, size: int, name: str) -> bytes:
    lines = [f'"""{name}: generated for the wheel benchmark."""', "import torch", ""]
    n = 0
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(f"def op_{n}(x: torch.Tensor, scale: float = {rng.random():.6f}) -> torch.Tensor:")
        lines.append(f"    return torch.ops._{PACKAGE}_{rng.getrandbits(28):07x}.op_{n}(x, scale)")
        lines.append("")
        n += 1
    return "\n".join(lines).encode()


def write_mirror(root: Path, variants: list[str], so_mib: float, pool: bytes) -> int:
    """Writes the mirror; returns the total size of the build files in bytes."""
    rng = random.Random(20260101)
    repo = root / "repos/kernels" / REPO
    tree = repo / "commits/c1/tree"
    (repo / "commits/c1").mkdir(parents=True)
    (repo / "repo.toml").write_text(
        'commits = ["c1"]\nalso_serve_as = ["model"]\nlfs = ["*.so"]\n\n'
        f'[branches]\nmain = "c1"\n\n[tags]\n"v{VERSION}" = "c1"\n'
    )
    (repo / "commits/c1/commit.toml").write_text(
        'title = "Benchmark build"\ndate = "2026-01-01T00:00:00Z"\n'
    )
    total = 0
    for variant in variants:
        pkg = tree / "build" / variant / PACKAGE
        for rel, size in PY_FILES:
            path = pkg / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = python_text(rng, size, rel)
            path.write_bytes(data)
            total += len(data)
        # Sizes vary by +-30 % around the mean, as across real variants.
        size = int(so_mib * MIB * rng.uniform(0.7, 1.3))
        data = library_bytes(rng, size, pool)
        (pkg / f"_{PACKAGE}_{rng.getrandbits(28):07x}.abi3.so").write_bytes(data)
        total += size
    return total


class Server:
    """`kernels serve <mirror> --port 0`; the endpoint is its first stdout line."""

    def __init__(self, binary: Path, mirror: Path, log: Path):
        self.proc = subprocess.Popen(
            [str(binary), "serve", str(mirror), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=log.open("wb"),
            text=True,
            start_new_session=True,
        )
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            self.stop()
            sys.exit(f"bench: `kernels serve` printed {line!r} instead of its endpoint; see {log}")
        self.endpoint = line

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# The reference `kernels to-wheel` (0.11.3 `kernels_to_wheel`) at our
# settings: deflate level 3 for every entry, variants built on `os.cpu_count()`
# threads. Only the loop and the level differ from the reference.
MATCHED_REFERENCE = """
import os, sys, zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
_writestr = zipfile.ZipFile.writestr
def writestr(self, zinfo, data, compress_type=None, compresslevel=None):
    return _writestr(self, zinfo, data, compress_type, 3 if compresslevel is None else compresslevel)
zipfile.ZipFile.writestr = writestr
_write = zipfile.ZipFile.write
def write(self, filename, arcname=None, compress_type=None, compresslevel=None):
    return _write(self, filename, arcname, compress_type, 3 if compresslevel is None else compresslevel)
zipfile.ZipFile.write = write
from kernels.utils import install_kernel_all_variants
from kernels.wheel import build_variant_to_wheel
repo_id, version = sys.argv[1], sys.argv[2]
variants = install_kernel_all_variants(repo_id=repo_id, revision=f"v{version}")
def build(path):
    return build_variant_to_wheel(manylinux_version="2.28", python_version="3.9", repo_id=repo_id,
                                  version=version, variant_path=path, wheel_dir=Path("."))
with ThreadPoolExecutor(os.cpu_count()) as pool:
    for wheel in pool.map(build, [p for p in variants.iterdir() if p.is_dir()]):
        print(wheel.name, file=sys.stderr)
"""


def tool_env(base: dict[str, str], endpoint: str, cache: Path, offline: bool) -> dict[str, str]:
    env = {
        k: v
        for k, v in base.items()
        if not k.startswith(("HF_", "HUGGING", "KERNELS_", "TRANSFORMERS_"))
    }
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HUB_CACHE=str(cache),
        HF_HOME=str(cache / "hf-home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        SOURCE_DATE_EPOCH=EPOCH,
    )
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


# Runs started above this 1-minute load average are marked `*`.
LOAD_LIMIT = 2.0


def loaded(load1: float) -> str:
    """The mark of a run started at 1-minute load average `load1`."""
    return "*" if load1 > LOAD_LIMIT else ""


def run(name: str, cmd: list[str], env: dict[str, str], out: Path, log: Path, expect: int) -> float:
    """Runs one build into the empty directory `out`; returns wall seconds."""
    out.mkdir(parents=True)
    start = time.monotonic()
    result = subprocess.run(cmd, env=env, cwd=out, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    elapsed = time.monotonic() - start
    if result.returncode != 0:
        raise RuntimeError(f"{name} exited with {result.returncode}; see {log}")
    wheels = list(out.glob("*.whl"))
    if len(wheels) != expect:
        raise RuntimeError(f"{name} wrote {len(wheels)} wheels instead of {expect}; see {log}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", type=Path, required=True, help="the release `kernels` binary")
    parser.add_argument("--pyref", type=Path, required=True, help="root of the Python reference environments")
    parser.add_argument("--variants", type=int, default=40, help="build variants (1-40, default 40)")
    parser.add_argument("--so-mib", type=float, default=24.0, help="mean .so size per variant in MiB (default 24)")
    parser.add_argument("--rounds", type=int, default=5, help="timed warm rounds per tool (default 5)")
    parser.add_argument("--workdir", type=Path, help="parent of the temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    args.binary = args.binary.resolve()
    args.pyref = args.pyref.resolve()

    reference = args.pyref / "kernels-0.11.3/bin/python"
    if not reference.exists():
        sys.exit(f"bench: {reference} is missing; run scripts/pyref-setup")
    variants = variant_names(args.variants)
    work = Path(tempfile.mkdtemp(prefix="kernels-wheel-bench-", dir=args.workdir))
    server = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        t0 = time.monotonic()
        pool = system_library_pool()
        source = (
            f"slices of {len(pool) / MIB:.0f} MiB of this machine's shared libraries"
            if len(pool) >= 16 * MIB
            else "synthetic bytes (no shared libraries found)"
        )
        total = write_mirror(work / "mirror", variants, args.so_mib, pool)
        print(
            f"kernel {REPO}: {len(variants)} variants, {total / MIB:.0f} MiB of build files, "
            f".so contents from {source} (generated in {time.monotonic() - t0:.1f}s)",
            file=sys.stderr,
        )
        logs = work / "logs"
        logs.mkdir()
        server = Server(args.binary, work / "mirror", logs / "serve.log")
        tools = {
            "kernels (ours)": (
                [str(args.binary), "to-wheel", REPO, VERSION, "--out-dir", "."],
                work / "cache-ours",
            ),
            "kernels 0.11.3": (
                [str(reference), "-c", "from kernels.cli import main; main()", "to-wheel", REPO, VERSION],
                work / "cache-ref",
            ),
            "0.11.3 matched": (
                [str(reference), "-c", MATCHED_REFERENCE, REPO, VERSION],
                work / "cache-ref",
            ),
        }
        slugs = {"kernels (ours)": "ours", "kernels 0.11.3": "ref", "0.11.3 matched": "matched"}
        times: dict[str, dict[int, float]] = {name: {} for name in tools}
        sizes: dict[str, int] = {}
        cold: dict[str, float] = {}
        loads: dict[str, dict[int, float]] = {name: {} for name in tools}
        for name, (cmd, cache) in tools.items():
            if name == "0.11.3 matched":
                continue  # shares the reference's cache
            slug = slugs[name]
            env = tool_env(dict(os.environ), server.endpoint, cache, offline=False)
            load1 = os.getloadavg()[0]
            cold[name] = run(name, cmd, env, work / f"cold-{slug}", logs / f"cold-{slug}.log", len(variants))
            shutil.rmtree(work / f"cold-{slug}")
            print(f"  cold  {name:<16} {cold[name]:7.2f}s  load {load1:.1f}{loaded(load1)}",
                  file=sys.stderr)
        names = list(tools)
        for rnd in range(args.rounds):
            shift = rnd % len(names)
            for name in names[shift:] + names[:shift]:
                cmd, cache = tools[name]
                slug = slugs[name]
                env = tool_env(dict(os.environ), server.endpoint, cache, offline=True)
                out = work / f"warm-{slug}-{rnd}"
                loads[name][rnd] = os.getloadavg()[0]
                elapsed = run(name, cmd, env, out, logs / f"warm-{slug}-{rnd}.log", len(variants))
                sizes[name] = sum(w.stat().st_size for w in out.glob("*.whl"))
                shutil.rmtree(out)
                times[name][rnd] = elapsed
                print(f"  round {rnd + 1} {name:<16} {elapsed:7.2f}s  load {loads[name][rnd]:.1f}"
                      f"{loaded(loads[name][rnd])}", file=sys.stderr)

        every = [x for per in loads.values() for x in per.values()]
        print(f"\nto-wheel, {len(variants)} variants, {total / MIB:.0f} MiB, {os.cpu_count()} CPUs, "
              f"1-min load average before each run {min(every):.1f}-{max(every):.1f}")
        print(f"{'tool':<16} {'warm median s':>14} {'min s':>7} {'max s':>7} {'cold s':>7} {'wheels MiB':>11}  load")
        for name, values in times.items():
            v = list(values.values())
            top = max(loads[name].values())
            print(f"{name:<16} {statistics.median(v):14.2f} {min(v):7.2f} "
                  f"{max(v):7.2f} {cold.get(name, float('nan')):7.2f} {sizes[name] / MIB:11.1f}  "
                  f"{min(loads[name].values()):.1f}-{top:.1f}{loaded(top)}")
        print("settings: ours = deflate level 3, one build per core (our defaults); "
              "kernels 0.11.3 = zlib level 6, one thread (its defaults); "
              f"0.11.3 matched = level 3, {os.cpu_count()} threads (ours)")
        print("paired ratios (per round, adjacent runs; median [min-max]):")
        for other, label, target in (("0.11.3 matched", "same level and threads (floor)", None),
                                     ("kernels 0.11.3", "each at its defaults", 0.5)):
            rs = [times["kernels (ours)"][r] / times[other][r] for r in times[other]]
            hot = sum(1 for r in times[other]
                      if max(loads["kernels (ours)"][r], loads[other][r]) > LOAD_LIMIT)
            verdict = "" if target is None else \
                f"  target <= {target} {'PASS' if statistics.median(rs) <= target else 'FAIL'}"
            star = f"  * {hot} of {len(rs)} pairs above load {LOAD_LIMIT:g}" if hot else ""
            print(f"  ours/{other:<16} {statistics.median(rs):5.2f}{'*' if hot else ' '}"
                  f"[{min(rs):.2f}-{max(rs):.2f}]  {label}{verdict}{star}")
        print(f"  cold ours/kernels 0.11.3 (one run) {cold['kernels (ours)'] / cold['kernels 0.11.3']:.2f}")
        if max(every) > LOAD_LIMIT:
            print(f"  * taken above load {LOAD_LIMIT:g}: not comparable with a quiet run")
        return 0
    except RuntimeError as err:
        print(f"bench: {err}", file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            print(f"bench: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
