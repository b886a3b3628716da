# `kernels check`: imports locked kernels in the project's interpreter.
#
# Reads one JSON request on stdin (see `src/install/check.rs`, `Request`) and
# writes one line per event on stdout, each `MARK` + JSON, flushed: `start`
# (the installed `kernels` and the mechanism used), `begin` before each import
# (so that a crash names the kernel) and `result` after it, with the Python
# warnings and the WARNING records logged while it loaded. Everything the
# kernels print goes to stderr.
import contextlib
import importlib.machinery
import importlib.util
import json
import logging
import re
import sys
import traceback
import types
import warnings
from pathlib import Path

MARK = "@kernels-check@ "
OPS_LIMIT = 64
LINE_LIMIT = 300
TRACEBACK_FRAMES = 4

# Importing must leave the cache as it is: no `__pycache__` beside the sources.
sys.dont_write_bytecode = True

# `python -c` puts the working directory first on `sys.path`; an application
# does not import its kernels from there, so neither does the check.
if sys.path and sys.path[0] == "":
    sys.path.pop(0)

request = json.loads(sys.stdin.read())
real_stdout = sys.stdout


def emit(event):
    real_stdout.write(MARK + json.dumps(event) + "\n")
    real_stdout.flush()


def clip(line):
    line = line.rstrip()
    return line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"


def release(version):
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


runtime = None
try:
    import importlib.metadata as md

    runtime = md.version("kernels")
except Exception:
    pass
low, high = request["runtime_reads"]
found = release(runtime)
# Local builds (`local`): through the runtime's `get_kernel` with
# `LOCAL_KERNELS` set, which runtimes read from 0.13.
local = request.get("local", False)
if local:
    through_runtime = found is not None and found >= (0, 13)
else:
    through_runtime = (
        found is not None and found >= tuple(low) and (high is None or found < tuple(high))
    )
emit({"event": "start", "runtime": runtime, "load_kernel": through_runtime})


class ZipPackageLoader:
    """Runs the `__init__.py` of a zip-layout variant's archive."""

    def __init__(self, archive):
        import zipimport

        self.archive = archive
        self.importer = zipimport.zipimporter(str(archive))

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(self.importer.get_code("__init__"), module.__dict__)


def zip_archive(variant):
    """`<id>.zip` of a variant whose metadata.json says `"build-layout": "zip"`."""
    try:
        meta = json.loads((variant / "metadata.json").read_text())
    except Exception:
        return None
    if not isinstance(meta, dict) or meta.get("build-layout") != "zip":
        return None
    return variant / ("%s.zip" % meta.get("id"))


def load_zip(name, variant, archive):
    if not archive.is_file():
        raise FileNotFoundError("no kernel archive at %s (metadata.json says build-layout zip)" % archive)
    try:
        loader = ZipPackageLoader(archive)
    except Exception as error:
        raise ImportError("corrupt kernel archive %s: %s" % (archive, error)) from None
    spec = importlib.machinery.ModuleSpec(name, loader, origin="%s/__init__.py" % archive, is_package=True)
    spec.submodule_search_locations = [str(variant), str(archive)]
    spec.has_location = True
    return spec


def load_direct(index, kernel):
    variant = Path(kernel["variant_dir"])
    archive = zip_archive(variant)
    if archive is not None:
        name = "_kernels_check_%d_%s" % (index, kernel["package"])
        return exec_spec(name, load_zip(name, variant, archive))
    init = variant / "__init__.py"
    if not init.exists():
        init = variant / kernel["package"] / "__init__.py"
    if not init.exists():
        raise FileNotFoundError(
            "no kernel module in %s: neither __init__.py nor %s/__init__.py"
            % (variant, kernel["package"])
        )
    name = "_kernels_check_%d_%s" % (index, kernel["package"])
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    return exec_spec(name, spec)


def exec_spec(name, spec):
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load(index, kernel):
    if through_runtime:
        import kernels

        if local:
            version = kernel.get("version")
            if version is None:
                return kernels.get_kernel(kernel["repo_id"], revision="main")
            return kernels.get_kernel(kernel["repo_id"], version=version)
        return kernels.load_kernel(kernel["repo_id"], lockfile=Path(request["lockfile"]))
    return load_direct(index, kernel)


def torch_ops(namespace, ops):
    prefix = namespace + "::"
    try:
        import torch

        every = torch._C._dispatch_get_all_op_names()
        return sorted({n[len(prefix) :].split(".")[0] for n in every if n.startswith(prefix)})
    except Exception:
        try:
            return sorted(set(ops))
        except Exception:
            return []


def ops_of(module):
    ops = getattr(module, "ops", None)
    if ops is None:
        ops = getattr(getattr(module, "_ops", None), "ops", None)
    namespace = getattr(ops, "name", None)
    if isinstance(namespace, str) and namespace:
        names = torch_ops(namespace, ops)
        return {"kind": "torch_ops", "namespace": namespace, "names": names[:OPS_LIMIT], "total": len(names)}
    public = getattr(module, "__all__", None)
    if not isinstance(public, (list, tuple)):
        public = [n for n in dir(module) if not n.startswith("_")]
    names = []
    for name in public:
        value = getattr(module, str(name), None)
        if callable(value) and not isinstance(value, types.ModuleType):
            names.append(str(name))
    names = sorted(set(names))
    return {"kind": "callables", "namespace": None, "names": names[:OPS_LIMIT], "total": len(names)}


def failure(error):
    lines = traceback.format_exception_only(type(error), error)
    message = [clip(l) for l in "".join(lines).strip().splitlines()][:6]
    # The import machinery's frames and this snippet's say nothing about the
    # kernel; neither do the `^^^` markers under a line.
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not frame.filename.startswith("<frozen ") and frame.filename != "<string>"
    ]
    frames = traceback.format_list(frames[-TRACEBACK_FRAMES:])
    tail = [clip(l) for l in "".join(frames).splitlines() if l.strip(" ^~")]
    return {"loaded": False, "error": message, "traceback": tail}


class Recorder(logging.Handler):
    """Keeps the warnings the runtime logs while a kernel loads."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:
            pass


for index, kernel in enumerate(request["kernels"]):
    emit({"event": "begin", "index": index})
    result = {"event": "result", "index": index}
    recorder = Recorder()
    logging.getLogger().addHandler(recorder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with contextlib.redirect_stdout(sys.stderr):
                module = load(index, kernel)
                result.update(
                    loaded=True,
                    file=getattr(module, "__file__", None),
                    module=module.__name__,
                    ops=ops_of(module),
                )
        except KeyboardInterrupt:
            raise
        except BaseException as error:
            result.update(failure(error))
    logging.getLogger().removeHandler(recorder)
    messages = [str(w.message) for w in caught] + recorder.messages
    result["warnings"] = [clip(m) for m in messages][:8]
    emit(result)
