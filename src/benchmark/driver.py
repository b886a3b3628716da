# `kernels benchmark`: runs the benchmark classes shipped with locked kernels.
#
# Reads one JSON request on stdin (`src/benchmark/mod.rs`, `Request`) and
# writes one line per event on stdout, each `MARK` + JSON, flushed: `start`
# (the machine and the timing mechanism), `loading` / `kernel` around each
# kernel's import, `script` when a script cannot be read, `begin` before each
# workload (so that a hang or a crash names it) and `result` after it, with the
# raw per-iteration times in milliseconds. Statistics are computed by the
# caller. Everything the benchmarks print goes to stderr.
#
# With `KERNELS_BENCHMARK_WORKER=1` the same file is a candidate's own
# interpreter (`Remote`): it reads one command per line on stdin (load the
# candidate, set up a workload, warm up, peak, time one call, end) and
# answers each with one marked line; the main driver interleaves its calls.
import contextlib
import gc
import importlib.util
import json
import os
import platform
import random
import subprocess
import sys
import time
import traceback
import types
from pathlib import Path

MARK = "@kernels-benchmark@ "
LINE_LIMIT = 300
ATOL = 1e-2  # as reference 0.17.2's `torch.allclose(out, expected, atol=1e-2)`

sys.dont_write_bytecode = True
if sys.path and sys.path[0] == "":
    sys.path.pop(0)

WORKER = os.environ.get("KERNELS_BENCHMARK_WORKER") == "1"
request = {"skip": []} if WORKER else json.loads(sys.stdin.read())
skip = set(request["skip"])
real_stdout = sys.stdout


def emit(event):
    real_stdout.write(MARK + json.dumps(event) + "\n")
    real_stdout.flush()


class CandidateError(Exception):
    """What the candidate's own interpreter reported (its error lines)."""

    def __init__(self, lines):
        super().__init__(" | ".join(lines))
        self.lines = lines


def error_lines(error):
    if isinstance(error, CandidateError):
        return ["candidate (own interpreter): %s" % line for line in error.lines]
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    lines = [line.rstrip()[:LINE_LIMIT] for line in text.splitlines()][:4]
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<")]
    if frames:
        last = frames[-1]
        lines.append("at %s:%d in %s" % (Path(last.filename).name, last.lineno, last.name))
    return lines


def benchmark_base():
    """`kernels.benchmark.Benchmark` when the interpreter has it, else a stand-in
    registered under that name (same attributes), so that scripts import."""
    try:
        from kernels.benchmark import Benchmark

        return Benchmark
    except Exception:
        pass

    class Benchmark:
        seed = None
        device = "cpu"

        def __init__(self):
            self.kernel = None
            self.out = None

        def setup(self):
            pass

    module = types.ModuleType("kernels.benchmark")
    module.Benchmark = Benchmark
    Benchmark.__module__ = "kernels.benchmark"
    package = sys.modules.get("kernels")
    if package is None:
        package = types.ModuleType("kernels")
        package.__path__ = []
        sys.modules["kernels"] = package
    package.benchmark = module
    sys.modules["kernels.benchmark"] = module
    return Benchmark


import torch  # noqa: E402  (after the bytecode and sys.path settings)

BASE = benchmark_base()


def device_name():
    if torch.cuda.is_available():
        return "cuda"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu"
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


DEVICE = device_name()
TIMING = "cuda_event" if DEVICE == "cuda" else "wall_clock"


def synchronize():
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    elif DEVICE == "xpu":
        torch.xpu.synchronize()
    elif DEVICE == "mps":
        torch.mps.synchronize()


def driver_version():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except Exception:
        return None


def machine():
    info = {
        "device": DEVICE,
        "gpu": None,
        "capability": None,
        "driver": None,
        "torch": getattr(torch, "__version__", None),
        "cuda": getattr(getattr(torch, "version", None), "cuda", None),
        "python": platform.python_version(),
        "os": "%s %s" % (platform.system(), platform.release()),
        "cpu": platform.processor() or platform.machine() or None,
    }
    if DEVICE == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        major, minor = torch.cuda.get_device_capability(0)
        info["capability"] = "%d.%d" % (major, minor)
        info["driver"] = driver_version()
    return info


class ZipPackageLoader:
    """Runs the `__init__.py` of a zip-layout variant's archive `<id>.zip`."""

    def __init__(self, archive):
        import zipimport

        try:
            self.importer = zipimport.zipimporter(str(archive))
        except Exception as error:
            raise ImportError("corrupt kernel archive %s: %s" % (archive, error)) from None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.importer.get_code("__init__"), module.__dict__)


