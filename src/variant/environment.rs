//! Environment detection: the project's Python interpreter and the torch
//! build it has, as far as variant names care.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::VariantError;
use super::mlx_only::MlxMetal;
use super::probe_receipt::ProbeReceipts;
use super::rules::Generation;
use crate::lock::declared::{DeclaredBackend, DeclaredTarget, PythonVersion};
use crate::lock::profile::{PATH_PYTHON, environment_python, project_environments};
use kernels_types::variant_name::{Backend, MinorVersion, NoarchBackend};

/// The torch build of a Python environment, as far as variant names care.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TorchEnv {
    /// `torch.__version__` major.
    pub major: u32,
    /// `torch.__version__` minor.
    pub minor: u32,
    /// `torch.version.cuda`, for example `12.6`.
    pub cuda: Option<String>,
    /// `torch.version.hip`, for example `6.3.42131-fa1d09cbd`.
    pub hip: Option<String>,
    /// `torch.version.xpu`, for example `20250101`.
    pub xpu: Option<String>,
    /// `torch.backends.mps.is_available()`.
    pub mps: bool,
    /// Whether torch has the AWS Neuron extension (`hasattr(torch, "neuron")`),
    /// which the reference (0.12.2+) checks before any other backend.
    #[serde(default)]
    pub neuron: bool,
    /// `torch.compiled_with_cxx11_abi()`.
    pub cxx11_abi: bool,
    /// `tvm_ffi.__version__` when the `tvm_ffi` module is importable.
    #[serde(default)]
    pub tvm_ffi: Option<String>,
    /// `platform.system()`, for example `Linux`.
    pub system: String,
    /// `platform.machine()`, for example `x86_64` or `arm64`.
    pub machine: String,
    /// `platform.mac_ver()[0]` on macOS, for example `15.5` (`None` when
    /// empty); reference 0.17 loads Metal arch builds only from macOS 26.
    #[serde(default)]
    pub mac_version: Option<String>,
    /// `torch.version.rocm` (torch 2.10+), for example `7.1.0`; reference
    /// 0.18+ reads the ROCm version from it before `torch.version.hip`.
    #[serde(default)]
    pub rocm: Option<String>,
    /// `torch.accelerator.current_accelerator().type` where torch has
    /// `torch.accelerator` and an accelerator is current (`cuda`, `tpu`, …);
    /// reference 0.18+ detects TPU by it.
    #[serde(default)]
    pub accelerator: Option<String>,
    /// Whether `torch.backends.tpu` exists (torch_tpu imported); reference
    /// 0.17 detects TPU by it, before any other backend.
    #[serde(default)]
    pub tpu_backend: bool,
    /// The CANN version `major.minor` of an Ascend torch (the private-use
    /// backend is `npu`; `torch_npu.utils.collect_env.get_cann_version()`
    /// parts 0 and 2), as reference 0.13+ reads it.
    #[serde(default)]
    pub cann: Option<String>,
    /// Whether the `mlx` module is importable (reference 0.19 accepts
    /// `mlx-…` variants only then).
    #[serde(default)]
    pub mlx: bool,
    /// The target's Python, which reference 0.19 checks the `cpython-X.Y-<abi>`
    /// part of a variant name against; `None`: not known, not checked.
    #[serde(default)]
    pub python: Option<PythonTarget>,
    /// Whether torch is absent: an MLX-only environment
    /// ([`crate::variant::mlx_only`]), which reference 0.19 selects for
    /// without torch. [`TorchEnv::major`] and [`TorchEnv::minor`] are then 0
    /// and every torch build (`torch…`, `torch-stable-abi-…`) is refused.
    #[serde(default)]
    pub no_torch: bool,
}

/// The Python a variant must load into: its `major.minor` and whether it is a
/// free-threaded build (`sysconfig.get_config_var("Py_GIL_DISABLED")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PythonTarget {
    /// `sys.version_info[:2]`.
    pub version: (u32, u32),
    /// Whether the interpreter is free-threaded (no GIL).
    pub free_threaded: bool,
}

/// Prints one JSON object, the [`PythonProbe`] of the interpreter: `torch`
/// (the fields of [`TorchEnv`], or `null` with `error` when torch cannot be
/// imported), `kernels` (the installed runtime's version and where its
/// metadata lives, or `null`), `modules` (for each module named after the
/// scope argument, whether it is importable) and `device` (the visible GPU).
/// The first argument is the [`ProbeScope`]: with `runtime`, torch is not
/// imported (`torch` is `null`, `error` says so).
///
/// Start-up matters (every `download` runs it): `kernels` is found by a scan
/// of `sys.path` with `importlib.metadata`'s name matching, which is left to
/// `importlib.metadata` itself (some 30 ms to import) only for what the scan
/// does not cover; the JSON is written by a small encoder (ASCII, `\u`
/// escapes) instead of the `json` module (some 9 ms).
const DETECT_SNIPPET: &str = r#"
import os, sys
out = {"torch": None, "kernels": None, "modules": {}, "device": {"kind": "none"}}
out["paths"] = [p for p in sys.path if p and os.path.isdir(p)]
def dump(v):
    if v is None or isinstance(v, bool):
        return {None: "null", True: "true", False: "false"}[v]
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        chars = []
        for c in v:
            o = ord(c)
            if 32 <= o < 127 and c not in '"\\':
                chars.append(c)
            elif o < 0x10000:
                chars.append("\\u%04x" % o)
            else:
                o -= 0x10000
                chars.append("\\u%04x\\u%04x" % (0xD800 | o >> 10, 0xDC00 | o & 0x3FF))
        return '"' + "".join(chars) + '"'
    if isinstance(v, dict):
        return "{" + ", ".join(dump(k) + ": " + dump(x) for k, x in v.items()) + "}"
    return "[" + ", ".join(dump(x) for x in v) + "]"
def scan():
    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if sys.version_info < (3, 10) or [getattr(f, "__name__", "") for f in finders] != ["PathFinder"]:
        return None
    for entry in sys.path:
        root = entry or "."
        if not os.path.isdir(root):
            if os.path.exists(root):
                return None
            continue
        if entry and (not os.path.isabs(entry) or os.path.normpath(entry) != entry
                      or os.path.basename(entry).lower().endswith(".egg")):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            return None
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if low.rpartition(".")[0].partition("-")[0] != "kernels":
                continue
            for name in ("METADATA", "PKG-INFO"):
                try:
                    with open(os.path.join(root, child, name), encoding="utf-8") as f:
                        head = f.read().split("\n\n", 1)[0]
                except OSError:
                    continue
                for line in head.splitlines():
                    key, _, value = line.partition(":")
                    if key.lower() == "version" and value.strip():
                        return {"version": value.strip(), "location": entry or "."}
                return None
            return None
    return {}
try:
    found = scan()
    if found is None:
        import importlib.metadata as md
        dist = md.distribution("kernels")
        found = {"version": dist.version, "location": str(dist.locate_file(""))}
    out["kernels"] = found or None
except Exception:
    pass
try:
    import sysconfig
    out["python"] = {"major": sys.version_info[0], "minor": sys.version_info[1],
                     "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED"))}
except Exception:
    pass
try:
    import importlib.util
    for name in sys.argv[2:]:
        try:
            out["modules"][name] = importlib.util.find_spec(name) is not None
        except Exception:
            out["modules"][name] = False
except Exception:
    pass
