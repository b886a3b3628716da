#!/usr/bin/env python3
"""Lock benchmark: `kernels lock` vs the Python reference over a server that
answers every Hub request 150 ms late, and (variant-hash projects of 30 and 100
dependencies) through a proxy that puts the 150 ms on the connection instead.
Not a test; see docs/performance.md.

Standard library only. Run through bench/lock, which builds the binary and the
reference environments first.
"""

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

# Runs started above this 1-minute load average are marked `*`.
LOAD_LIMIT = 2.0

VARIANTS = [
    ("torch28-cxx11-cu126-x86_64-linux", "cuda"),
    ("torch28-cxx11-cu128-x86_64-linux", "cuda"),
    ("torch29-cxx11-cu128-x86_64-linux", "cuda"),
    ("torch29-cxx11-cu130-x86_64-linux", "cuda"),
    ("torch28-cxx11-rocm63-x86_64-linux", "rocm"),
    ("torch29-cxx11-rocm64-x86_64-linux", "rocm"),
    ("torch28-cpu-x86_64-linux", "cpu"),
    ("torch29-cpu-aarch64-linux", "cpu"),
]


def bench_graph(n):
    """30 kernels: the first 24 are direct dependencies; kernel i < 12 also
    depends on kernel 24 + i % 6 (reached only through them) and on kernel
    i + 12 (also direct). Returns (direct, edges)."""
    direct = [f"k{i:02d}" for i in range(min(n, 24))]
    edges = collections.defaultdict(list)
    for i in range(min(n, 12)):
        if 24 + i % 6 < n:
            edges[f"k{i:02d}"].append(f"k{24 + i % 6:02d}")
        if i + 12 < n:
            edges[f"k{i:02d}"].append(f"k{i + 12:02d}")
    return direct, edges


def depth_levels(direct, edges):
    """Smallest depth (1 = direct) at which each kernel is reached."""
    depth = {k: 1 for k in direct}
    frontier = list(direct)
    while frontier:
        nxt = []
        for k in frontier:
            for c in edges.get(k, []):
                if c not in depth:
                    depth[c] = depth[k] + 1
                    nxt.append(c)
        frontier = nxt
    return depth


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_repo(mirror, name, deps, commit_label="c1"):
    repo = os.path.join(mirror, "repos", "kernels", "bench", name)
    tree = os.path.join(repo, "commits", commit_label, "tree")
    pkg = name.replace("-", "_")
    for variant, backend in VARIANTS:
        base = os.path.join(tree, "build", variant)
        write(os.path.join(base, pkg, "__init__.py"), f"# {name} {variant}\n")
        write(os.path.join(base, "_ops.py"), f"ops = '_{pkg}_{backend}'\n")
        meta = {
            "name": name,
            "id": f"_{pkg}_{backend}_abc1234",
            "version": 1,
            "license": "apache-2.0",
            "python-depends": [],
            "backend": {"type": backend},
            "kernel-depends": [{"repo-id": f"bench/{d}", "version": 1} for d in deps],
        }
        write(os.path.join(base, "metadata.json"), json.dumps(meta, indent=2) + "\n")
    write(os.path.join(tree, "README.md"), f"# {name}\n")
    write(
        os.path.join(repo, "commits", commit_label, "commit.toml"),
        f'title = "{name} build"\ndate = "2026-09-01T10:00:00Z"\n',
    )
    write(
        os.path.join(repo, "repo.toml"),
        f'commits = ["{commit_label}"]\nalso_serve_as = ["model"]\n\n'
        f'[branches]\n"main" = "{commit_label}"\n"v1" = "{commit_label}"\n',
    )


def hashed_names(n):
    return [f"h{i:03d}" for i in range(n)]


def make_mirror(root, bundled, n, hashed):
    mirror = os.path.join(root, "mirror")
    shutil.copytree(bundled, mirror, symlinks=True)
    write(
        os.path.join(mirror, "orgs", "bench.toml"),
        'fullname = "Bench"\ntrusted_kernel_publisher = true\n',
    )
    direct, edges = bench_graph(n)
    names = [f"k{i:02d}" for i in range(n)] + ["extra"]
    for name in names:
        make_repo(mirror, name, edges.get(name, []))
    for name in hashed_names(max(hashed, default=0)):
        make_repo(mirror, name, [])
    return mirror, direct, edges