def zip_spec(name, variant):
    """The spec of a variant whose metadata.json says `"build-layout": "zip"`, else None."""
    try:
        meta = json.loads((variant / "metadata.json").read_text())
    except Exception:
        return None
    if not isinstance(meta, dict) or meta.get("build-layout") != "zip":
        return None
    archive = variant / ("%s.zip" % meta.get("id"))
    if not archive.is_file():
        raise FileNotFoundError("no kernel archive at %s (metadata.json says build-layout zip)" % archive)
    import importlib.machinery

    spec = importlib.machinery.ModuleSpec(
        name, ZipPackageLoader(archive), origin="%s/__init__.py" % archive, is_package=True
    )
    spec.submodule_search_locations = [str(variant), str(archive)]
    spec.has_location = True
    return spec


def load(index, variant_dir, package, role):
    variant = Path(variant_dir)
    name = "_kernels_benchmark_%d_%s_%s" % (index, role, package)
    spec = zip_spec(name, variant)
    if spec is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    init = variant / "__init__.py"
    if not init.exists():
        init = variant / package / "__init__.py"
    if not init.exists():
        raise FileNotFoundError("no kernel module in %s" % variant)
    name = "_kernels_benchmark_%d_%s_%s" % (index, role, package)
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def classes_of(script, index):
    """Benchmark classes defined in `script` (not imported ones), by name."""
    name = "_kernels_benchmark_script_%d_%s" % (index, script.stem)
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    old = os.getcwd()
    os.chdir(script.parent.parent)
    try:
        spec.loader.exec_module(module)
    finally:
        os.chdir(old)
    found = []
    for attr in sorted(dir(module)):
        obj = getattr(module, attr)
        if isinstance(obj, type) and obj.__module__ == name and issubclass(obj, BASE) and obj is not BASE:
            found.append(obj)
    return found


def time_once(fn):
    if TIMING == "cuda_event":
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    begin = time.perf_counter()
    fn()
    synchronize()
    return (time.perf_counter() - begin) * 1000.0


def describe(tensor):
    shape = getattr(tensor, "shape", None)
    dtype = getattr(tensor, "dtype", None)
    shape = "x".join(str(int(d)) for d in shape) if shape is not None else None
    dtype = str(dtype).replace("torch.", "") if dtype is not None else None
    return shape, dtype


def compare(out, expected):
    """(match, max abs difference or None) of the workload's output."""
    matched = bool(torch.allclose(out, expected, atol=ATOL))
    try:
        diff = float((out - expected).abs().max().item())
    except Exception:
        diff = None
    return matched, diff


def seeded(cls, kernel):
    instance = cls()
    instance.kernel = kernel
    instance.device = DEVICE
    if instance.seed is not None:
        torch.manual_seed(instance.seed)
        random.seed(instance.seed)
        if DEVICE == "cuda":
            torch.cuda.manual_seed_all(instance.seed)
    return instance


def peak_once(fn):
    """CUDA memory allocated at the peak of one call of `fn`, above what was
    allocated before it (`torch.cuda.max_memory_allocated` after
    `reset_peak_memory_stats`)."""
    synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    synchronize()
    return max(0, int(torch.cuda.max_memory_allocated()) - int(before))


def peak_memory(verify, sides):
    """Peak CUDA memory of one call each: ours, the reference (`verify_*`),
    the candidate; None off CUDA."""
    if DEVICE != "cuda":
        return None
    peaks = {"reference": peak_once(verify) if verify is not None else None}
    for slot, side in zip(("ours", "candidate"), sides):
        peaks[slot] = side.peak()
    sides[0].select()
    return peaks


class InProcess:
    """A kernel loaded in this interpreter: the workload's instance calls it."""

    def __init__(self, instance, fn, kernel):
        self.instance, self.fn, self.kernel = instance, fn, kernel

    def select(self):
        self.instance.kernel = self.kernel

    def call(self):
        self.select()
        self.fn()

    def warm(self, count):
        self.select()
        for _ in range(count):
            self.fn()
            synchronize()

    def peak(self):
        self.select()
        return peak_once(self.fn)

    def time(self):
        self.select()
        return time_once(self.fn)


class Remote:
    """A candidate kernel in an interpreter of its own (this file in worker
    mode), for builds that cannot share a process with the locked one (the
    same op namespace). Each command waits for its answer."""

    def __init__(self, index, candidate):
        env = dict(os.environ, KERNELS_BENCHMARK_WORKER="1")
        self.process = subprocess.Popen(
            [sys.executable, "-c", request["driver"]],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True,
        )
        self.ask({"op": "load", "index": index, "variant_dir": candidate["variant_dir"],
                  "package": candidate["package"]})

    def ask(self, command):
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except OSError:
            pass
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise CandidateError(["the interpreter exited (%s)" % self.process.wait()])
            if line.startswith(MARK):
                reply = json.loads(line[len(MARK):])
                break
        if reply.get("error"):
            raise CandidateError(reply["error"])
        return reply

    def begin(self, script, index, cls, method):
        reply = self.ask({"op": "setup", "script": str(script), "index": index,
                          "class": cls.__name__, "method": method})
        return RemoteSide(self, reply)

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()