if sys.argv[1:2] == ["runtime"]:
    out["error"] = "torch was not asked"
    print(dump(out))
    sys.exit(0)
try:
    import torch
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
    try:
        import importlib.util
        if importlib.util.find_spec("mlx") is not None:
            import mlx.core as mx
            if mx.metal.is_available():
                import platform
                try:
                    import tvm_ffi
                    tvm = str(tvm_ffi.__version__)
                except Exception:
                    tvm = None
                out["mlx_metal"] = {"system": platform.system(), "machine": platform.machine(),
                                    "mac_version": platform.mac_ver()[0] or None, "tvm_ffi": tvm}
    except Exception:
        pass
    print(dump(out))
    sys.exit(0)
import platform, re
m = re.match(r"(\d+)\.(\d+)", torch.__version__)
def call(f, default):
    try:
        return bool(f())
    except Exception:
        return default
try:
    import tvm_ffi
    tvm = str(tvm_ffi.__version__)
except Exception:
    tvm = None
def accelerator():
    try:
        acc = torch.accelerator.current_accelerator() if hasattr(torch, "accelerator") else None
        return None if acc is None else str(acc.type)
    except Exception:
        return None
def cann():
    try:
        if torch._C._get_privateuse1_backend_name() != "npu":
            return None
        from torch_npu.utils.collect_env import get_cann_version
        v = get_cann_version()
        return "%s.%s" % (v[0], v[2])
    except Exception:
        return None
import importlib.util
out["torch_dir"] = os.path.dirname(os.path.abspath(torch.__file__))
out["torch"] = {
    "major": int(m.group(1)), "minor": int(m.group(2)),
    "cuda": torch.version.cuda, "hip": torch.version.hip,
    "xpu": getattr(torch.version, "xpu", None),
    "mps": call(lambda: torch.backends.mps.is_available(), False),
    "neuron": hasattr(torch, "neuron"),
    "cxx11_abi": call(torch.compiled_with_cxx11_abi, True),
    "tvm_ffi": tvm,
    "system": platform.system(), "machine": platform.machine(),
    "mac_version": platform.mac_ver()[0] or None,
    "rocm": getattr(torch.version, "rocm", None),
    "accelerator": accelerator(), "cann": cann(),
    "tpu_backend": hasattr(torch.backends, "tpu"),
    "mlx": importlib.util.find_spec("mlx") is not None}
try:
    gpu = getattr(torch, "cuda", None)
    if gpu is not None and (torch.version.cuda or torch.version.hip) and gpu.is_available():
        index = gpu.current_device()
        name = str(gpu.get_device_name(index))
        if torch.version.hip:
            arch = str(gpu.get_device_properties(index).gcnArchName)
            out["device"] = {"kind": "rocm", "name": name, "arch": arch.split(":")[0]}
        else:
            major, minor = gpu.get_device_capability(index)
            out["device"] = {"kind": "cuda", "name": name, "capability": [int(major), int(minor)]}
except Exception as e:
    out["device"] = {"kind": "error", "error": "%s: %s" % (type(e).__name__, e)}
print(dump(out))
"#;

#[derive(Deserialize)]
struct DetectOutput {
    torch: Option<TorchEnv>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    kernels: Option<ProbedRuntime>,
    #[serde(default)]
    modules: BTreeMap<String, bool>,
    #[serde(default)]
    device: Option<Device>,
    #[serde(default)]
    python: Option<InterpreterPython>,
    /// The existing directories of `sys.path` (watched by the probe receipts).
    #[serde(default)]
    paths: Vec<PathBuf>,
    /// The directory torch was imported from (watched by the probe receipts).
    #[serde(default)]
    torch_dir: Option<PathBuf>,
    /// Without torch: MLX with a Metal device.
    #[serde(default)]
    mlx_metal: Option<MlxMetal>,
}

/// The interpreter's own version and build, as 0.19.1 reads them for
/// selection: `sys.version_info[:2]` and `sysconfig`'s `Py_GIL_DISABLED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct InterpreterPython {
    /// `sys.version_info.major`.
    pub major: u32,
    /// `sys.version_info.minor`.
    pub minor: u32,
    /// A free-threaded (no-GIL) build.
    pub free_threaded: bool,
}

impl From<InterpreterPython> for PythonTarget {
    fn from(found: InterpreterPython) -> PythonTarget {
        PythonTarget {
            version: (found.major, found.minor),
            free_threaded: found.free_threaded,
        }
    }
}

/// What one run of the project's interpreter reports ([`PythonProbe::run`]):
/// its torch build, the `kernels` runtime it imports, which modules of the
/// `python-depends` allow-list it can import, and its GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonProbe {
    /// The interpreter that was asked.
    pub python: PathBuf,
    /// The torch build, or the import error's text (`ModuleNotFoundError: …`).
    pub torch: Result<TorchEnv, String>,
    /// The `kernels` distribution `importlib.metadata` finds (any layout:
    /// a virtual environment, `--user`, `--target` on `PYTHONPATH`, conda,
    /// `dist-packages`), `None` when it finds none.
    pub kernels: Option<ProbedRuntime>,
    /// For each module asked about, whether `importlib.util.find_spec` finds it.
    pub modules: BTreeMap<String, bool>,
    /// The visible GPU (only asked when torch imports).
    pub device: Device,
    /// The interpreter's version and build; `None` when it did not say.
    pub interpreter: Option<InterpreterPython>,
    /// When torch cannot be imported but MLX reports a Metal device: the
    /// facts 0.19 selects with ([`MlxMetal::env`]); `None` otherwise.
    pub mlx_metal: Option<MlxMetal>,
}

/// The `kernels` distribution an interpreter imports.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProbedRuntime {
    /// Its version as installed, e.g. `0.17.2` (may not be PEP 440).
    pub version: String,
    /// The directory its metadata is found in (`site-packages`, a
    /// `PYTHONPATH` entry, …).
    pub location: PathBuf,
}

/// The GPU that torch sees, as the 0.17.2 runtime's arch check reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Device {
    /// No GPU is visible (or torch is CPU-only, or torch was not imported):
    /// the arch rule is not checked.
    None,
    /// A CUDA device: `torch.cuda.get_device_capability()`.
    Cuda {
        /// `torch.cuda.get_device_name()`.
        name: String,
        /// `(major, minor)`, e.g. `(9, 0)` for an H100/H200.
        capability: (u32, u32),
    },
    /// A ROCm device: `gcnArchName` without feature flags, e.g. `gfx942`.
    Rocm {
        /// `torch.cuda.get_device_name()`.
        name: String,
        /// The GCN arch name.
        arch: String,
    },
    /// Querying the device failed; the arch rule is not checked.
    Error {
        /// The Python exception, `Type: message`.
        error: String,
    },
}

/// The interpreter of the project's environment: `$VIRTUAL_ENV/bin/python`,
/// else `<project>/.venv/bin/python` (`Scripts\python.exe` on Windows), else
/// `python3` from `PATH`: the first interpreter that exists among the
/// environments of [`project_environments`], which the lookup of the installed
/// `kernels` ([`crate::lock::profile::installed_kernels`]) tries in the same order.
pub fn project_python(project_dir: &Path, virtual_env: Option<&Path>) -> PathBuf {
    project_environments(project_dir, virtual_env)
        .into_iter()
        .map(|(_, prefix)| environment_python(&prefix))
        .find(|python| python.exists())
        .unwrap_or_else(|| PathBuf::from(PATH_PYTHON))
}

