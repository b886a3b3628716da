"""bench/serve: many clients downloading a generated set from `kernels serve`
(following the LFS 302 to its CDN listener, as clients do) and from nginx serving
the same files as static content. Prints throughput, its ratio to nginx, p99
time to first byte, peak RSS of kernels serve (VmHWM) and the load average."""

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

SHA = "5" * 40


def free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_mirror(root, mib, files):
    tree = os.path.join(root, "mirror/repos/kernels/bench/big/commits/c1/tree")
    os.makedirs(os.path.join(tree, "build"))
    with open(os.path.join(root, "mirror/repos/kernels/bench/big/repo.toml"), "w") as f:
        f.write('commits = ["c1"]\n[branches]\nmain = "c1"\n')
    with open(os.path.join(root, "mirror/repos/kernels/bench/big/commits/c1/commit.toml"), "w") as f:
        f.write(f'sha = "{SHA}"\n')
    with open(os.path.join(tree, ".gitattributes"), "w") as f:
        f.write("*.so filter=lfs diff=lfs merge=lfs -text\n")
    size = mib * 1024 * 1024 // files
    names = []
    for i in range(files):
        name = f"build/part-{i:03}.so"
        with open(os.path.join(tree, name), "wb") as f:
            left = size
            while left:
                n = min(left, 4 << 20)
                f.write(os.urandom(n))
                left -= n
        names.append(name)
    return os.path.join(root, "mirror"), tree, names, size


def fetch(url, ttfb, lock):
    """GET url (following one redirect); returns bytes read, records TTFB."""
    start = time.perf_counter()
    for _ in range(3):
        u = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        conn.request("GET", u.path + ("?" + u.query if u.query else ""))
        resp = conn.getresponse()
        if resp.status in (301, 302, 307):
            url = resp.getheader("Location")
            resp.read()
            conn.close()
            continue
        assert resp.status == 200, (url, resp.status)
        first = resp.read(65536)
        with lock:
            ttfb.append(time.perf_counter() - start)
        n = len(first)
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            n += len(chunk)
        conn.close()
        return n
    raise RuntimeError("too many redirects")


def run(urls, clients):
    queue = list(urls)
    qlock, lock = threading.Lock(), threading.Lock()
    ttfb, total = [], [0]

    def worker():
        while True:
            with qlock:
                if not queue:
                    return
                url = queue.pop()
            n = fetch(url, ttfb, lock)
            with lock:
                total[0] += n

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttfb.sort()
    p99 = ttfb[min(len(ttfb) - 1, int(len(ttfb) * 0.99))]
    return total[0] / wall / 2**20, p99 * 1000, wall


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--nginx", default=shutil.which("nginx") or "/usr/sbin/nginx")
    args = ap.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench-serve-")
    procs = []
    try:
        print(f"generating {args.mib} MiB in {args.files} files under {tmp}", file=sys.stderr)
        mirror, tree, names, size = make_mirror(tmp, args.mib, args.files)

        hub, cdn, static = free_port(), free_port(), free_port()
        serve = subprocess.Popen(
            [args.binary, "serve", mirror, "--port", str(hub), "--cdn-port", str(cdn), "-q"],
            stdout=subprocess.PIPE,
        )
        procs.append(serve)
        serve.stdout.readline()

        ng = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(ng, "tmp"))
        user = "user root;" if os.geteuid() == 0 else ""
        with open(os.path.join(ng, "nginx.conf"), "w") as f:
            f.write(
                f"daemon off;\nworker_processes 2;\n{user}\npid {ng}/nginx.pid;\n"
                f"error_log {ng}/error.log warn;\nevents {{ worker_connections 1024; }}\n"
                f"http {{ access_log off; sendfile on; tcp_nopush on;\n"
                f" client_body_temp_path {ng}/tmp/b; proxy_temp_path {ng}/tmp/p;\n"
                f" fastcgi_temp_path {ng}/tmp/f; uwsgi_temp_path {ng}/tmp/u; scgi_temp_path {ng}/tmp/s;\n"
                f" server {{ listen 127.0.0.1:{static}; root {tree}; }} }}\n"
            )
        nginx = subprocess.Popen(
            [args.nginx, "-p", ng, "-e", f"{ng}/error.log", "-c", f"{ng}/nginx.conf"]
        )
        procs.append(nginx)
        time.sleep(0.5)

        serve_urls = [
            f"http://127.0.0.1:{hub}/kernels/bench/big/resolve/{SHA}/{n}" for n in names
        ]
        static_urls = [f"http://127.0.0.1:{static}/{n}" for n in names]
        # Warm the page cache and both servers.
        run(static_urls, 4)
        run(serve_urls, 4)

        print(f"set: {args.files} x {size / 2**20:.0f} MiB; load average before: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
        print(f"{'clients':>7} {'serve MiB/s':>12} {'nginx MiB/s':>12} {'ratio':>6} "
              f"{'serve p99 TTFB':>15} {'nginx p99 TTFB':>15}")
        for c in levels:
            # Alternate the two servers; report the mean of the rounds.
            rs, rn = [], []
            for _ in range(args.rounds):
                rs.append(run(serve_urls, c))
                rn.append(run(static_urls, c))
            s = [sum(r[i] for r in rs) / len(rs) for i in range(2)]
            n = [sum(r[i] for r in rn) / len(rn) for i in range(2)]
            print(f"{c:>7} {s[0]:>12.0f} {n[0]:>12.0f} {s[0] / n[0]:>6.2f} "
                  f"{s[1]:>12.1f} ms {n[1]:>12.1f} ms", flush=True)
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