class RemoteSide:
    """One workload of a `Remote` candidate, set up and called once there."""

    def __init__(self, remote, first):
        self.remote, self.first = remote, first

    def select(self):
        pass

    def warm(self, count):
        self.remote.ask({"op": "warmup", "count": count})

    def peak(self):
        return self.remote.ask({"op": "peak"})["peak"]

    def time(self):
        return self.remote.ask({"op": "time"})["ms"]

    def end(self):
        self.remote.ask({"op": "end"})


TOLERANCE = 0.05  # as `stats::TOLERANCE`


def decided(baseline, timed):
    """Whether the 95% interval of `mean(baseline) / mean(timed)` excludes 1
    or lies within +-TOLERANCE of the ratio (`stats::Verdict`, the same
    formulas: population std, `mean +- 1.96 std / sqrt(n)` of `timed`)."""
    n = len(timed)
    mean = sum(timed) / n
    base = sum(baseline) / len(baseline)
    if mean <= 0:
        return True
    std = (sum((t - mean) ** 2 for t in timed) / n) ** 0.5
    margin = 1.96 * std / n ** 0.5
    ratio = base / mean
    low = base / (mean + margin)
    high = base / (mean - margin) if mean - margin > 0 else float("inf")
    if low > 1 or high < 1:
        return True
    return low >= ratio * (1 - TOLERANCE) and high <= ratio * (1 + TOLERANCE)


def timed_rounds(verify, sides, iterations):
    """Rounds of `iterations` calls, each call of the reference and of every
    kernel in turn, repeated until every speed-up (ours over the reference,
    the candidate over ours) is decided or `budget_s` has passed: the
    reference's times (or None), each kernel's, and the number of rounds."""
    budget = request["budget_s"]
    reference = [] if verify is not None else None
    times = [[] for _ in sides]
    begin = time.perf_counter()
    rounds = 0
    while True:
        for _ in range(iterations):
            if verify is not None:
                reference.append(time_once(verify))
            for slot, side in enumerate(sides):
                times[slot].append(side.time())
        sides[0].select()
        rounds += 1
        pairs = [(reference, times[0])] if reference is not None else []
        pairs += [(times[0], t) for t in times[1:]]
        if all(decided(b, t) for b, t in pairs) or time.perf_counter() - begin >= budget:
            return reference, times, rounds


def first_calls(instance, verify, sides):
    """Each kernel's first call, checked against `verify_*`: the matches and
    largest differences (None without `verify_*`). A candidate in its own
    interpreter was called and checked there, against its own `verify_*`."""
    matches, diffs = [], []
    expected = None
    for side in sides:
        if isinstance(side, RemoteSide):
            if side.first.get("match") is not None:
                matches.append(side.first["match"])
                diffs.append(side.first.get("diff"))
            continue
        side.call()
        synchronize()
        if verify is not None and expected is None:
            expected = verify()
            synchronize()
        if expected is not None:
            matched, diff = compare(instance.out, expected)
            matches.append(matched)
            diffs.append(diff)
    return matches, diffs


def run_workload(cls, method, kernels, script, index):
    """Times `method` of `cls` with each of `kernels` (one: the locked kernel;
    two: locked and candidate) and its `verify_*` reference, interleaved call
    by call, in rounds (`timed_rounds`)."""
    workload = method[len("benchmark_"):]
    instance = seeded(cls, kernels[0])
    setup = getattr(instance, "setup_" + workload, None) or instance.setup
    setup()
    fn = getattr(instance, method)
    verify = getattr(instance, "verify_" + workload, None)
    result = {"verified": verify is not None}
    result["shape"], result["dtype"] = describe(instance.out)
    memory = torch.cuda.memory_allocated() if DEVICE == "cuda" else None
    sides = [
        kernel.begin(script, index, cls, method) if isinstance(kernel, Remote)
        else InProcess(instance, fn, kernel)
        for kernel in kernels
    ]
    try:
        matches, diffs = first_calls(instance, verify, sides)
        result["match"] = matches or None
        result["max_abs_diff"] = diffs or None
        warmup, iterations = request["warmup"], request["iterations"]
        if verify is not None:
            for _ in range(warmup):
                verify()
                synchronize()
        for side in sides:
            side.warm(warmup)
        sides[0].select()
        result["peak_bytes"] = peak_memory(verify, sides)
        reference, times, rounds = timed_rounds(verify, sides, iterations)
    finally:
        for side in sides:
            if isinstance(side, RemoteSide):
                side.end()
    result["reference_ms"] = reference
    result["ours_ms"] = times[0]
    result["candidate_ms"] = times[1] if len(times) > 1 else None
    result["rounds"] = rounds
    if memory is not None:
        # Everything that holds the instance's tensors goes before counting.
        del instance, fn, verify, setup, sides
        gc.collect()
        synchronize()
        result["leaked_bytes"] = max(0, torch.cuda.memory_allocated() - memory)
    return result