/// How much a [`PythonProbe`] asks the interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProbeScope {
    /// The installed `kernels` and the modules only: no `import torch`, so a
    /// start of the interpreter and `importlib.metadata` (tens of
    /// milliseconds), for commands that choose a target runtime but no
    /// variant (`kernels lock`).
    Runtime,
    /// Everything, torch and its GPU included (importing a real torch takes
    /// a second or more).
    Torch,
}

impl ProbeScope {
    /// [`ProbeScope::Torch`] when the command detects torch next, else
    /// [`ProbeScope::Runtime`].
    pub fn torch_if(needs_torch: bool) -> ProbeScope {
        if needs_torch {
            ProbeScope::Torch
        } else {
            ProbeScope::Runtime
        }
    }

    fn arg(self) -> &'static str {
        match self {
            ProbeScope::Runtime => "runtime",
            ProbeScope::Torch => "torch",
        }
    }
}

impl PythonProbe {
    /// Runs `python` once with the probe snippet, asking also whether each
    /// of `modules` is importable. Errors only when the interpreter cannot
    /// run or prints no probe; a torch that cannot be imported is
    /// [`PythonProbe::torch`]'s `Err`.
    pub fn run(python: &Path, modules: &[&str]) -> Result<PythonProbe, VariantError> {
        PythonProbe::run_scoped(python, ProbeScope::Torch, modules)
    }

    /// [`PythonProbe::run`] asking only what `scope` covers; with
    /// [`ProbeScope::Runtime`], [`PythonProbe::torch`] is an `Err` saying
    /// that torch was not asked.
    pub fn run_scoped(
        python: &Path,
        scope: ProbeScope,
        modules: &[&str],
    ) -> Result<PythonProbe, VariantError> {
        let line = PythonProbe::output(python, scope, modules)?;
        Ok(PythonProbe::parse(python, &line)?.0)
    }

