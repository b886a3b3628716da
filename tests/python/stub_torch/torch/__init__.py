"""Stub `torch` for tests: reports the build described by environment variables.

STUB_TORCH_VERSION (default "2.7.0"), STUB_TORCH_CUDA, STUB_TORCH_HIP, STUB_TORCH_ROCM
(`torch.version.rocm`, which kernels 0.18+ read before `hip`), STUB_TORCH_XPU,
STUB_TORCH_MPS ("1" = available), STUB_TORCH_CXX11 ("0" = pre-cxx11 ABI),
STUB_TORCH_NEURON ("1" = the AWS Neuron extension is present), STUB_TORCH_TPU ("1" = torch_tpu
is loaded: `torch.backends.tpu` exists, as kernels 0.17 checks, and
`torch.accelerator.current_accelerator().type` is "tpu", as 0.18+ check),
STUB_TORCH_PRIVATEUSE1 (the private-use backend name, "npu" for Ascend; the CANN version then
comes from the `torch_npu` stub beside this package, STUB_TORCH_CANN such as "8.1.RC1"),
STUB_TORCH_ACCELERATOR (the type `torch.accelerator.current_accelerator()` reports, e.g. "tpu",
without the rest of STUB_TORCH_TPU).
A GPU is visible when STUB_TORCH_CAPABILITY ("9.0", CUDA) or STUB_TORCH_GCN_ARCH
("gfx942:sramecc+:xnack-", ROCm) is set; STUB_TORCH_DEVICE_ERROR makes querying it raise.
Only what variant detection (kernels 0.10 to 0.19) reads, plus `Tensor`, `ops` and
`library.define` for importing pure-Python kernels, is provided; and, for the benchmark
tests, list-backed tensors (`randn`, `empty_like`, `relu`, `allclose`, arithmetic) with
`manual_seed`, `cuda.synchronize`, `cuda.Event` (wall-clock backed) and
`cuda.memory_allocated` (always 0), `cuda.reset_peak_memory_stats` and
`cuda.max_memory_allocated` (STUB_TORCH_PEAK_BYTES, default 0, plus
`cuda.stub_peak_extra`, which a test kernel may set during a call and
`reset_peak_memory_stats` clears); with `STUB_TORCH_DUPLICATE_OPS=abort`, defining one op
twice in a process aborts it.
"""

import os
import types

__version__ = os.environ.get("STUB_TORCH_VERSION", "2.7.0")

version = types.SimpleNamespace(
    cuda=os.environ.get("STUB_TORCH_CUDA") or None,
    hip=os.environ.get("STUB_TORCH_HIP") or None,
    xpu=os.environ.get("STUB_TORCH_XPU") or None,
    rocm=os.environ.get("STUB_TORCH_ROCM") or None,
)
# torch 2.6+: `torch.accelerator.current_accelerator()` (kernels 0.18+ detects TPU by it).
if os.environ.get("STUB_TORCH_ACCELERATOR"):
    accelerator = types.SimpleNamespace(
        current_accelerator=lambda: types.SimpleNamespace(type=os.environ["STUB_TORCH_ACCELERATOR"])
    )


class _Mps:
    @staticmethod
    def is_available():
        return os.environ.get("STUB_TORCH_MPS") == "1"


backends = types.SimpleNamespace(mps=_Mps())

if os.environ.get("STUB_TORCH_TPU") == "1":
    backends.tpu = types.SimpleNamespace()
    _tpu = types.SimpleNamespace(type="tpu")
    accelerator = types.SimpleNamespace(current_accelerator=lambda: _tpu)


def compiled_with_cxx11_abi():
    return os.environ.get("STUB_TORCH_CXX11", "1") != "0"


# kernels 0.13+ asks for the private-use backend (Ascend NPU reports "npu").
_C = types.SimpleNamespace(
    _get_privateuse1_backend_name=lambda: os.environ.get("STUB_TORCH_PRIVATEUSE1", "privateuseone")
)

if os.environ.get("STUB_TORCH_NEURON") == "1":
    neuron = types.SimpleNamespace()