def run_kernel(index, kernel):
    key = "k%d" % index
    if key in skip:
        return
    emit({"event": "loading", "kernel": index})
    try:
        with contextlib.redirect_stdout(sys.stderr):
            modules = [load(index, kernel["variant_dir"], kernel["package"], "locked")]
            candidate = kernel.get("candidate")
            if candidate and kernel.get("candidate_apart"):
                modules.append(Remote(index, candidate))
            elif candidate:
                modules.append(load(index, candidate["variant_dir"], candidate["package"], "candidate"))
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        emit({"event": "kernel", "kernel": index, "loaded": False, "error": error_lines(error)})
        return
    emit({"event": "kernel", "kernel": index, "loaded": True})
    try:
        for script in kernel["scripts"]:
            run_script(index, Path(script), modules)
    finally:
        for module in modules:
            if isinstance(module, Remote):
                module.close()


def run_script(index, script, modules):
    if "k%d/%s" % (index, script.name) in skip:
        return
    emit({"event": "reading", "kernel": index, "script": script.name})
    try:
        with contextlib.redirect_stdout(sys.stderr):
            classes = classes_of(script, index)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        emit({"event": "script", "kernel": index, "script": script.name, "error": error_lines(error)})
        return
    emit({"event": "script", "kernel": index, "script": script.name, "error": None if classes
          else ["no Benchmark subclass defined in %s" % script.name]})
    for cls in classes:
        methods = [m for m in sorted(dir(cls)) if m.startswith("benchmark_") and callable(getattr(cls, m))]
        if not methods:
            emit({"event": "script", "kernel": index, "script": script.name,
                  "error": ["%s has no benchmark_* method" % cls.__name__]})
        for method in methods:
            ident = "k%d/%s/%s.%s" % (index, script.name, cls.__name__, method)
            if ident in skip:
                continue
            emit({"event": "begin", "id": ident, "kernel": index, "script": script.name,
                  "class": cls.__name__, "method": method[len("benchmark_"):]})
            event = {"event": "result", "id": ident}
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    event.update(run_workload(cls, method, modules, script, index))
            except BaseException as error:
                if isinstance(error, KeyboardInterrupt):
                    raise
                event["error"] = error_lines(error)
            emit(event)


class Worker:
    """The candidate's own interpreter (`Remote` on the other side): its
    kernel, the classes of each script read, the workload set up."""

    def __init__(self):
        self.module = None
        self.classes = {}
        self.instance = self.fn = None

    def handle(self, command):
        op = command["op"]
        if op == "load":
            self.module = load(command["index"], command["variant_dir"], command["package"], "candidate")
            return {}
        if op == "setup":
            return self.setup(command)
        if op == "warmup":
            for _ in range(command["count"]):
                self.fn()
                synchronize()
            return {}
        if op == "peak":
            return {"peak": peak_once(self.fn) if DEVICE == "cuda" else None}
        if op == "time":
            return {"ms": time_once(self.fn)}
        if op == "end":
            self.instance = self.fn = None
            gc.collect()
            return {}
        raise ValueError("unknown command %r" % op)

    def setup(self, command):
        script = command["script"]
        if script not in self.classes:
            found = classes_of(Path(script), command["index"])
            self.classes[script] = {cls.__name__: cls for cls in found}
        cls = self.classes[script][command["class"]]
        workload = command["method"][len("benchmark_"):]
        self.instance = seeded(cls, self.module)
        setup = getattr(self.instance, "setup_" + workload, None) or self.instance.setup
        setup()
        self.fn = getattr(self.instance, command["method"])
        verify = getattr(self.instance, "verify_" + workload, None)
        self.fn()
        synchronize()
        if verify is None:
            return {"match": None, "diff": None}
        expected = verify()
        synchronize()
        matched, diff = compare(self.instance.out, expected)
        return {"match": matched, "diff": diff}


def serve():
    """Worker mode: one answer per command until stdin closes. The process
    dies with its parent (Linux), so a main driver ended for a hang ends it."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    worker = Worker()
    while True:
        line = sys.stdin.readline()
        if not line:
            return
        try:
            with contextlib.redirect_stdout(sys.stderr):
                reply = worker.handle(json.loads(line))
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {"error": error_lines(error)}
        emit(reply)


if WORKER:
    serve()
else:
    emit({"event": "start", "machine": machine(), "timing": TIMING})
    for index, kernel in enumerate(request["kernels"]):
        run_kernel(index, kernel)
    emit({"event": "done"})