class DelayProxy:
    """A TCP proxy on loopback that delays every byte by half of `rtt_ms` in
    each direction, and the first byte of a connection by one more round trip
    (the TCP handshake), as a far-away server's link would. Runs its own event
    loop in a thread."""

    def __init__(self, rtt_ms):
        self.one_way = rtt_ms / 2000
        self.upstream = None
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _pipe(self, reader, writer, extra):
        queue = asyncio.Queue()

        async def send():
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not chunk:
                    break
                writer.write(chunk)
                await writer.drain()
            writer.close()

        sender = asyncio.ensure_future(send())
        first = True
        while True:
            try:
                chunk = await reader.read(65536)
            except ConnectionError:
                chunk = b""
            queue.put_nowait((time.monotonic() + self.one_way + (extra if first else 0), chunk))
            first = False
            if not chunk:
                break
        await sender

    async def _client(self, reader, writer):
        host, port = self.upstream
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pipe(reader, up_writer, 2 * self.one_way),
            self._pipe(up_reader, writer, 0),
            return_exceptions=True,
        )

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.loop.call_soon_threadsafe(self.loop.stop)


class Server:
    def __init__(self, binary, mirror, latency_ms, public_url=None):
        extra = ["--public-url", public_url] if public_url else []
        self.proc = subprocess.Popen(
            [binary, "serve", mirror, "--port", "0", "--test-control", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.endpoint = self.proc.stdout.readline().strip()
        if not self.endpoint.startswith("http://"):
            raise SystemExit(f"bench: kernels serve printed {self.endpoint!r}")
        self.latency_ms = latency_ms
        self.base = self.endpoint
        self.reset()

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req) as r:
            return r.read()

    def reset(self):
        self.call("POST", "/__fixture/reset", {})
        if self.latency_ms:
            self.call("POST", "/__fixture/faults", {"listener": "hub", "latency_ms": self.latency_ms})

    def peak(self):
        """The most Hub requests in flight at once since the last reset."""
        return json.loads(self.call("GET", "/__fixture/concurrency"))["hub"]["peak"]

    def requests(self):
        return json.loads(self.call("GET", "/__fixture/requests"))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def repo_of(path):
    """The repository (or organization) a logged request is about."""
    parts = path.split("?")[0].strip("/").split("/")
    if parts[:2] == ["api", "organizations"] and len(parts) > 2:
        return f"org:{parts[2]}"
    if parts[0] == "api" and len(parts) > 3:
        return f"{parts[2]}/{parts[3]}"
    if len(parts) > 3 and parts[2] == "resolve":
        return f"{parts[0]}/{parts[1]}"
    if len(parts) > 4 and parts[0] in ("models", "kernels") and parts[3] == "resolve":
        return f"{parts[1]}/{parts[2]}"
    return "/".join(parts[:3])


def run_timed(cmd, env, cwd=None):
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return elapsed


def env_for(server, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KERNELS_"))}
    env.pop("VIRTUAL_ENV", None)
    env.update(
        HF_ENDPOINT=server.endpoint,
        HF_HUB_CACHE=cache,
        HF_HOME=os.path.join(cache, "hf-home"),
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        NO_COLOR="1",
    )
    # Not HF_HUB_DISABLE_TELEMETRY: with it, kernels 0.17.2 sends an illegal
    # User-Agent header (a trailing "; ") and every request fails.
    return env


def measure(server, cmd, env, cwd=None):
    """(seconds, requests by repo) of one run."""
    before = len(server.requests())
    secs = run_timed(cmd, env, cwd)
    log = server.requests()[before:]
    return secs, collections.Counter(repo_of(r["path"]) for r in log if r["listener"] == "hub")


def project_dir(root, name, deps_text):
    d = tempfile.mkdtemp(prefix=name + "-", dir=root)
    write(os.path.join(d, "pyproject.toml"), f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n[tool.kernels.dependencies]\n{deps_text}')
    return d


def per_dep(counts):
    repos = {k: v for k, v in counts.items() if not k.startswith("org:")}
    orgs = sum(v for k, v in counts.items() if k.startswith("org:"))
    if not repos:
        return f"0 requests ({orgs} trust)" if orgs else "0 requests"
    dist = collections.Counter(repos.values())
    parts = ", ".join(f"{n} repos x {k}" for k, n in sorted(dist.items()))
    total = sum(repos.values()) + orgs
    return f"{total} requests: {parts}" + (f" (+{orgs} trust)" if orgs else "")


def run_project(args, server, root, project):
    """Fresh lock, re-lock and re-lock after one addition, ours (median of
    `--rounds`) and the reference's fresh lock when asked. Returns the figures."""
    name, deps, runtime, ref_env, floor_rts, extra = project["spec"]
    rt = args.latency_ms / 1000
    r = {"runtime": runtime, "floor_s": floor_rts * rt, "floor_round_trips": floor_rts, "delay": project["delay"],
         "load_before": os.getloadavg()[0]}
    ours = lambda d: [args.binary, "-q", "lock", "--target-runtime", runtime, d]
    fresh, relock, added, peaks, loads = [], [], [], [], []
    for i in range(args.rounds):
        d = project_dir(root, name, deps)
        env = env_for(server, os.path.join(root, f"cache-{name}-{project['delay']}-{i}"))
        server.reset()
        loads.append(os.getloadavg()[0])
        fresh.append(measure(server, ours(d), env))
        peaks.append(server.peak())
        relock.append(measure(server, ours(d), env))
        with open(os.path.join(d, "pyproject.toml"), "a") as f:
            f.write(extra)
        added.append(measure(server, ours(d), env))
    r["ours_fresh_s"] = statistics.median(s for s, _ in fresh)
    r["ours_fresh_runs_s"] = [s for s, _ in fresh]
    r["ours_fresh_loads"] = loads
    r["ours_fresh_requests"] = per_dep(fresh[0][1])
    r["peak_in_flight"] = max(peaks)
    r["relock_s"] = statistics.median(s for s, _ in relock)
    r["relock_requests"] = per_dep(relock[0][1])
    r["added_s"] = statistics.median(s for s, _ in added)
    r["added_requests"] = per_dep(added[0][1])
    r["added_counts"] = dict(added[0][1])
    if project["reference"]:
        py = os.path.join(args.pyref, ref_env, "bin", "python")
        ref = []
        for i in range(args.reference_rounds):
            d = project_dir(root, name + "-ref", deps)
            cache = os.path.join(root, f"refcache-{name}-{i}")
            cmd = [py, "-c", "import sys\nfrom kernels.cli import main\nsys.argv[0]='kernels'\nsys.exit(main())", "lock", d]
            ref.append(measure(server, cmd, env_for(server, cache)))
            # Same bytes as ours.
            ours_dir = project_dir(root, name + "-cmp", deps)
            run_timed(ours(ours_dir), env_for(server, cache))
            same = open(os.path.join(d, "kernels.lock")).read() == open(os.path.join(ours_dir, "kernels.lock")).read()
            r["same_lock_as_reference"] = same
        r["reference_s"] = statistics.median(s for s, _ in ref)
        r["reference_requests"] = per_dep(ref[0][1])
    return r


def projects_of(args, direct, edges):
    """Every project to lock: (name, deps, runtime, reference env, floor round
    trips, extra dep line), how the delay is applied, and whether the
    reference runs too."""
    depth = depth_levels(direct, edges)
    tgi = open(os.path.join(args.repo_root, "fixtures/projects/tgi-server-db931fcf/pyproject.toml")).read()
    tgi_deps = tgi.split("[tool.kernels.dependencies]\n", 1)[1].split("\n\n", 1)[0] + "\n"
    reference = not args.no_reference
    out = [
        # per level: refs -> build/ listing -> metadata.json; trust in parallel
        {"spec": (f"bench-{args.kernels}", "".join(f'"bench/{k}" = 1\n' for k in direct), "0.17.2", "kernels-0.17.2",
                  3 * max(depth.values()), '"bench/extra" = 1\n'), "delay": "request", "reference": reference},
        # refs -> recursive build/ listing (hashes from the listing)
        {"spec": ("tgi-server-db931fcf", tgi_deps, "0.13.0", "kernels-0.13.0", 2,
                  '"kernels-community/activation" = ">=0.0.2"\n'), "delay": "request", "reference": reference},
    ]
    for n in args.hashed:
        deps = "".join(f'"bench/{k}" = 1\n' for k in hashed_names(n))
        for delay in ("request", "connection"):
            # On the connection: the TCP handshake is one more round trip.
            floor = 2 if delay == "request" else 3
            spec = (f"hashed-{n}", deps, "0.13.0", "kernels-0.13.0", floor, '"bench/extra" = 1\n')
            ref = reference and delay == "request" and n <= args.reference_max_deps
            out.append({"spec": spec, "delay": delay, "reference": ref})
    return [p for p in out if args.only is None or args.only in p["spec"][0]]


def report(args, results):
    print(f"kernels lock, {args.latency_ms} ms per Hub request or on the connection "
          f"(median of {args.rounds}; reference {args.reference_rounds} run)")
    print(f"load average (1 min) at the start {results['load_before']:.2f}, at the end {results['load_after']:.2f}; "
          f"* taken above load {LOAD_LIMIT:g}: not comparable with a quiet run "
          "(the load before each fresh lock is printed with its run)\n")
    for key, r in results["projects"].items():
        rt = args.latency_ms / 1000
        hot = max([r["load_before"], *r["ours_fresh_loads"]]) > LOAD_LIMIT
        mark = " *" if hot else ""
        print(f"{key} (target runtime {r['runtime']}, {args.latency_ms} ms on each {r['delay']}){mark}")
        print(f"  round-trip floor       {r['floor_s']:7.2f} s   ({r['floor_round_trips']} dependent round trips)")
        runs = ", ".join(f"{s:.2f} at load {x:.1f}{'*' if x > LOAD_LIMIT else ''}"
                         for s, x in zip(r["ours_fresh_runs_s"], r["ours_fresh_loads"]))
        target = ""
        if r["runtime"] == "0.13.0" and key.startswith("hashed-"):
            ok = r["ours_fresh_s"] <= 1.5 * r["floor_s"]
            target = f"target <= 1.5 x floor {'PASS' if ok else 'FAIL'}   "
        # Through the proxy the server answers at once: its gauge says nothing.
        peak = f"peak {r['peak_in_flight']} in flight at the server   " if r["delay"] == "request" else ""
        print(f"  fresh lock, ours       {r['ours_fresh_s']:7.2f} s   {r['ours_fresh_s'] / r['floor_s']:.2f} x floor{mark}   "
              f"{target}{r['ours_fresh_requests']}   {peak}(runs {runs})")
        if r["runtime"] == "0.13.0" and r["delay"] == "request":
            two = r['ours_fresh_s'] / (2 * rt)
            print(f"  vs 2 sequential requests         {two:.2f} x{mark}   "
                  f"target <= 2 x {'PASS' if two <= 2 else 'FAIL'}")
        if "reference_s" in r:
            print(f"  fresh lock, reference  {r['reference_s']:7.2f} s   ours = {r['ours_fresh_s'] / r['reference_s']:.3f} x reference   {r['reference_requests']}   same lock: {r.get('same_lock_as_reference')}")
        print(f"  re-lock, no change     {r['relock_s']:7.2f} s   {r['relock_s'] / rt:.1f} round trips   {r['relock_requests']}")
        print(f"  re-lock, one added     {r['added_s']:7.2f} s   {r['added_s'] / rt:.1f} round trips   {r['added_requests']}")
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--pyref", required=True)
    ap.add_argument("--repo-root", required=True)
    ap.add_argument("--latency-ms", type=int, default=150)
    ap.add_argument("--kernels", type=int, default=30)
    ap.add_argument("--hashed", type=lambda v: [int(x) for x in v.split(",") if x], default=[30, 100],
                    help="dependency counts of the generated variant-hash projects (default 30,100; empty: none)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each of our measurements (median)")
    ap.add_argument("--reference-rounds", type=int, default=1)
    ap.add_argument("--reference-max-deps", type=int, default=30,
                    help="run the (sequential) reference on generated projects up to this size")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--only", help="lock only the projects whose name contains this (e.g. hashed)")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()

    root = tempfile.mkdtemp(prefix="kernels-bench-lock-")
    servers = []
    results = {"load_before": os.getloadavg()[0], "projects": {}}
    try:
        mirror, direct, edges = make_mirror(root, os.path.join(args.repo_root, "kernels"), args.kernels, args.hashed)
        proxy = DelayProxy(args.latency_ms)
        by_delay = {
            "request": Server(args.binary, mirror, args.latency_ms),
            "connection": Server(args.binary, mirror, 0, public_url=proxy.url()),
        }
        servers = list(by_delay.values())
        direct_url = by_delay["connection"].endpoint
        host, port = direct_url.removeprefix("http://").rsplit(":", 1)
        proxy.upstream = (host, int(port))
        by_delay["connection"].endpoint = proxy.url()
        for project in projects_of(args, direct, edges):
            key = f"{project['spec'][0]} ({project['delay']})"
            results["projects"][key] = run_project(args, by_delay[project["delay"]], root, project)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    results["load_after"] = os.getloadavg()[0]
    report(args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