    /// Runs the probe snippet and returns the JSON line it printed. Errors
    /// when the interpreter cannot run, fails or prints no probe.
    fn output(python: &Path, scope: ProbeScope, modules: &[&str]) -> Result<String, VariantError> {
        let failed = |reason: String| VariantError::PythonFailed {
            python: python.to_owned(),
            reason,
        };
        let output = Command::new(python)
            .arg("-c")
            .arg(DETECT_SNIPPET)
            .arg(scope.arg())
            .args(modules)
            .output()
            .map_err(|err| failed(err.to_string()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(failed(format!(
                "{}: {}",
                output.status,
                stderr.trim().lines().last().unwrap_or("")
            )));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        stdout
            .lines()
            .rev()
            .find(|line| serde_json::from_str::<DetectOutput>(line).is_ok())
            .map(str::to_owned)
            .ok_or_else(|| failed(format!("unexpected output {:?}", stdout.trim())))
    }

    /// The probe of `python` from the JSON `line` its snippet printed, with
    /// the directories a receipt of it watches (`sys.path`, torch's and the
    /// installed `kernels`' locations).
    fn parse(python: &Path, line: &str) -> Result<(PythonProbe, Vec<PathBuf>), VariantError> {
        let parsed: DetectOutput =
            serde_json::from_str(line).map_err(|err| VariantError::PythonFailed {
                python: python.to_owned(),
                reason: format!("unexpected output {line:?}: {err}"),
            })?;
        let mut watched = parsed.paths;
        watched.extend(parsed.torch_dir);
        watched.extend(parsed.kernels.as_ref().map(|k| k.location.clone()));
        let torch = parsed
            .torch
            .map(|torch| TorchEnv {
                python: torch.python.or(parsed.python.map(PythonTarget::from)),
                ..torch
            })
            .ok_or_else(|| parsed.error.unwrap_or_else(|| "import failed".to_owned()));
        let probe = PythonProbe {
            python: python.to_owned(),
            torch,
            kernels: parsed.kernels,
            modules: parsed.modules,
            device: parsed.device.unwrap_or(Device::None),
            interpreter: parsed.python,
            mlx_metal: parsed.mlx_metal,
        };
        Ok((probe, watched))
    }
}

/// The project's interpreter ([`project_python`]), asked at most once per
/// command: the first question runs a [`PythonProbe`] and every later one
/// reuses its answer (the target runtime, torch, and, for the fit checks, the
/// modules and the GPU).
#[derive(Debug)]
pub struct ProjectPython {
    python: PathBuf,
    modules: Vec<String>,
    /// A [`ProbeScope::Runtime`] probe, or its failure.
    runtime: OnceCell<Result<PythonProbe, String>>,
    /// A [`ProbeScope::Torch`] probe, or its failure.
    full: OnceCell<Result<PythonProbe, String>>,
    /// Where probes are stored and looked up, when the command keeps them.
    receipts: Option<ProbeReceipts>,
    /// A probe that ran and is stored when the command ends (on drop), so
    /// that the receipt's write does not land in the middle of the command's
    /// own work (a cache's free-space check): scope, output line, watched
    /// directories.
    unstored: std::cell::RefCell<Option<(ProbeScope, String, Vec<PathBuf>)>>,
}

impl Drop for ProjectPython {
    fn drop(&mut self) {
        if let (Some(receipts), Some((scope, line, watched))) =
            (&self.receipts, self.unstored.get_mut().take())
        {
            receipts.store(&self.python, scope, &self.modules, &line, &watched);
        }
    }
}

impl ProjectPython {
    /// The interpreter `python`, not yet started.
    pub fn new(python: PathBuf) -> ProjectPython {
        ProjectPython {
            python,
            modules: Vec::new(),
            runtime: OnceCell::new(),
            full: OnceCell::new(),
            receipts: None,
            unstored: std::cell::RefCell::new(None),
        }
    }

    /// The interpreter of the project's environment ([`project_python`]).
    pub fn for_project(project_dir: &Path, virtual_env: Option<&Path>) -> ProjectPython {
        ProjectPython::new(project_python(project_dir, virtual_env))
    }

    /// Also asks whether each of `modules` is importable
    /// ([`PythonProbe::modules`]); set before the first question.
    #[must_use]
    pub fn with_modules(mut self, modules: &[&str]) -> ProjectPython {
        self.modules = modules.iter().map(|m| (*m).to_owned()).collect();
        self
    }

    /// Reuses a stored probe whose interpreter fingerprint still matches
    /// instead of starting the interpreter, and stores the probe that ran
    /// when this value is dropped ([`ProbeReceipts`]); set before the first
    /// question.
    #[must_use]
    pub fn with_receipts(mut self, receipts: ProbeReceipts) -> ProjectPython {
        self.receipts = Some(receipts);
        self
    }

    /// The interpreter's path as [`project_python`] gives it.
    pub fn path(&self) -> &Path {
        &self.python
    }

    /// A probe that asked at least what `scope` covers: the one already run,
    /// else a new run. Errors (every time it is asked) when the interpreter
    /// could not run.
    pub fn probe(&self, scope: ProbeScope) -> Result<&PythonProbe, VariantError> {
        let answer = match (scope, self.full.get(), self.runtime.get()) {
            (_, Some(full), _) => full,
            (ProbeScope::Runtime, None, Some(runtime)) => runtime,
            (ProbeScope::Runtime, None, None) => match self.stored(ProbeScope::Runtime) {
                Some((ProbeScope::Torch, probe)) => self.full.get_or_init(|| Ok(probe)),
                Some((ProbeScope::Runtime, probe)) => self.runtime.get_or_init(|| Ok(probe)),
                None => self.runtime.get_or_init(|| self.run(ProbeScope::Runtime)),
            },
            (ProbeScope::Torch, None, _) => {
                self.full
                    .get_or_init(|| match self.stored(ProbeScope::Torch) {
                        Some((_, probe)) => Ok(probe),
                        None => self.run(ProbeScope::Torch),
                    })
            }
        };
        answer
            .as_ref()
            .map_err(|reason| VariantError::PythonFailed {
                python: self.python.clone(),
                reason: reason.clone(),
            })
    }

    /// A stored probe that asked at least `scope`, with the scope it asked,
    /// when the receipts are kept and the interpreter's fingerprint matches.
    fn stored(&self, scope: ProbeScope) -> Option<(ProbeScope, PythonProbe)> {
        let (stored, line) = self
            .receipts
            .as_ref()?
            .load(&self.python, scope, &self.modules)?;
        let (probe, _) = PythonProbe::parse(&self.python, &line).ok()?;
        Some((stored, probe))
    }

    /// Starts the interpreter for a `scope` probe and stores what it printed.
    fn run(&self, scope: ProbeScope) -> Result<PythonProbe, String> {
        let modules: Vec<&str> = self.modules.iter().map(String::as_str).collect();
        let reason = |err| match err {
            VariantError::PythonFailed { reason, .. } => reason,
            other => other.to_string(),
        };
        let line = PythonProbe::output(&self.python, scope, &modules).map_err(reason)?;
        let (probe, watched) = PythonProbe::parse(&self.python, &line).map_err(reason)?;
        if self.receipts.is_some() {
            *self.unstored.borrow_mut() = Some((scope, line, watched));
        }
        Ok(probe)
    }

    /// The most complete probe run so far, if one ran and succeeded.
    pub fn probed(&self) -> Option<&PythonProbe> {
        self.full
            .get()
            .or(self.runtime.get())
            .and_then(|answer| answer.as_ref().ok())
    }

    /// The MLX-only environment of the interpreter as a runtime of
    /// `generation` selects for it ([`MlxMetal::env`]): `None` when torch
    /// imports, MLX reports no Metal device, the interpreter cannot run, or
    /// the runtime is older than 0.19.
    pub fn mlx_only(&self, generation: Generation) -> Option<TorchEnv> {
        let probe = self.probe(ProbeScope::Torch).ok()?;
        let python = probe.interpreter.map(PythonTarget::from);
        probe.mlx_metal.as_ref()?.env(generation, python)
    }

    /// The torch build of the interpreter (one [`ProbeScope::Torch`] probe).
    /// Errors when the interpreter cannot run or torch cannot be imported.
    pub fn torch(&self) -> Result<TorchEnv, VariantError> {
        let probe = self.probe(ProbeScope::Torch)?;
        probe.torch.clone().map_err(|reason| VariantError::NoTorch {
            python: self.python.clone(),
            reason,
        })
    }
}

/// Leading `major.minor` digits of a version such as `12.6` or `6.3.42131-fa1d`.
pub(super) fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

impl TorchEnv {
    /// Runs `python` with a short snippet that imports torch and reports its
    /// build ([`PythonProbe::run`] without modules). Errors when the
    /// interpreter cannot run or torch is not importable.
    pub fn detect(python: &Path) -> Result<TorchEnv, VariantError> {
        let probe = PythonProbe::run(python, &[])?;
        probe.torch.map_err(|reason| VariantError::NoTorch {
            python: python.to_owned(),
            reason,
        })
    }

    /// The compute backend the reference selects for this torch, checked in
    /// the reference's order: Neuron, CUDA, ROCm, Metal, XPU, else CPU. The
    /// XPU version is `version[0:4]` `.` `version[5:6]` of `torch.version.xpu`
    /// (`20250101` → 2025.0), as the reference computes it.
    pub fn backend(&self) -> Backend {
        self.backend_with_rocm(self.hip.as_deref())
    }

    /// The compute backend as a runtime of `generation` selects it: up to
    /// 0.17 [`TorchEnv::backend`]; from 0.18 TPU first when
    /// [`TorchEnv::accelerator`] is `tpu`, and the ROCm version from
    /// `torch.version.rocm` before `torch.version.hip` (reference 0.18
    /// `backends.py` `_backend`).
    pub fn backend_for(&self, generation: Generation) -> Backend {
        if generation <= Generation::V017 {
            // 0.17 takes TPU from `torch.backends.tpu` (set by torch_tpu),
            // before every other backend; earlier runtimes know no TPU.
            if generation == Generation::V017 && self.tpu_backend {
                return Backend::Tpu;
            }
            return self.backend();
        }
        if self.accelerator.as_deref() == Some("tpu") {
            return Backend::Tpu;
        }
        let rocm = self
            .hip
            .as_deref()
            .map(|hip| self.rocm.as_deref().unwrap_or(hip));
        self.backend_with_rocm(rocm)
    }

    /// [`TorchEnv::backend`] with the ROCm version read from `rocm` (a ROCm
    /// torch is one with `torch.version.hip`).
    fn backend_with_rocm(&self, rocm: Option<&str>) -> Backend {
        if self.neuron {
            Backend::Neuron
        } else if let Some((maj, min)) = self.cuda.as_deref().and_then(major_minor) {
            Backend::Cuda(MinorVersion::new(maj, min))
        } else if let Some((maj, min)) = rocm.and_then(major_minor) {
            Backend::Rocm(MinorVersion::new(maj, min))
        } else if self.mps {
            Backend::Metal
        } else if let Some(xpu) = &self.xpu {
            let year: String = xpu.chars().take(4).collect();
            let minor: String = xpu.chars().skip(5).take(1).collect();
            match (year.parse(), minor.parse()) {
                (Ok(year), Ok(minor)) => Backend::Xpu(Some(MinorVersion::new(year, minor))),
                _ => Backend::Xpu(None),
            }
        } else if let Some((maj, min)) = self.cann.as_deref().and_then(major_minor) {
            Backend::Cann(MinorVersion::new(maj, min))
        } else {
            Backend::Cpu
        }
    }

    /// The compute part of the arch variant: `cu{MAJ}{MIN}`, `rocm{MAJ}{MIN}`,
    /// `metal`, `xpu{YYYY}{N}`, `neuron` or `cpu` (see [`TorchEnv::backend`]).
    pub fn compute(&self) -> String {
        self.backend().to_string()
    }

    /// The lower-case OS name (`linux`, `darwin`, `windows`).
    pub(super) fn os(&self) -> String {
        self.system.to_lowercase()
    }

    /// The CPU as written in variant names: macOS `arm64` is `aarch64`,
    /// Windows `AMD64` is `x86_64`.
    pub(super) fn cpu(&self) -> String {
        match (self.os().as_str(), self.machine.as_str()) {
            ("darwin", "arm64") => "aarch64".to_owned(),
            ("windows", m) if m.eq_ignore_ascii_case("amd64") => "x86_64".to_owned(),
            ("windows", m) if m.eq_ignore_ascii_case("arm64") => "aarch64".to_owned(),
            (_, m) => m.to_owned(),
        }
    }

    /// The arch variant name (`variants.md` grammar):
    /// Linux `torch{MAJ}{MIN}-{cxx11|cxx98}-{compute}-{cpu}-linux`,
    /// macOS `torch{MAJ}{MIN}-{compute}-{cpu}-darwin` (`arm64` → `aarch64`),
    /// Windows `torch{MAJ}{MIN}-{compute}-{cpu}-windows` (`AMD64` → `x86_64`).
    pub fn arch_variant(&self) -> String {
        self.arch_variant_with(self.backend())
    }

    /// [`TorchEnv::arch_variant`] for the compute backend `backend` (as a
    /// runtime generation detects it, [`TorchEnv::backend_for`]).
    pub(super) fn arch_variant_with(&self, backend: Backend) -> String {
        let os = self.os();
        let torch = format!("torch{}{}", self.major, self.minor);
        let compute = backend.to_string();
        let cpu = self.cpu();
        if os == "darwin" || os == "windows" {
            format!("{torch}-{compute}-{cpu}-{os}")
        } else {
            let abi = if self.cxx11_abi { "cxx11" } else { "cxx98" };
            format!("{torch}-{abi}-{compute}-{cpu}-{os}")
        }
    }

    /// The arch variant name of reference runtimes before 0.11: every OS but
    /// macOS is named like Linux, with the cxx tag and the raw
    /// `platform.machine()` (`torch27-cxx11-cu128-AMD64-windows`). `None` for
    /// a CPU-only torch, for which those runtimes have no name (their
    /// detection raises).
    pub fn arch_variant_before_0_11(&self) -> Option<String> {
        let os = self.os();
        if os == "darwin" {
            return (self.backend() != Backend::Cpu).then(|| self.arch_variant());
        }
        let compute = match self.backend() {
            // Neuron is detected from 0.12.2 on; before, such a torch is
            // whatever else it reports.
            Backend::Neuron => TorchEnv {
                neuron: false,
                ..self.clone()
            }
            .backend(),
            other => other,
        };
        if compute == Backend::Cpu {
            return None;
        }
        let abi = if self.cxx11_abi { "cxx11" } else { "cxx98" };
        Some(format!(
            "torch{}{}-{abi}-{compute}-{}-{os}",
            self.major, self.minor, self.machine
        ))
    }

    /// The macOS `major.minor` (from [`TorchEnv::mac_version`]) on macOS.
    pub(super) fn macos(&self) -> Option<(u32, u32)> {
        if self.os() != "darwin" {
            return None;
        }
        self.mac_version.as_deref().and_then(major_minor)
    }

    /// The Python-only variant: `torch-cuda`, `torch-rocm`, `torch-metal`,
    /// `torch-xpu`, `torch-neuron` or `torch-cpu`.
    pub fn noarch_variant(&self) -> String {
        format!("torch-{}", self.noarch_backend())
    }

    /// The backend name of the environment's noarch variant (`cuda`, …).
    pub(super) fn noarch_backend(&self) -> &'static str {
        self.noarch_backend_for(Generation::BeforeKernelLocks)
    }

    /// The backend name of the environment's noarch variant as a runtime of
    /// `generation` names it: Ascend's is `npu` up to 0.18, `cann` from 0.19.
    pub(super) fn noarch_backend_for(&self, generation: Generation) -> &'static str {
        match self.backend_for(generation) {
            Backend::Cann(_) if !generation.reads_dotted_names() => NoarchBackend::Npu.as_str(),
            other => other.family(),
        }
    }

