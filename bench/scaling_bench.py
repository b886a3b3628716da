#!/usr/bin/env python3
"""Scaling benchmark: how cold-download time and peak RSS grow with file size,
file count and kernel count, ours against huggingface_hub 2.4 `snapshot_download`.

Run it through `bench/scaling`; it runs bench/download_bench.py once per case
(tools `ours` and `snapshot_download`, interleaved, paired) and prints one table
per dimension. A measurement, not a test: exits 0 when every run completed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# (label, download_bench.py arguments); sizes in MiB.
def cases(large: bool) -> dict[str, list[tuple[str, list[str]]]]:
    sizes = [16, 256, 1024] + ([4096] if large else [])
    counts = [0, 47, 297]  # + 4 files per variant, x 20 variants: 80, 1020, 6020 files
    kernel_counts = [1, 10] + ([30] if large else [20])
    return {
        "file size (1 kernel, 1 variant, one .so)": [
            (f"{s} MiB", ["--kernels", "1", "--variants", "1", "--total-mib", str(s),
                          "--min-mib", str(s), "--max-mib", str(s)])
            for s in sizes
        ],
        "file count (1 kernel, 20 variants, 0.1 MiB .so each)": [
            (f"{20 * (4 + n)} files", ["--kernels", "1", "--variants", "20", "--total-mib", "2",
                                       "--min-mib", "0.1", "--max-mib", "0.1",
                                       "--small-files", str(n)])
            for n in counts
        ],
        "kernel count (2 variants, 1 MiB .so each)": [
            (f"{k} kernels", ["--kernels", str(k), "--variants", "2", "--total-mib", str(2 * k),
                              "--min-mib", "1", "--max-mib", "1"])
            for k in kernel_counts
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, required=True)
    ap.add_argument("--pyref", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per case (default 5)")
    ap.add_argument("--large", action="store_true",
                    help="add the biggest cases: a 4 GiB file, 30 kernels (needs ~9 GiB free)")
    ap.add_argument("--only", default=None, help="run only dimensions whose title contains this")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()

    failed = False
    tables = []
    for title, rows in cases(args.large).items():
        if args.only and args.only not in title:
            continue
        out_rows = []
        for label, extra in rows:
            with tempfile.NamedTemporaryFile(suffix=".json") as js:
                cmd = [sys.executable, str(HERE / "download_bench.py"), "--binary", str(args.binary),
                       "--pyref", str(args.pyref), "--rounds", str(args.rounds),
                       "--tools", "ours,snapshot_download", "--no-strace",
                       "--json", js.name, *extra]
                if args.workdir:
                    cmd += ["--workdir", str(args.workdir)]
                print(f"scaling: {title}: {label}", file=sys.stderr, flush=True)
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                failed |= proc.returncode != 0
                try:
                    runs = json.loads(Path(js.name).read_text())
                except (OSError, json.JSONDecodeError):
                    runs = []
            files = next((line.split(" files")[0].rsplit(" ", 1)[-1]
                          for line in proc.stdout.splitlines() if line.startswith("data:")), "?")
            loads = [r["load1"] for r in runs]
            row = [label, files]
            by = {}
            for tool in ("ours", "snapshot_download"):
                ok = [r for r in runs if r["tool"] == tool and r["ok"]]
                by[tool] = {r["round"]: r["wall"] for r in ok}
                if ok:
                    row += [f"{statistics.median(r['wall'] for r in ok):.2f}",
                            f"{statistics.median(r['max_rss_kib'] for r in ok) / 1024:.0f}"]
                else:
                    row += ["-", "-"]
            ratios = [by["ours"][n] / by["snapshot_download"][n]
                      for n in by["ours"] if n in by["snapshot_download"]]
            row.append(f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
                       if ratios else "-")
            mark = " *" if loads and max(loads) > 2 else ""
            row.append(f"{min(loads):.1f}-{max(loads):.1f}{mark}" if loads else "-")
            out_rows.append(row)
        tables.append((title, out_rows))

    print(f"machine: {os.cpu_count()} cores; {args.rounds} interleaved rounds per case; "
          "medians; ratio = paired per-round ours/snapshot_download, median [min-max]; "
          "load = 1-min load average before each run, min-max")
    print("* a run of the row was taken above load 2: not comparable with a quiet run")
    head = ["case", "files", "ours s", "ours RSS MiB", "snapshot s", "snapshot RSS MiB",
            "ours/snapshot", "load"]
    for title, rows in tables:
        print()
        print(f"{title}")
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        for line in [head, *rows]:
            print("  " + "  ".join(str(x).rjust(w) for x, w in zip(line, widths)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