class _Cuda:
    """`torch.cuda` as the variant probe and the 0.17 arch check read it."""

    @staticmethod
    def _visible():
        return bool(os.environ.get("STUB_TORCH_CAPABILITY") or os.environ.get("STUB_TORCH_GCN_ARCH"))

    @staticmethod
    def _check():
        error = os.environ.get("STUB_TORCH_DEVICE_ERROR")
        if error:
            raise RuntimeError(error)

    def is_available(self):
        return self._visible()

    def current_device(self):
        self._check()
        return 0

    def get_device_name(self, index=None):
        self._check()
        return os.environ.get("STUB_TORCH_DEVICE_NAME", "Stub GPU")

    def get_device_capability(self, index=None):
        self._check()
        major, _, minor = os.environ.get("STUB_TORCH_CAPABILITY", "0.0").partition(".")
        return int(major), int(minor or 0)

    def get_device_properties(self, index=None):
        self._check()
        return types.SimpleNamespace(gcnArchName=os.environ.get("STUB_TORCH_GCN_ARCH", ""))

    def synchronize(self):
        pass

    def manual_seed_all(self, seed):
        pass

    def memory_allocated(self, device=None):
        return 0

    stub_peak_extra = 0

    def reset_peak_memory_stats(self, device=None):
        self.stub_peak_extra = 0

    def max_memory_allocated(self, device=None):
        return int(os.environ.get("STUB_TORCH_PEAK_BYTES", "0")) + self.stub_peak_extra

    class Event:
        """A CUDA event timed with the wall clock."""

        def __init__(self, enable_timing=False):
            self._at = None

        def record(self, stream=None):
            import time

            self._at = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end._at - self._at) * 1000.0


cuda = _Cuda()


# Enough for the pure-Python kernels of the bundled mirror to import:
# `torch.Tensor` in annotations and `torch.ops.<namespace>` lookups; and for a
# test kernel to register ops as real torch would list them:
# `torch.library.define("ns::name", schema)` adds `ns::name` to
# `torch._C._dispatch_get_all_op_names()`, and `torch.ops.ns.name` is that op.
class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32")
float16 = dtype("float16")
bfloat16 = dtype("bfloat16")

_rng = __import__("random").Random(0)


def manual_seed(seed):
    _rng.seed(seed)


class Tensor:
    """A flat list of floats with a shape, a dtype and a device."""

    def __init__(self, data=(), shape=(), dtype=float32, device="cpu"):
        self._data = list(data)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device

    def _like(self, data):
        return Tensor(data, self.shape, self.dtype, self.device)

    def _other(self, other):
        return other._data if isinstance(other, Tensor) else [other] * len(self._data)

    def __add__(self, other):
        return self._like([a + b for a, b in zip(self._data, self._other(other))])

    def __sub__(self, other):
        return self._like([a - b for a, b in zip(self._data, self._other(other))])

    def __mul__(self, other):
        return self._like([a * b for a, b in zip(self._data, self._other(other))])

    def relu(self):
        return self._like([v if v > 0 else 0.0 for v in self._data])

    def abs(self):
        return self._like([abs(v) for v in self._data])

    def max(self):
        return Tensor([max(self._data)], (), self.dtype, self.device)

    def item(self):
        return self._data[0]

    def copy_(self, other):
        self._data = list(other._data)
        return self

    def clone(self):
        return self._like(self._data)


def randn(*shape, device="cpu", dtype=float32):
    count = 1
    for d in shape:
        count *= d
    return Tensor([_rng.gauss(0.0, 1.0) for _ in range(count)], shape, dtype, device)


def empty_like(tensor):
    return tensor._like([0.0] * len(tensor._data))


def relu(tensor):
    return tensor.relu()


def allclose(a, b, rtol=1e-05, atol=1e-08):
    return a.shape == b.shape and all(
        abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a._data, b._data)
    )


_defined = []


class _OpNamespace:
    def __init__(self, name):
        self.name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _OpNamespace(f"{self.name}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"stub torch cannot run the op {self.name}")


class _Ops:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _OpNamespace(name)


ops = _Ops()


def _define(qualname, schema, **kwargs):
    # With STUB_TORCH_DUPLICATE_OPS=abort, a second definition of an op in one
    # process aborts it, as loading two builds of one op namespace does torch.
    if qualname in _defined and os.environ.get("STUB_TORCH_DUPLICATE_OPS") == "abort":
        os.abort()
    _defined.append(qualname)


library = types.SimpleNamespace(define=_define)
_C._dispatch_get_all_op_names = lambda: list(_defined)