    /// One line describing the environment, for status output, for example
    /// `torch 2.7 (cxx11 ABI), CUDA 12.6, x86_64-linux`.
    pub fn describe(&self) -> String {
        let mut out = if self.no_torch {
            "no torch (MLX)".to_owned()
        } else {
            format!("torch {}.{}", self.major, self.minor)
        };
        if self.os() == "linux" && !self.no_torch {
            out.push_str(if self.cxx11_abi {
                " (cxx11 ABI)"
            } else {
                " (cxx98 ABI)"
            });
        }
        let backend = self.backend();
        out.push_str(", ");
        match (backend, backend.version()) {
            (Backend::Cuda(v), _) => out.push_str(&format!("CUDA {v}")),
            (Backend::Rocm(v), _) => out.push_str(&format!("ROCm {v}")),
            (Backend::Xpu(_), Some(v)) => out.push_str(&format!("XPU {v}")),
            (Backend::Cpu, _) => out.push_str("CPU only"),
            (other, _) => out.push_str(&other.to_string()),
        }
        if let Some(tvm) = &self.tvm_ffi {
            out.push_str(&format!(", tvm-ffi {tvm}"));
        }
        out.push_str(&format!(", {}-{}", self.cpu(), self.os()));
        if self.os() == "darwin"
            && let Some(mac) = &self.mac_version
        {
            out.push_str(&format!(" (macOS {mac})"));
        }
        out
    }
}

/// Values given on the command line instead of detecting them from torch
/// (for building images on a machine without a GPU, or without torch).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvOverrides {
    /// `--torch-version MAJOR.MINOR`: with it, Python is not asked at all.
    pub torch: Option<(u32, u32)>,
    /// `--cuda-version`, e.g. `12.6`.
    pub cuda: Option<String>,
    /// `--rocm-version`, e.g. `6.3`.
    pub rocm: Option<String>,
    /// `--xpu-version`, e.g. `2025.0`.
    pub xpu: Option<String>,
    /// `--metal`.
    pub metal: bool,
    /// `--cpu`: no accelerator.
    pub cpu: bool,
    /// `--cxx-abi cxx11|cxx98`.
    pub cxx11_abi: Option<bool>,
    /// `--os` (`linux`, `darwin`, `windows`).
    pub os: Option<String>,
    /// `--arch` (`x86_64`, `aarch64`).
    pub arch: Option<String>,
    /// `--python-version MAJOR.MINOR`.
    pub python: Option<PythonVersion>,
    /// `--free-threaded`.
    pub free_threaded: bool,
    /// The declared target (`[[tool.kernels.targets]]`) and its
    /// `pyproject.toml`: each value a flag does not give is taken from it
    /// ([`EnvOverrides::resolve`]), the flags of one group (the backend)
    /// replacing the table's as a whole.
    pub declared: Option<Box<(DeclaredTarget, PathBuf)>>,
    /// The lower bound of `[project] requires-python`: the target's Python
    /// when no flag, declared target or interpreter gives one.
    pub requires_python: Option<PythonVersion>,
}

/// Where a value of the environment came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum EnvSource {
    /// Asked from torch in this interpreter.
    Python(PathBuf),
    /// Asked from MLX in this interpreter, which has no torch (the MLX-only
    /// environment of [`EnvOverrides::resolve_for`]).
    Mlx(PathBuf),
    /// Given by this command-line flag.
    Flag(&'static str),
    /// The declared target (`[[tool.kernels.targets]]`) of this `pyproject.toml`.
    Declared(PathBuf),
    /// This machine (no torch was asked).
    Host,
    /// A default: CPU backend, cxx11 ABI.
    Default,
}

impl std::fmt::Display for EnvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvSource::Python(python) => write!(f, "torch in {}", python.display()),
            EnvSource::Mlx(python) => write!(f, "MLX in {} (no torch)", python.display()),
            EnvSource::Flag(flag) => write!(f, "{flag}"),
            EnvSource::Declared(path) => {
                write!(f, "[[tool.kernels.targets]] of {}", path.display())
            }
            EnvSource::Host => f.write_str("this machine"),
            EnvSource::Default => f.write_str("default"),
        }
    }
}

