"""bench/serve: `kernels serve` against nginx serving the same files, driven by
wrk (a native load generator) at several client counts, for a set of small
files (requests/s) and a set of large files (MiB/s).

Each run lasts --duration seconds; the two servers run alternately (ours,
nginx, ours, nginx ...) for --rounds rounds, and the ratio ours/nginx of each
round is summarised as median [min-max]. The 1-minute load average is recorded
before every run; runs taken above load 2 are marked with `*`.

What wrk fetches from `kernels serve`: small (non-LFS) files through their Hub
resolve URLs, which answer 200 with the bytes; large LFS files through the CDN
listener's `/lfs/<sha256>` URLs directly, which is where a client lands after
following the resolve URL's 302 (wrk does not follow redirects). nginx serves
the same tree as static files. A Lua script generated at run time makes every
wrk thread cycle through all paths of the set, so the small-file cache and the
large-file path are exercised over many files, not one URL."""

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SHA = "5" * 40
REPO = "kernels/bench/serve"
LOAD_MARK = 2.0

LUA = """
local paths = {%(paths)s}
local counter = 0
function setup(thread)
  thread:set("start", counter)
  counter = counter + 1
end
function init(args)
  i = (start * 7) %% #paths
end
function request()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'RESULT {"requests":%%d,"bytes":%%d,"duration_us":%%d,"errors":%%d,' ..
    '"status_errors":%%d,"p50_us":%%d,"p99_us":%%d}\\n',
    summary.requests, summary.bytes, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_mirror(root, small, small_kib, large, large_mib):
    """A one-commit mirror with `small` non-LFS files under small/ and `large`
    LFS files under build/. Returns (mirror, tree, small paths, large
    (path, sha256) pairs)."""
    repo = os.path.join(root, "mirror/repos", REPO)
    tree = os.path.join(repo, "commits/c1/tree")
    os.makedirs(os.path.join(tree, "build"))
    os.makedirs(os.path.join(tree, "small"))
    with open(os.path.join(repo, "repo.toml"), "w") as f:
        f.write('commits = ["c1"]\n[branches]\nmain = "c1"\n')
    with open(os.path.join(repo, "commits/c1/commit.toml"), "w") as f:
        f.write(f'sha = "{SHA}"\n')
    with open(os.path.join(tree, ".gitattributes"), "w") as f:
        f.write("*.so filter=lfs diff=lfs merge=lfs -text\n")
    smalls = []
    for i in range(small):
        name = f"small/f-{i:05}.py"
        with open(os.path.join(tree, name), "wb") as f:
            f.write(os.urandom(small_kib * 1024))
        smalls.append(name)
    larges = []
    for i in range(large):
        name = f"build/part-{i:03}.so"
        digest = hashlib.sha256()
        with open(os.path.join(tree, name), "wb") as f:
            for _ in range(large_mib):
                chunk = os.urandom(1 << 20)
                digest.update(chunk)
                f.write(chunk)
        larges.append((name, digest.hexdigest()))
    return os.path.join(root, "mirror"), tree, smalls, larges


def pinned(cpus, cmd):
    """`cmd` run on the CPUs `cpus` (a `taskset -c` list), or as it is when None."""
    return cmd if cpus is None else ["taskset", "-c", cpus] + cmd


def cpu_count(cpus):
    """How many CPUs the `taskset -c` list `cpus` names (all of them when None)."""
    if cpus is None:
        return os.cpu_count() or 1
    n = 0
    for part in cpus.split(","):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def start_nginx(binary, tmp, tree, port, cpus=None):
    ng = os.path.join(tmp, "nginx")
    os.makedirs(os.path.join(ng, "tmp"))
    user = "user root;" if os.geteuid() == 0 else ""
    with open(os.path.join(ng, "nginx.conf"), "w") as f:
        f.write(
            f"daemon off;\nworker_processes {'auto' if cpus is None else cpu_count(cpus)};\n{user}\npid {ng}/nginx.pid;\n"
            f"error_log {ng}/error.log warn;\n"
            f"events {{ worker_connections 4096; }}\n"
            f"http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;\n"
            f" client_body_temp_path {ng}/tmp/b; proxy_temp_path {ng}/tmp/p;\n"
            f" fastcgi_temp_path {ng}/tmp/f; uwsgi_temp_path {ng}/tmp/u; scgi_temp_path {ng}/tmp/s;\n"
            f" server {{ listen 127.0.0.1:{port}; root {tree}; }} }}\n"
        )
    return subprocess.Popen(pinned(cpus, [binary, "-p", ng, "-e", f"{ng}/error.log",
                                          "-c", f"{ng}/nginx.conf"]))


def wait_port(port, proc):
    for _ in range(200):
        if proc.poll() is not None:
            sys.exit(f"bench: server on port {port} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"bench: nothing listens on port {port}")


def write_lua(path, paths):
    with open(path, "w") as f:
        f.write(LUA % {"paths": ", ".join(json.dumps(p) for p in paths)})


def wrk(args, base, script, clients, duration):
    """One wrk run; returns its RESULT dict plus the load average before it."""
    threads = max(1, min(cpu_count(args.client_cpus), clients))
    load = os.getloadavg()[0]
    cmd = pinned(args.client_cpus, [args.wrk, "-t", str(threads), "-c", str(clients), "-d", f"{duration}s",
           "--timeout", "60s", "-s", script, base])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = next((l for l in out.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        sys.exit(f"bench: wrk printed no result:\n{out}")
    result = json.loads(line[len("RESULT "):])
    if result["errors"] or result["status_errors"]:
        sys.exit(f"bench: wrk saw errors against {base}: {result}")
    result["load"] = load
    secs = result["duration_us"] / 1e6
    result["rps"] = result["requests"] / secs
    result["mibs"] = result["bytes"] / secs / 2**20
    return result


def fmt_load(load):
    return f"{load:.2f}{'*' if load > LOAD_MARK else ' '}"


def bench_set(args, label, unit, ours, theirs):
    """Paired rounds at each client count for one set; prints every run and
    returns summary rows. `ours`/`theirs` are (base URL, Lua script)."""
    key = "rps" if unit == "req/s" else "mibs"
    for base, script in (ours, theirs):
        wrk(args, base, script, 4, 1)  # warm the page cache and the server
    rows = []
    for clients in args.clients:
        ratios, ours_v, theirs_v, p99 = [], [], [], []
        for r in range(args.rounds):
            a = wrk(args, *ours, clients, args.duration)
            b = wrk(args, *theirs, clients, args.duration)
            ratios.append(a[key] / b[key])
            ours_v.append(a[key])
            theirs_v.append(b[key])
            p99.append((a["p99_us"], b["p99_us"]))
            print(f"  {label:<6} {clients:>3} clients round {r + 1}: ours {a[key]:>10.0f} "
                  f"(load {fmt_load(a['load'])}) nginx {b[key]:>10.0f} "
                  f"(load {fmt_load(b['load'])}) {unit}, ratio {ratios[-1]:.2f}",
                  flush=True)
        rows.append((label, clients, unit, ours_v, theirs_v, ratios, p99))
    return rows


def print_summary(rows):
    print(f"\n{'set':<6} {'clients':>7} {'ours':>12} {'nginx':>12} {'unit':<6} "
          f"{'ratio median [min-max]':>24} {'p99 ours/nginx ms':>18}")
    for label, clients, unit, ours, theirs, ratios, p99 in rows:
        spread = f"{statistics.median(ratios):.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"
        lat = (f"{statistics.median(p[0] for p in p99) / 1000:.1f}/"
               f"{statistics.median(p[1] for p in p99) / 1000:.1f}")
        print(f"{label:<6} {clients:>7} {statistics.median(ours):>12.0f} "
              f"{statistics.median(theirs):>12.0f} {unit:<6} {spread:>24} {lat:>18}")


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def parse_args():
    ap = argparse.ArgumentParser(
        prog="bench/serve", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", help="kernels binary (bench/serve builds target/release/kernels)")
    ap.add_argument("--clients", default="1,16,64",
                    help="comma-separated wrk connection counts (threads: min(cores, clients))")
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, default=3, help="paired rounds per client count")
    ap.add_argument("--small-files", type=int, default=1000, help="files in the small set")
    ap.add_argument("--small-kib", type=int, default=4, help="size of each small file, KiB")
    ap.add_argument("--large-files", type=int, default=16, help="files in the large set")
    ap.add_argument("--large-mib", type=int, default=16, help="size of each large file, MiB")
    ap.add_argument("--sets", default="small,large", help="which sets to run")
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    ap.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk")
    ap.add_argument("--client-cpus", default=None, metavar="LIST",
                    help="run wrk on these CPUs only (a `taskset -c` list, e.g. 12-15); "
                         "wrk's threads: min(those CPUs, clients)")
    ap.add_argument("--server-cpus", default=None, metavar="LIST",
                    help="run both servers on these CPUs only (e.g. 0-11); nginx then starts "
                         "one worker per CPU of the list instead of `auto`")
    ap.add_argument("--keep-serving", action="store_true",
                    help="print the URLs and wait (for strace/perf on the server) instead of measuring")
    args = ap.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    args.sets = args.sets.split(",")
    if not args.binary:
        ap.error("--binary is required (bench/serve passes it)")
    for tool, path, package in (("nginx", args.nginx, "nginx-light"), ("wrk", args.wrk, "wrk")):
        if not os.access(path, os.X_OK):
            ap.error(f"{tool} not found at {path}: install it (apt-get install {package}; "
                     f"bench/serve does) or pass --{tool}")
    return args


def main():
    args = parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-serve-")
    procs = []
    try:
        print(f"bench: generating {args.small_files} x {args.small_kib} KiB and "
              f"{args.large_files} x {args.large_mib} MiB under {tmp}", file=sys.stderr)
        mirror, tree, smalls, larges = make_mirror(
            tmp, args.small_files, args.small_kib, args.large_files, args.large_mib)
        hub, cdn, static = free_port(), free_port(), free_port()
        serve = subprocess.Popen(
            pinned(args.server_cpus, [args.binary, "serve", mirror, "--port", str(hub),
                                      "--cdn-port", str(cdn), "-q"]),
            stdout=subprocess.DEVNULL)
        procs.append(serve)
        nginx = start_nginx(args.nginx, tmp, tree, static, args.server_cpus)
        procs.append(nginx)
        wait_port(hub, serve)
        wait_port(cdn, serve)
        wait_port(static, nginx)
        scripts = {}
        for name, ours_paths, nginx_paths in (
            ("small", [f"/{REPO}/resolve/{SHA}/{p}" for p in smalls], [f"/{p}" for p in smalls]),
            ("large", [f"/lfs/{sha}" for _, sha in larges], [f"/{p}" for p, _ in larges]),
        ):
            for who, paths in (("ours", ours_paths), ("nginx", nginx_paths)):
                script = os.path.join(tmp, f"{name}-{who}.lua")
                write_lua(script, paths)
                scripts[name, who] = script
        if args.keep_serving:
            print(f"kernels serve pid {serve.pid}: hub :{hub}, cdn :{cdn}; nginx :{static}; "
                  f"scripts in {tmp}; Ctrl-C ends", flush=True)
            serve.wait()
            return
        print(f"{os.cpu_count()} CPUs; servers on {args.server_cpus or 'all'}, wrk on "
              f"{args.client_cpus or 'all'}; load average before: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.duration} s per run, "
              f"{args.rounds} paired rounds; * = load above {LOAD_MARK:g}")
        sets = {
            "small": (f"small ({args.small_files} x {args.small_kib} KiB, resolve URLs)", "req/s",
                      f"http://127.0.0.1:{hub}", f"http://127.0.0.1:{static}"),
            "large": (f"large ({args.large_files} x {args.large_mib} MiB, CDN /lfs/ URLs)", "MiB/s",
                      f"http://127.0.0.1:{cdn}", f"http://127.0.0.1:{static}"),
        }
        rows = []
        for name in args.sets:
            title, unit, ours_base, nginx_base = sets[name]
            print(title, flush=True)
            rows += bench_set(args, name, unit, (ours_base, scripts[name, "ours"]),
                              (nginx_base, scripts[name, "nginx"]))
        print_summary(rows)
        print(f"kernels serve peak RSS (VmHWM): {vm_hwm(serve.pid):.1f} MiB")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        for p in procs:
            p.terminate()  # nginx's master stops its workers on SIGTERM
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
