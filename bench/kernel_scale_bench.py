#!/usr/bin/env python3
"""Kernel-scale benchmark: `kernels lock`, a cold and a warm `kernels download`
at 10, 40 and 100 kernels and 1,000 and 10,000 files, with wall time, Hub
requests and peak RSS per row.

Run it through `bench/kernel-scale`. Each row gets a generated mirror (two
variants per kernel; each variant holds `__init__.py`, `_ops.py`,
`metadata.json`, one 64 KiB `.so` and as many small `data/table_*.py` files as
the row's file count needs) served by `kernels serve --test-control`, whose
request log gives the request counts. One run per step: a measurement, not a
test; exits 0 when every run completed and 1 otherwise. The load average is
printed with every row; rows taken above load 2 are marked `*`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import download_bench as db  # noqa: E402  (the mirror writer and process helpers)

SO_BYTES = 64 * 1024 + 1
VARIANTS = 2
FIXED_FILES = 4  # __init__.py, _ops.py, metadata.json, the .so


def control(endpoint: str, method: str, path: str) -> bytes:
    req = urllib.request.Request(endpoint + "/__fixture/" + path, data=b"{}" if method == "POST" else None,
                                 method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return resp.read()


def hub_requests(endpoint: str) -> int:
    """Requests logged since the last reset, then resets the log."""
    log = json.loads(control(endpoint, "GET", "requests"))
    control(endpoint, "POST", "reset")
    return len(log)


def timed(cmd: list[str], env: dict[str, str], log: Path, timeout: float) -> tuple[float, int, bool]:
    """(wall seconds, peak RSS in KiB, success) of `cmd` under GNU time."""
    tv = log.with_suffix(".time")
    with open(log, "wb") as out:
        start = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-v", "-o", str(tv), *cmd], env=env,
                                stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        rc, timed_out = db.wait_exactly(proc, timeout)
        ok = rc == 0 and not timed_out
        wall = time.monotonic() - start
    info = db.parse_time_v(tv) if tv.exists() else {}
    return wall, int(info.get("Maximum resident set size (kbytes)", "0")), ok


def one_row(args, work: Path, n_kernels: int, n_files: int) -> dict:
    per_variant = n_files // (n_kernels * VARIANTS)
    small = max(0, per_variant - FIXED_FILES)
    variants = db.variant_names(VARIANTS)
    kernels = []
    for i in range(n_kernels):
        kernel = db.Kernel(name=f"scale-{i:03d}")
        for variant in variants:
            kernel.files[f"build/{variant}/{kernel.package}/_{kernel.package}_abc1234.abi3.so"] = SO_BYTES
        kernels.append(kernel)
    mirror = work / "mirror"
    db.write_mirror(mirror, kernels, variants, small)
    files = n_kernels * VARIANTS * (FIXED_FILES + small)
    server = subprocess.Popen([str(args.binary), "serve", str(mirror), "--port", "0", "--test-control"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              start_new_session=True)
    try:
        endpoint = server.stdout.readline().strip()
        if not endpoint.startswith("http"):
            raise SystemExit(f"bench: kernels serve printed {endpoint!r}")
        project = work / "project"
        project.mkdir()
        deps = "".join(f'"{k.repo_id}" = "{db.SPEC}"\n' for k in kernels)
        (project / "pyproject.toml").write_text(
            '[project]\nname = "scale"\nversion = "0.1.0"\n\n[tool.kernels.dependencies]\n' + deps)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8",
               "HF_ENDPOINT": endpoint, "HF_HOME": str(work / "hf-home"),
               "HF_HUB_CACHE": str(work / "cache"), "HF_HUB_DISABLE_TELEMETRY": "1", "NO_COLOR": "1"}
        hub_requests(endpoint)
        row = {"kernels": n_kernels, "files": files, "load1": os.getloadavg()[0]}
        steps = {
            "lock": [str(args.binary), "lock", str(project)],
            "cold": [str(args.binary), "download", str(project), "--all-variants"],
            "warm": [str(args.binary), "download", str(project), "--all-variants"],
        }
        ok = True
        for step, cmd in steps.items():
            wall, rss, done = timed(cmd, env, work / f"{step}.log", args.timeout)
            ok &= done
            row[step] = {"s": wall, "requests": hub_requests(endpoint), "rss_mib": rss / 1024, "ok": done}
        row["ok"] = ok
        return row
    finally:
        server.terminate()
        server.wait(10)


def print_header() -> None:
    print("| kernels | files | lock s | lock req | lock RSS MiB | cold s | cold req | cold RSS MiB "
          "| warm s | warm req | warm RSS MiB | load |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|", flush=True)


def print_row(r: dict) -> None:
    """One table row, printed as soon as it is measured."""
    cells = [str(r["kernels"]), f"{r['files']:,}"]
    for step in ("lock", "cold", "warm"):
        s = r[step]
        mark = "" if s["ok"] else " (failed)"
        cells += [f"{s['s']:.2f}{mark}", str(s["requests"]), f"{s['rss_mib']:.1f}"]
    cells.append(f"{r['load1']:.1f}" + (" *" if r["load1"] > 2 else ""))
    print("| " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, required=True, help="the `kernels` binary to measure")
    ap.add_argument("--kernels", default="10,40,100", help="kernel counts (default 10,40,100)")
    ap.add_argument("--files", default="1000,10000", help="total file counts (default 1000,10000)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed per run")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = ap.parse_args()
    rows = []
    print_header()
    for n_files in [int(x) for x in args.files.split(",")]:
        for n_kernels in [int(x) for x in args.kernels.split(",")]:
            print(f"kernel-scale: {n_kernels} kernels, {n_files} files", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory(prefix="kernel-scale-") as tmp:
                rows.append(one_row(args, Path(tmp), n_kernels, n_files))
            print_row(rows[-1])
    cores = os.cpu_count()
    print(f"kernel-scale: {cores} cores, load average at the end {os.getloadavg()[0]:.1f}; "
          f"* = taken above load 2", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