/// Where each value of a [`TorchEnv`] came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EnvSources {
    /// torch version.
    pub torch: EnvSource,
    /// Compute backend (CUDA, ROCm, XPU, Metal, CPU).
    pub backend: EnvSource,
    /// C++ ABI.
    pub cxx_abi: EnvSource,
    /// OS and CPU.
    pub platform: EnvSource,
}

/// `12.6` → `12.6`; anything without a leading `major.minor` is refused.
fn check_version(flag: &str, value: &str) -> Result<(), VariantError> {
    major_minor(value)
        .map(|_| ())
        .ok_or_else(|| VariantError::BadOverride {
            flag: flag.to_owned(),
            value: value.to_owned(),
        })
}

impl EnvOverrides {
    /// The environment `target` names, as the overrides that flags give;
    /// the caller puts flags on top ([`EnvOverrides::with_declared`]).
    ///
    /// A `tpu` or `cann` backend names no override (variant selection does
    /// not model those backends from declared values yet): the project's
    /// interpreter decides the backend, which [`DeclaredTarget::unselectable_backend`](crate::lock::declared::DeclaredTarget::unselectable_backend)
    /// lets commands say.
    pub fn of_declared(target: &DeclaredTarget) -> EnvOverrides {
        let mut overrides = EnvOverrides {
            torch: target.torch,
            cxx11_abi: target.cxx11_abi,
            os: target.os.clone(),
            arch: target.arch.clone(),
            python: target.python,
            free_threaded: target.free_threaded.unwrap_or(false),
            ..EnvOverrides::default()
        };
        match target.backend {
            Some(DeclaredBackend::Cuda(v)) => overrides.cuda = Some(v.to_string()),
            Some(DeclaredBackend::Rocm(v)) => overrides.rocm = Some(v.to_string()),
            Some(DeclaredBackend::Xpu(v)) => overrides.xpu = Some(v.to_string()),
            Some(DeclaredBackend::Metal) => overrides.metal = true,
            Some(DeclaredBackend::Cpu) => overrides.cpu = true,
            Some(DeclaredBackend::Cann(_) | DeclaredBackend::Tpu) | None => {}
        }
        overrides
    }

    /// Whether no override is given.
    pub fn is_empty(&self) -> bool {
        *self == EnvOverrides::default()
    }

    /// These overrides with `declared` (a target of `path`) under them.
    #[must_use]
    pub fn with_declared(mut self, declared: Option<(&DeclaredTarget, &Path)>) -> EnvOverrides {
        self.declared = declared.map(|(target, path)| Box::new((target.clone(), path.to_owned())));
        self
    }

    /// These overrides with `floor`, the lower bound of `requires-python`.
    #[must_use]
    pub fn with_requires_python(mut self, floor: Option<PythonVersion>) -> EnvOverrides {
        self.requires_python = floor;
        self
    }

    /// The flags, each value a flag leaves open taken from the declared target.
    fn merged(&self) -> EnvOverrides {
        let Some(declared) = &self.declared else {
            return self.clone();
        };
        let table = EnvOverrides::of_declared(&declared.0);
        let backend = if self.backend_flag().is_some() {
            self
        } else {
            &table
        };
        EnvOverrides {
            torch: self.torch.or(table.torch),
            cuda: backend.cuda.clone(),
            rocm: backend.rocm.clone(),
            xpu: backend.xpu.clone(),
            metal: backend.metal,
            cpu: backend.cpu,
            cxx11_abi: self.cxx11_abi.or(table.cxx11_abi),
            os: self.os.clone().or(table.os),
            arch: self.arch.clone().or(table.arch),
            python: self.python.or(table.python),
            free_threaded: self.free_threaded || table.free_threaded,
            declared: None,
            requires_python: self.requires_python,
        }
    }

    /// Sources a flag gave in [`EnvOverrides::merged`] that the user did not
    /// type: they came from the declared target.
    fn relabel(&self, sources: &mut EnvSources) {
        let Some(declared) = &self.declared else {
            return;
        };
        let path = &declared.1;
        let from_table = |source: &mut EnvSource, typed: bool| {
            if matches!(source, EnvSource::Flag(_)) && !typed {
                *source = EnvSource::Declared(path.clone());
            }
        };
        from_table(&mut sources.torch, self.torch.is_some());
        from_table(&mut sources.backend, self.backend_flag().is_some());
        from_table(&mut sources.cxx_abi, self.cxx11_abi.is_some());
        let platform_typed = match sources.platform {
            EnvSource::Flag("--os") => self.os.is_some(),
            EnvSource::Flag("--arch") => self.arch.is_some(),
            EnvSource::Flag("--metal") => self.metal,
            _ => true,
        };
        from_table(&mut sources.platform, platform_typed);
    }

    fn backend_flag(&self) -> Option<&'static str> {
        if self.cuda.is_some() {
            Some("--cuda-version")
        } else if self.rocm.is_some() {
            Some("--rocm-version")
        } else if self.xpu.is_some() {
            Some("--xpu-version")
        } else if self.metal {
            Some("--metal")
        } else if self.cpu {
            Some("--cpu")
        } else {
            None
        }
    }

    /// Whether resolving needs torch from the project's interpreter (no
    /// `--torch-version`).
    pub fn needs_python(&self) -> bool {
        self.merged().torch.is_none()
    }

    /// The environment: detected with `python` (whose probe is reused) and
    /// then overridden, or, with `--torch-version`, made from the flags and
    /// this machine alone.
    pub fn resolve(&self, python: &ProjectPython) -> Result<(TorchEnv, EnvSources), VariantError> {
        let merged = self.merged();
        let declared_backend = self
            .declared
            .as_ref()
            .is_some_and(|d| d.0.backend.is_some());
        if let Some((major, minor)) = merged.torch
            && merged.backend_flag().is_none()
            && !declared_backend
        {
            return Err(VariantError::TorchWithoutBackend {
                from: if self.torch.is_some() {
                    "`--torch-version`".to_owned()
                } else {
                    "`torch` of [[tool.kernels.targets]]".to_owned()
                },
                torch: format!("{major}.{minor}"),
            });
        }
        let (env, mut sources) = merged.resolve_merged(python)?;
        self.relabel(&mut sources);
        Ok((env, sources))
    }

    /// The environment a runtime of `generation` selects for in this
    /// project: [`EnvOverrides::resolve`], except that when torch is taken
    /// from the interpreter and cannot be imported there, the MLX-only
    /// environment 0.19+ selects for ([`ProjectPython::mlx_only`], with
    /// every value from MLX in the interpreter); otherwise the error. Every
    /// command that decides a variant for the project's own environment
    /// calls this, so `download`, `env`, `variants`, `info` and `verify`
    /// agree.
    pub fn resolve_for(
        &self,
        python: &ProjectPython,
        generation: Generation,
    ) -> Result<(TorchEnv, EnvSources), VariantError> {
        match self.resolve(python) {
            Err(err @ VariantError::NoTorch { .. }) => match python.mlx_only(generation) {
                Some(env) => {
                    let source = EnvSource::Mlx(python.path().to_owned());
                    let sources = EnvSources {
                        torch: source.clone(),
                        backend: source.clone(),
                        cxx_abi: source.clone(),
                        platform: source,
                    };
                    Ok((env, sources))
                }
                None => Err(err),
            },
            other => other,
        }
    }

    /// [`EnvOverrides::resolve`] of overrides without a declared target.
    fn resolve_merged(
        &self,
        python: &ProjectPython,
    ) -> Result<(TorchEnv, EnvSources), VariantError> {
        for (flag, value) in [
            ("--cuda-version", &self.cuda),
            ("--rocm-version", &self.rocm),
            ("--xpu-version", &self.xpu),
        ] {
            if let Some(value) = value {
                check_version(flag, value)?;
            }
        }
        let (mut env, mut sources) = self.base(python)?;
        if let Some(flag) = self.backend_flag() {
            env.cuda = self.cuda.clone();
            env.hip = self.rocm.clone();
            env.rocm = self.rocm.clone();
            env.accelerator = None;
            env.tpu_backend = false;
            env.cann = None;
            // `torch.version.xpu` is `YYYYMMDD`-like: 2025.0 → `2025.0`
            // keeps the reference's `version[0:4]` `.` `version[5:6]`.
            env.xpu = self.xpu.clone();
            env.mps = self.metal;
            env.neuron = false;
            sources.backend = EnvSource::Flag(flag);
        }
        if let Some(abi) = self.cxx11_abi {
            env.cxx11_abi = abi;
            sources.cxx_abi = EnvSource::Flag("--cxx-abi");
        }
        self.apply_platform(&mut env, &mut sources)?;
        self.apply_python(&mut env);
        Ok((env, sources))
    }

    /// The target's Python as `crate::variant::python_target` orders it:
    /// `--python-version` (or the declared target's), else the interpreter's,
    /// else the lower bound of `requires-python`; `--free-threaded` (or the
    /// declared target's) marks it free-threaded.
    fn apply_python(&self, env: &mut TorchEnv) {
        if let Some(version) = self.python {
            env.python = Some(PythonTarget {
                version: (version.major, version.minor),
                free_threaded: self.free_threaded,
            });
        } else if let Some(found) = env.python.as_mut() {
            found.free_threaded |= self.free_threaded;
        } else if let Some(floor) = self.requires_python {
            env.python = Some(PythonTarget {
                version: (floor.major, floor.minor),
                free_threaded: self.free_threaded,
            });
        }
    }

    /// The environment before overrides: from `--torch-version` and this
    /// machine, or detected through `python`.
    fn base(&self, python: &ProjectPython) -> Result<(TorchEnv, EnvSources), VariantError> {
        if let Some((major, minor)) = self.torch {
            let env = TorchEnv {
                major,
                minor,
                cuda: None,
                hip: None,
                xpu: None,
                mps: false,
                neuron: false,
                cxx11_abi: true,
                tvm_ffi: None,
                system: host_system(),
                machine: std::env::consts::ARCH.to_owned(),
                mac_version: None,
                rocm: None,
                accelerator: None,
                tpu_backend: false,
                no_torch: false,
                cann: None,
                mlx: false,
                python: None,
            };
            let sources = EnvSources {
                torch: EnvSource::Flag("--torch-version"),
                backend: EnvSource::Default,
                cxx_abi: EnvSource::Default,
                platform: EnvSource::Host,
            };
            return Ok((env, sources));
        }
        let source = EnvSource::Python(python.path().to_owned());
        let torch = python
            .torch()
            .map_err(|err| match (self.backend_flag(), &err) {
                (
                    Some(flag),
                    VariantError::NoTorch { python, reason }
                    | VariantError::PythonFailed { python, reason },
                ) => VariantError::BackendWithoutTorch {
                    flag: self.backend_text(flag),
                    python: python.clone(),
                    reason: reason.clone(),
                },
                _ => err,
            })?;
        let sources = EnvSources {
            torch: source.clone(),
            backend: source.clone(),
            cxx_abi: source.clone(),
            platform: source,
        };
        Ok((torch, sources))
    }

    /// `flag` (a [`EnvOverrides::backend_flag`]) with its value, as typed.
    fn backend_text(&self, flag: &str) -> String {
        match [&self.cuda, &self.rocm, &self.xpu]
            .into_iter()
            .flatten()
            .next()
        {
            Some(value) => format!("`{flag} {value}`"),
            None => format!("`{flag}`"),
        }
    }

    /// `--os`, `--arch` and what `--metal` implies for the platform.
    fn apply_platform(
        &self,
        env: &mut TorchEnv,
        sources: &mut EnvSources,
    ) -> Result<(), VariantError> {
        if let Some(os) = &self.os {
            env.system = match os.to_lowercase().as_str() {
                "linux" => "Linux".to_owned(),
                "darwin" | "macos" => "Darwin".to_owned(),
                "windows" => "Windows".to_owned(),
                _ => os.clone(),
            };
            sources.platform = EnvSource::Flag("--os");
        }
        if let Some(arch) = &self.arch {
            env.machine = arch.clone();
            sources.platform = EnvSource::Flag("--arch");
        }
        if !self.metal {
            return Ok(());
        }
        // Metal builds exist for Apple silicon macOS only: `--metal` alone
        // means darwin on aarch64; another OS with it is a contradiction.
        match self.os.as_deref().map(str::to_lowercase).as_deref() {
            None => {
                env.system = "Darwin".to_owned();
                if self.arch.is_none() {
                    env.machine = "aarch64".to_owned();
                }
                sources.platform = EnvSource::Flag("--metal");
                Ok(())
            }
            Some("darwin" | "macos") => Ok(()),
            Some(os) => Err(VariantError::ConflictingOverrides {
                detail: format!("`--metal` with `--os {os}`: Metal builds are for macOS"),
            }),
        }
    }
}

/// `platform.system()` of this machine.
fn host_system() -> String {
    match std::env::consts::OS {
        "linux" => "Linux".to_owned(),
        "macos" => "Darwin".to_owned(),
        "windows" => "Windows".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::TorchEnv;
    use crate::variant::testing::env;

    #[test]
    fn arch_variants_follow_the_grammar() {
        let cuda = env(Some("12.6"), "Linux", "x86_64");
        assert_eq!(cuda.arch_variant(), "torch27-cxx11-cu126-x86_64-linux");
        assert_eq!(
            cuda.preference(true),
            [
                "torch27-cxx11-cu126-x86_64-linux",
                "torch-cuda",
                "torch-universal"
            ]
        );
        let rocm = TorchEnv {
            cuda: None,
            hip: Some("6.3.42131-fa1d09cbd".into()),
            cxx11_abi: false,
            ..cuda.clone()
        };
        assert_eq!(rocm.arch_variant(), "torch27-cxx98-rocm63-x86_64-linux");
        assert_eq!(rocm.noarch_variant(), "torch-rocm");
        let xpu = TorchEnv {
            cuda: None,
            xpu: Some("20250301".into()),
            ..cuda.clone()
        };
        assert_eq!(xpu.arch_variant(), "torch27-cxx11-xpu20253-x86_64-linux");
        let mac = TorchEnv {
            mps: true,
            ..env(None, "Darwin", "arm64")
        };
        assert_eq!(mac.arch_variant(), "torch27-metal-aarch64-darwin");
        assert_eq!(mac.noarch_variant(), "torch-metal");
        let win = env(Some("12.8"), "Windows", "AMD64");
        assert_eq!(win.arch_variant(), "torch27-cu128-x86_64-windows");
        let cpu = env(None, "Linux", "aarch64");
        assert_eq!(cpu.arch_variant(), "torch27-cxx11-cpu-aarch64-linux");
        assert_eq!(cpu.noarch_variant(), "torch-cpu");
    }

    #[test]
    fn overrides_make_an_environment_without_python() {
        let overrides = super::EnvOverrides {
            torch: Some((2, 13)),
            cuda: Some("12.6".into()),
            os: Some("linux".into()),
            arch: Some("x86_64".into()),
            ..Default::default()
        };
        let (env, sources) = overrides
            .resolve(&super::ProjectPython::new("/nonexistent/python".into()))
            .unwrap();
        assert_eq!(env.arch_variant(), "torch213-cxx11-cu126-x86_64-linux");
        assert_eq!(sources.backend, super::EnvSource::Flag("--cuda-version"));
        let bad = super::EnvOverrides {
            torch: Some((2, 8)),
            cuda: Some("twelve".into()),
            ..Default::default()
        };
        assert!(
            bad.resolve(&super::ProjectPython::new("/x".into()))
                .is_err()
        );
    }

    /// A fake interpreter that logs its scope argument to `runs` and prints
    /// a probe with kernels 0.17.2 and a CPU torch.
    #[cfg(unix)]
    fn fake_python(dir: &std::path::Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let python = dir.join("python3");
        let probe = r#"{"torch": {"major": 2, "minor": 8, "cuda": null, "hip": null, "mps": false, "cxx11_abi": true, "system": "Linux", "machine": "x86_64"}, "kernels": {"version": "0.17.2", "location": "/deps"}, "modules": {}, "device": {"kind": "none"}}"#;
        fs_err::write(
            &python,
            format!(
                "#!/bin/sh\necho \"$3\" >> {}\necho '{probe}'\n",
                dir.join("runs").display()
            ),
        )
        .unwrap();
        fs_err::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        python
    }

    #[cfg(unix)]
    #[test]
    fn project_python_is_started_once_per_scope_asked() {
        use super::{ProbeScope, ProjectPython};
        let tmp = tempfile::tempdir().unwrap();
        let runs = || fs_err::read_to_string(tmp.path().join("runs")).unwrap_or_default();
        let python = ProjectPython::new(fake_python(tmp.path()));
        assert!(python.probed().is_none());
        // The runtime first, then torch: the torch probe covers both.
        let kernels = python.probe(ProbeScope::Runtime).unwrap().kernels.clone();
        assert_eq!(kernels.unwrap().version, "0.17.2");
        assert_eq!(
            python.torch().unwrap().arch_variant(),
            "torch28-cxx11-cpu-x86_64-linux"
        );
        python.probe(ProbeScope::Runtime).unwrap();
        python.torch().unwrap();
        assert_eq!(runs(), "runtime\ntorch\n");
        // Torch first: one run answers everything.
        fs_err::remove_file(tmp.path().join("runs")).unwrap();
        let python = ProjectPython::new(fake_python(tmp.path()));
        python.torch().unwrap();
        python.probe(ProbeScope::Runtime).unwrap();
        assert!(python.probed().is_some());
        assert_eq!(runs(), "torch\n");
        // An interpreter that cannot run fails every question, once.
        let missing = ProjectPython::new(tmp.path().join("no-python"));
        assert!(missing.probe(ProbeScope::Runtime).is_err());
        assert!(matches!(
            missing.torch(),
            Err(crate::variant::VariantError::PythonFailed { .. })
        ));
    }

    /// `sys.path` layouts under `tmp` (each a list of entries) for
    /// [`the_runtime_scan_agrees_with_importlib_metadata`]: names in both
    /// cases, an `.egg-info`, a missing entry and a near-miss name before the
    /// match, a zip (left to importlib) and no `kernels` at all.
    #[cfg(unix)]
    fn scan_layouts(tmp: &std::path::Path) -> Vec<Vec<String>> {
        let dir = |name: &str, entries: &[(&str, &str)]| {
            let root = tmp.join(name);
            for (path, text) in entries {
                let file = root.join(path);
                fs_err::create_dir_all(file.parent().unwrap()).unwrap();
                fs_err::write(file, text).unwrap();
            }
            fs_err::create_dir_all(&root).unwrap();
            root.display().to_string()
        };
        let metadata = |version: &str| {
            format!("Metadata-Version: 2.1\nName: kernels\nVersion: {version}\n\nVersion: 9\n")
        };
        let zip = tmp.join("deps.zip");
        let mut writer = zip::ZipWriter::new(fs_err::File::create(&zip).unwrap());
        writer
            .start_file(
                "kernels-0.12.1.dist-info/METADATA",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
        std::io::Write::write_all(&mut writer, metadata("0.12.1").as_bytes()).unwrap();
        writer.finish().unwrap();
        vec![
            vec![dir(
                "plain",
                &[("kernels-0.17.2.dist-info/METADATA", &metadata("0.17.2"))],
            )],
            vec![dir(
                "upper",
                &[("Kernels-0.10.5.dist-info/METADATA", &metadata("0.10.5"))],
            )],
            vec![dir(
                "egg",
                &[("kernels-0.4.0-py3.9.egg-info/PKG-INFO", &metadata("0.4.0"))],
            )],
            vec![
                tmp.join("missing").display().to_string(),
                dir(
                    "other",
                    &[("kernels_extra-1.0.dist-info/METADATA", &metadata("1.0"))],
                ),
                dir(
                    "second",
                    &[("kernels-0.11.0.dist-info/METADATA", &metadata("0.11.0"))],
                ),
            ],
            vec![zip.display().to_string()],
            vec![dir("empty", &[])],
            // A location the JSON encoder must escape (non-ASCII, astral).
            vec![dir(
                "d\u{e9}p\u{f4}t-\u{1f600}",
                &[("kernels-0.9.0.dist-info/METADATA", &metadata("0.9.0"))],
            )],
        ]
    }

    /// The probe's own lookup of the installed `kernels` (a scan of `sys.path`)
    /// gives what `importlib.metadata.distribution("kernels")` gives, for the
    /// layouts it handles itself and for those it hands to importlib (a zip
    /// on `sys.path`).
    #[cfg(unix)]
    #[test]
    fn the_runtime_scan_agrees_with_importlib_metadata() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let layouts = scan_layouts(tmp.path());
        for (i, entries) in layouts.iter().enumerate() {
            let python = tmp.path().join(format!("python-{i}"));
            fs_err::write(
                &python,
                format!(
                    "#!/bin/sh\nPYTHONPATH='{}' exec python3 \"$@\"\n",
                    entries.join(":")
                ),
            )
            .unwrap();
            fs_err::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
            let probed = super::PythonProbe::run_scoped(&python, super::ProbeScope::Runtime, &[])
                .unwrap()
                .kernels
                .map(|k| (k.version, k.location));
            let oracle = std::process::Command::new(&python)
                .args(["-c", "import importlib.metadata as m\ntry:\n d = m.distribution('kernels'); print(d.version); print(d.locate_file(''))\nexcept m.PackageNotFoundError:\n pass"])
                .output()
                .unwrap();
            assert!(oracle.status.success(), "{oracle:?}");
            let oracle = String::from_utf8(oracle.stdout).unwrap();
            let oracle = oracle
                .lines()
                .collect::<Vec<_>>()
                .split_first()
                .map(|(version, rest)| {
                    (
                        (*version).to_owned(),
                        std::path::PathBuf::from(rest.join("\n")),
                    )
                });
            assert_eq!(probed, oracle, "layout {i}: {entries:?}");
        }
    }
}
