//! Build variants (directories under `build/` of a kernel repo) and how
//! `kernels download` picks them.
//!
//! The default choice detects the environment's torch build ([`TorchEnv`]) and
//! ranks the kernel's variants the way the target runtime does
//! ([`VariantPreference`], part of the target profile):
//!
//! - reference ≤0.12 ([`VariantPreference::Exact`]): form `[arch, noarch,
//!   "torch-universal"]` (`utils.py::build_variants`) and take the first of
//!   them the kernel has; only exact names match.
//! - reference 0.13+ ([`VariantPreference::Resolver`]): parse every directory name
//!   ([`BuildVariant`]), keep those compatible with the environment (CUDA
//!   builds of the same major version with a minor version up to the
//!   runtime's are accepted; ROCm, XPU and CANN need the exact version) and
//!   take the best by the resolver's order. Names that do not parse are
//!   skipped with a warning; they stay in lock files untouched.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::lock::profile::VariantPreference;
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::{
    ArchVariant, Backend, BuildVariant, CxxAbi, Framework, MinorVersion, NoarchBackend, VariantKind,
};

/// The legacy variant every torch environment accepts last.
pub const UNIVERSAL: &str = "torch-universal";

/// Errors of variant detection and selection.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum VariantError {
    /// No Python interpreter could be started to detect torch.
    #[error("cannot run `{}` to detect the torch build variant: {reason}", python.display())]
    #[diagnostic(
        code(kernels::variant::no_python),
        help(
            "activate the project's virtual environment (or create `<project>/.venv`), or choose variants explicitly with `--variant NAME` or `--all-variants`"
        )
    )]
    PythonFailed {
        /// The interpreter that was tried.
        python: PathBuf,
        /// What went wrong.
        reason: String,
    },

    /// The interpreter runs but cannot import torch.
    #[error("torch is not importable by `{}` ({reason}), so the build variant cannot be detected", python.display())]
    #[diagnostic(
        code(kernels::variant::no_torch),
        help(
            "install torch in the project's environment, or choose variants explicitly with `--variant NAME` (repeatable) or `--all-variants`"
        )
    )]
    NoTorch {
        /// The interpreter that was asked.
        python: PathBuf,
        /// The import error message.
        reason: String,
    },

    /// None of the `--variant` names is a directory under `build/` at the locked commit.
    #[error(
        "{repo_id}@{commit} has none of the requested build variants (`{variant}`); available: {}",
        list(available)
    )]
    #[diagnostic(
        code(kernels::variant::not_found),
        help("pass one of the available variants to `--variant`, or use `--all-variants`")
    )]
    NotFound {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
        /// The requested variant.
        variant: String,
        /// Variants the kernel has.
        available: Vec<String>,
    },

    /// No variant of the kernel suits the environment.
    #[error(
        "{repo_id}@{commit} has no build variant for this environment ({wanted}); available: {}",
        list(available)
    )]
    #[diagnostic(
        code(kernels::variant::no_compatible),
        help("pick one explicitly with `--variant NAME`, or use `--all-variants`")
    )]
    NoCompatible {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
        /// What was looked for: the exact names tried in order, or the
        /// environment the resolver matched against.
        wanted: String,
        /// Variants the kernel has.
        available: Vec<String>,
    },
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none (the commit has no build/ directory)".to_owned()
    } else {
        items.join(", ")
    }
}

/// Which variants to download, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantRequest {
    /// The best variant for the environment's torch (needs torch).
    Detect,
    /// Every directory under `build/`.
    All,
    /// Exactly these (each must exist).
    Named(Vec<String>),
}

/// How `preference` ranks variants, for status lines.
pub fn describe_preference(preference: VariantPreference) -> &'static str {
    match preference {
        VariantPreference::Exact { noarch: true } => {
            "exact names [arch, noarch, universal] (kernels ≤0.12)"
        }
        VariantPreference::Exact { noarch: false } => {
            "exact names [arch, universal] (kernels before the noarch back-port)"
        }
        VariantPreference::Resolver => "resolver of kernels 0.13–0.14",
        VariantPreference::ResolverStableAbi => "resolver of kernels 0.15+",
    }
}

/// A [`VariantRequest`] with the environment already detected; what the
/// download engine applies to each kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantSelection {
    /// The best variant for `env`, ranked by `preference`.
    Detected {
        /// The detected (or given) torch build.
        env: TorchEnv,
        /// How the target runtime ranks variants.
        preference: VariantPreference,
    },
    /// Every directory under `build/`.
    All,
    /// Exactly these.
    Named(Vec<String>),
}

impl VariantSelection {
    /// Chooses variants among `available` (the directory names under `build/`
    /// of `repo_id` at `commit`). The result is in `available` order for
    /// [`VariantSelection::All`], command-line order (deduplicated) for
    /// [`VariantSelection::Named`], and one element for
    /// [`VariantSelection::Detected`]. With a resolver preference, names that
    /// are not build-variant names (such as `torch-ext`) are skipped with a
    /// warning on stderr.
    pub fn choose(
        &self,
        repo_id: &RepoId,
        commit: &str,
        available: &BTreeSet<String>,
    ) -> Result<Vec<String>, VariantError> {
        let avail = || available.iter().cloned().collect::<Vec<_>>();
        match self {
            VariantSelection::All => Ok(avail()),
            VariantSelection::Named(names) => {
                // Each kernel takes the named variants it has, so one command can
                // name a variant per kernel era (Docker builds of mixed projects);
                // a kernel that has none of them is an error.
                let mut out: Vec<String> = Vec::new();
                for name in names {
                    if available.contains(name) && !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                if out.is_empty() {
                    return Err(VariantError::NotFound {
                        repo_id: repo_id.clone(),
                        commit: commit.to_owned(),
                        variant: names.join("`, `"),
                        available: avail(),
                    });
                }
                Ok(out)
            }
            VariantSelection::Detected { env, preference } => {
                let best = match preference {
                    VariantPreference::Exact { noarch } => env
                        .preference(*noarch)
                        .into_iter()
                        .find(|v| available.contains(v)),
                    VariantPreference::Resolver | VariantPreference::ResolverStableAbi => {
                        let variants: Vec<BuildVariant> =
                            available.iter().map(|n| BuildVariant::parse(n)).collect();
                        for unknown in variants.iter().filter(|v| !v.is_known()) {
                            eprintln!(
                                "warning: {repo_id}@{commit}: skipping `build/{unknown}`: not a build-variant name"
                            );
                        }
                        env.resolve(&variants, *preference)
                            .first()
                            .map(|v| v.name().to_owned())
                    }
                };
                best.map(|v| vec![v])
                    .ok_or_else(|| VariantError::NoCompatible {
                        repo_id: repo_id.clone(),
                        commit: commit.to_owned(),
                        wanted: match preference {
                            VariantPreference::Exact { noarch } => {
                                env.preference(*noarch).join(", ")
                            }
                            _ => env.describe(),
                        },
                        available: avail(),
                    })
            }
        }
    }
}

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
}

/// Prints one JSON object: `{"torch": null, "error": …}` when torch cannot be
/// imported, else the fields of [`TorchEnv`].
const DETECT_SNIPPET: &str = r#"
import json, platform, re, sys
try:
    import torch
except Exception as e:
    print(json.dumps({"torch": None, "error": "%s: %s" % (type(e).__name__, e)}))
    sys.exit(0)
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
print(json.dumps({"torch": {
    "major": int(m.group(1)), "minor": int(m.group(2)),
    "cuda": torch.version.cuda, "hip": torch.version.hip,
    "xpu": getattr(torch.version, "xpu", None),
    "mps": call(lambda: torch.backends.mps.is_available(), False),
    "neuron": hasattr(torch, "neuron"),
    "cxx11_abi": call(torch.compiled_with_cxx11_abi, True),
    "tvm_ffi": tvm,
    "system": platform.system(), "machine": platform.machine()}}))
"#;

#[derive(Deserialize)]
struct DetectOutput {
    torch: Option<TorchEnv>,
    #[serde(default)]
    error: Option<String>,
}

/// The interpreter of the project's environment: `$VIRTUAL_ENV/bin/python`,
/// else `<project>/.venv/bin/python` (`Scripts\python.exe` on Windows), else
/// `python3` from `PATH`.
pub fn project_python(project_dir: &Path, virtual_env: Option<&Path>) -> PathBuf {
    let in_env = |env: &Path| {
        if cfg!(windows) {
            env.join("Scripts").join("python.exe")
        } else {
            env.join("bin").join("python")
        }
    };
    virtual_env
        .map(in_env)
        .filter(|p| p.exists())
        .or_else(|| Some(in_env(&project_dir.join(".venv"))).filter(|p| p.exists()))
        .unwrap_or_else(|| PathBuf::from(if cfg!(windows) { "python" } else { "python3" }))
}

/// Leading `major.minor` digits of a version such as `12.6` or `6.3.42131-fa1d`.
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

/// Sort key of an accepted variant in the resolver's order (smaller first).
type RankKey = (u8, i64, i64, i64);

impl TorchEnv {
    /// Runs `python` with a short snippet that imports torch and reports its
    /// build. Errors when the interpreter cannot run or torch is not importable.
    pub fn detect(python: &Path) -> Result<TorchEnv, VariantError> {
        let failed = |reason: String| VariantError::PythonFailed {
            python: python.to_owned(),
            reason,
        };
        let output = Command::new(python)
            .args(["-c", DETECT_SNIPPET])
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
        let parsed: DetectOutput = stdout
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str(line).ok())
            .ok_or_else(|| failed(format!("unexpected output {:?}", stdout.trim())))?;
        parsed.torch.ok_or_else(|| VariantError::NoTorch {
            python: python.to_owned(),
            reason: parsed.error.unwrap_or_else(|| "import failed".to_owned()),
        })
    }

    /// The compute backend the reference selects for this torch, checked in
    /// the reference's order: Neuron, CUDA, ROCm, Metal, XPU, else CPU. The
    /// XPU version is `version[0:4]` `.` `version[5:6]` of `torch.version.xpu`
    /// (`20250101` → 2025.0), as the reference computes it.
    pub fn backend(&self) -> Backend {
        if self.neuron {
            Backend::Neuron
        } else if let Some((maj, min)) = self.cuda.as_deref().and_then(major_minor) {
            Backend::Cuda(MinorVersion::new(maj, min))
        } else if let Some((maj, min)) = self.hip.as_deref().and_then(major_minor) {
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
    fn os(&self) -> String {
        self.system.to_lowercase()
    }

    /// The CPU as written in variant names: macOS `arm64` is `aarch64`,
    /// Windows `AMD64` is `x86_64`.
    fn cpu(&self) -> String {
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
        let os = self.os();
        let torch = format!("torch{}{}", self.major, self.minor);
        let compute = self.compute();
        let cpu = self.cpu();
        if os == "darwin" || os == "windows" {
            format!("{torch}-{compute}-{cpu}-{os}")
        } else {
            let abi = if self.cxx11_abi { "cxx11" } else { "cxx98" };
            format!("{torch}-{abi}-{compute}-{cpu}-{os}")
        }
    }

    /// The Python-only variant: `torch-cuda`, `torch-rocm`, `torch-metal`,
    /// `torch-xpu`, `torch-neuron` or `torch-cpu`.
    pub fn noarch_variant(&self) -> String {
        format!("torch-{}", self.noarch_backend())
    }

    /// The backend name of the environment's noarch variant (`cuda`, …).
    fn noarch_backend(&self) -> &'static str {
        match self.backend() {
            Backend::Cann(_) => NoarchBackend::Npu.as_str(),
            other => other.family(),
        }
    }

    /// The reference ≤0.12 preference order: arch, noarch, universal; without
    /// `noarch` (releases before the December 2025 back-port) arch, universal.
    pub fn preference(&self, noarch: bool) -> Vec<String> {
        let mut order = vec![self.arch_variant()];
        if noarch {
            order.push(self.noarch_variant());
        }
        order.push(UNIVERSAL.to_owned());
        order
    }

    /// One line describing the environment, for status output, for example
    /// `torch 2.7 (cxx11 ABI), CUDA 12.6, x86_64-linux`.
    pub fn describe(&self) -> String {
        let mut out = format!("torch {}.{}", self.major, self.minor);
        if self.os() == "linux" {
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
        out
    }

    /// The variants the reference resolver (0.13+) accepts for this
    /// environment, best first. `preference` selects the 0.13–0.14 or the
    /// 0.15+ rules; [`VariantPreference::Exact`] is treated as 0.15+. Equal ranks
    /// keep the order of `variants` (the reference leaves them unordered).
    pub fn resolve<'a>(
        &self,
        variants: &'a [BuildVariant],
        preference: VariantPreference,
    ) -> Vec<&'a BuildVariant> {
        let newer = preference != VariantPreference::Resolver;
        let mut ranked: Vec<(RankKey, &BuildVariant)> = variants
            .iter()
            .filter_map(|v| self.rank(v, newer).map(|key| (key, v)))
            .collect();
        ranked.sort_by_key(|(key, _)| *key);
        ranked.into_iter().map(|(_, v)| v).collect()
    }

    /// The sort key of `variant` if this environment accepts it; `newer`
    /// selects the 0.15+ rules (stable ABI, tagless before tagged).
    fn rank(&self, variant: &BuildVariant, newer: bool) -> Option<RankKey> {
        match variant.kind() {
            VariantKind::Unknown => None,
            VariantKind::Universal => Some((3, 0, 0, 1)),
            VariantKind::Noarch(backend) => {
                (backend.as_str() == self.noarch_backend()).then_some((3, 0, 0, 0))
            }
            VariantKind::Arch(arch) => self.rank_arch(arch, newer),
        }
    }

    fn rank_arch(&self, arch: &ArchVariant, newer: bool) -> Option<RankKey> {
        if arch.cpu.as_str() != self.cpu() || arch.os.as_str() != self.os() {
            return None;
        }
        let torch = MinorVersion::new(self.major, self.minor);
        let (framework, abi_major, abi_minor) = match arch.framework {
            Framework::Torch(version) => {
                if version != torch {
                    return None;
                }
                if let Some(tag) = arch.cxx_abi {
                    // The environment has no ABI tag off Linux, so tagged
                    // variants never match there.
                    let env_tag = if self.cxx11_abi {
                        CxxAbi::Cxx11
                    } else {
                        CxxAbi::Cxx98
                    };
                    if self.os() != "linux" || tag != env_tag {
                        return None;
                    }
                }
                let tagged = i64::from(newer && arch.cxx_abi.is_some());
                (1, 0, tagged)
            }
            Framework::TorchStableAbi(version) => {
                if !newer || version > torch {
                    return None;
                }
                (0, -i64::from(version.major), -i64::from(version.minor))
            }
            Framework::TvmFfi(version) => {
                let env = self.tvm_ffi.as_deref().and_then(major_minor)?;
                if version != MinorVersion::new(env.0, env.1) {
                    return None;
                }
                (2, 0, 0)
            }
        };
        let env_backend = self.backend();
        match (arch.backend, env_backend) {
            (Backend::Cuda(v), Backend::Cuda(env)) => {
                if v.major != env.major || v.minor > env.minor {
                    return None;
                }
            }
            (backend, env) => {
                if backend.to_string() != env.to_string() {
                    return None;
                }
            }
        }
        let backend_minor = arch.backend.version().map_or(0, |v| -i64::from(v.minor));
        // 0.15+ ranks tvm-ffi level with noarch variants, 0.13 before them.
        let framework = if framework == 2 && newer {
            3
        } else {
            framework
        };
        Some((framework, abi_major, abi_minor, backend_minor))
    }
}

impl VariantRequest {
    /// Turns the request into a selection, detecting torch with `python` only
    /// for [`VariantRequest::Detect`]; `preference` is how the target runtime
    /// ranks variants.
    pub fn resolve(
        &self,
        python: &Path,
        preference: VariantPreference,
    ) -> Result<VariantSelection, VariantError> {
        Ok(match self {
            VariantRequest::Detect => VariantSelection::Detected {
                env: TorchEnv::detect(python)?,
                preference,
            },
            VariantRequest::All => VariantSelection::All,
            VariantRequest::Named(names) => VariantSelection::Named(names.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cuda: Option<&str>, system: &str, machine: &str) -> TorchEnv {
        TorchEnv {
            major: 2,
            minor: 7,
            cuda: cuda.map(str::to_owned),
            hip: None,
            xpu: None,
            mps: false,
            neuron: false,
            cxx11_abi: true,
            tvm_ffi: None,
            system: system.to_owned(),
            machine: machine.to_owned(),
        }
    }

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
    fn selection_rules() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = [
            "torch-cpu",
            "torch-universal",
            "torch27-cxx11-cu126-x86_64-linux",
        ]
        .map(String::from)
        .into();
        let exact = |cuda| VariantSelection::Detected {
            env: env(Some(cuda), "Linux", "x86_64"),
            preference: VariantPreference::Exact { noarch: true },
        };
        assert_eq!(
            exact("12.6").choose(&id, "c", &available).unwrap(),
            ["torch27-cxx11-cu126-x86_64-linux"]
        );
        assert_eq!(
            exact("12.8").choose(&id, "c", &available).unwrap(),
            ["torch-universal"]
        );
        assert_eq!(
            VariantSelection::All
                .choose(&id, "c", &available)
                .unwrap()
                .len(),
            3
        );
        let named = VariantSelection::Named(vec!["torch-cpu".into(), "torch-cpu".into()]);
        assert_eq!(named.choose(&id, "c", &available).unwrap(), ["torch-cpu"]);
        let err = VariantSelection::Named(vec!["torch-xpu".into()])
            .choose(&id, "c", &available)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("torch-xpu") && err.contains("torch-cpu, torch-universal"),
            "{err}"
        );
        let none = exact("12.6").choose(&id, "c", &BTreeSet::new());
        assert!(matches!(none, Err(VariantError::NoCompatible { .. })));
    }

    /// The names `env` accepts among `names` under `preference`, best first.
    fn ranked(env: &TorchEnv, preference: VariantPreference, names: &[&str]) -> Vec<String> {
        let variants: Vec<BuildVariant> = names.iter().map(|n| BuildVariant::parse(n)).collect();
        env.resolve(&variants, preference)
            .iter()
            .map(|v| v.name().to_owned())
            .collect()
    }

    fn linux(major: u32, minor: u32, cuda: Option<&str>) -> TorchEnv {
        TorchEnv {
            major,
            minor,
            ..env(cuda, "Linux", "x86_64")
        }
    }

    #[test]
    fn resolver_accepts_older_cuda_minors_of_the_same_major() {
        let names = [
            "torch-universal",
            "torch-cuda",
            "torch29-cxx11-cu118-x86_64-linux",
            "torch29-cxx11-cu126-x86_64-linux",
            "torch29-cxx11-cu128-x86_64-linux",
            "torch29-cxx11-cu128-aarch64-linux",
            "torch29-cxx11-cu130-x86_64-linux",
            "torch28-cxx11-cu128-x86_64-linux",
            "torch29-metal-aarch64-darwin",
        ];
        for preference in [
            VariantPreference::Resolver,
            VariantPreference::ResolverStableAbi,
        ] {
            // CUDA 12.9: 12.8 and 12.6 qualify (higher minor first); 11.8 and
            // 13.0 do not, nor other Torch versions, CPUs or systems.
            assert_eq!(
                ranked(&linux(2, 9, Some("12.9")), preference, &names),
                [
                    "torch29-cxx11-cu128-x86_64-linux",
                    "torch29-cxx11-cu126-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
            assert_eq!(
                ranked(&linux(2, 9, Some("13.0")), preference, &names)[0],
                "torch29-cxx11-cu130-x86_64-linux"
            );
        }
        // The exact order (≤0.12) has no fallback: CUDA 12.9 gets the noarch build.
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = names.map(String::from).into();
        let pick = |preference| {
            VariantSelection::Detected {
                env: linux(2, 9, Some("12.9")),
                preference,
            }
            .choose(&id, "c", &available)
            .unwrap()
        };
        assert_eq!(
            pick(VariantPreference::Exact { noarch: true }),
            ["torch-cuda"]
        );
        assert_eq!(
            pick(VariantPreference::ResolverStableAbi),
            ["torch29-cxx11-cu128-x86_64-linux"]
        );
    }

    #[test]
    fn resolver_needs_exact_rocm_and_xpu_versions_and_the_cxx_tag() {
        let names = [
            "torch-universal",
            "torch-cuda",
            "torch-rocm",
            "torch-xpu",
            "torch28-cxx11-rocm63-x86_64-linux",
            "torch28-cxx11-rocm64-x86_64-linux",
            "torch28-cxx11-xpu20251-x86_64-linux",
            "torch28-cxx98-cu126-x86_64-linux",
        ];
        let rocm = |hip: &str| TorchEnv {
            hip: Some(hip.to_owned()),
            ..linux(2, 8, None)
        };
        assert_eq!(
            ranked(
                &rocm("6.4.43482-0f2d60242"),
                VariantPreference::ResolverStableAbi,
                &names
            ),
            [
                "torch28-cxx11-rocm64-x86_64-linux",
                "torch-rocm",
                "torch-universal"
            ]
        );
        assert_eq!(
            ranked(&rocm("6.2.1"), VariantPreference::Resolver, &names),
            ["torch-rocm", "torch-universal"]
        );
        let xpu = |v: &str| TorchEnv {
            xpu: Some(v.to_owned()),
            ..linux(2, 8, None)
        };
        // `torch.version.xpu` `20250001` is oneAPI 2025.0, `20250101` 2025.1.
        assert_eq!(
            ranked(
                &xpu("20250001"),
                VariantPreference::ResolverStableAbi,
                &names
            ),
            ["torch-xpu", "torch-universal"]
        );
        assert_eq!(
            ranked(&xpu("20250101"), VariantPreference::Resolver, &names)[0],
            "torch28-cxx11-xpu20251-x86_64-linux"
        );
        // A cxx98 build only suits a torch without the C++11 ABI.
        let cuda = linux(2, 8, Some("12.6"));
        assert_eq!(
            ranked(&cuda, VariantPreference::ResolverStableAbi, &names),
            ["torch-cuda", "torch-universal"]
        );
        let old_abi = TorchEnv {
            cxx11_abi: false,
            ..cuda
        };
        assert_eq!(
            ranked(&old_abi, VariantPreference::Resolver, &names)[0],
            "torch28-cxx98-cu126-x86_64-linux"
        );
    }

    #[test]
    fn stable_abi_and_tagless_variants_from_0_15() {
        let names = [
            "torch-cuda",
            "torch210-cxx11-cu130-x86_64-linux",
            "torch210-cu126-x86_64-linux",
            "torch-stable-abi29-cu130-x86_64-linux",
            "torch-stable-abi29-cu128-x86_64-linux",
            "torch-stable-abi210-cu128-x86_64-linux",
            "torch-stable-abi211-cu130-x86_64-linux",
        ];
        let env = linux(2, 10, Some("13.0"));
        // 0.15+: stable ABI up to the torch version first (newest ABI first),
        // then tagless before cxx-tagged Torch builds, then noarch.
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &names),
            [
                "torch-stable-abi29-cu130-x86_64-linux",
                "torch210-cxx11-cu130-x86_64-linux",
                "torch-cuda"
            ]
        );
        let env = linux(2, 10, Some("12.8"));
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &names),
            [
                "torch-stable-abi210-cu128-x86_64-linux",
                "torch-stable-abi29-cu128-x86_64-linux",
                "torch210-cu126-x86_64-linux",
                "torch-cuda"
            ]
        );
        // 0.13–0.14 do not know stable-ABI names; tags do not rank.
        assert_eq!(
            ranked(&env, VariantPreference::Resolver, &names),
            ["torch210-cu126-x86_64-linux", "torch-cuda"]
        );
        let tags = [
            "torch210-cxx11-cu128-x86_64-linux",
            "torch210-cu126-x86_64-linux",
        ];
        assert_eq!(
            ranked(&env, VariantPreference::ResolverStableAbi, &tags),
            [
                "torch210-cu126-x86_64-linux",
                "torch210-cxx11-cu128-x86_64-linux"
            ]
        );
        assert_eq!(
            ranked(&env, VariantPreference::Resolver, &tags),
            [
                "torch210-cxx11-cu128-x86_64-linux",
                "torch210-cu126-x86_64-linux"
            ]
        );
    }

    #[test]
    fn tvm_ffi_noarch_universal_and_unknown_names() {
        let names = [
            "torch-universal",
            "torch-cpu",
            "torch-cuda",
            "torch-ext",
            "tvm-ffi01-cu128-x86_64-linux",
            "tvm-ffi02-cu128-x86_64-linux",
            "torch27-cxx11-cu128-x86_64-linux",
        ];
        let plain = linux(2, 7, Some("12.8"));
        let with_tvm = TorchEnv {
            tvm_ffi: Some("0.1.9".to_owned()),
            ..plain.clone()
        };
        for preference in [
            VariantPreference::Resolver,
            VariantPreference::ResolverStableAbi,
        ] {
            assert_eq!(
                ranked(&with_tvm, preference, &names),
                [
                    "torch27-cxx11-cu128-x86_64-linux",
                    "tvm-ffi01-cu128-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
            assert_eq!(
                ranked(&plain, preference, &names),
                [
                    "torch27-cxx11-cu128-x86_64-linux",
                    "torch-cuda",
                    "torch-universal"
                ]
            );
        }
        let cpu = linux(2, 7, None);
        assert_eq!(
            ranked(&cpu, VariantPreference::ResolverStableAbi, &names),
            ["torch-cpu", "torch-universal"]
        );
        // `torch-ext` is never chosen, only skipped.
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = ["torch-ext", "torch-universal"].map(String::from).into();
        let selection = VariantSelection::Detected {
            env: cpu,
            preference: VariantPreference::Resolver,
        };
        assert_eq!(
            selection.choose(&id, "c", &available).unwrap(),
            ["torch-universal"]
        );
        let only_junk: BTreeSet<String> = ["torch-ext".to_owned()].into();
        let err = selection
            .choose(&id, "c", &only_junk)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("torch 2.7") && err.contains("torch-ext"),
            "{err}"
        );
    }

    #[test]
    fn macos_and_windows_in_the_resolver() {
        let names = [
            "torch27-cxx11-metal-aarch64-darwin",
            "torch27-metal-aarch64-darwin",
            "torch-metal",
            "torch27-cu128-x86_64-windows",
        ];
        let mac = TorchEnv {
            mps: true,
            ..env(None, "Darwin", "arm64")
        };
        // A cxx-tagged macOS build has an ABI tag the environment lacks.
        assert_eq!(
            ranked(&mac, VariantPreference::ResolverStableAbi, &names),
            ["torch27-metal-aarch64-darwin", "torch-metal"]
        );
        let win = env(Some("12.9"), "Windows", "AMD64");
        assert_eq!(
            ranked(&win, VariantPreference::Resolver, &names),
            ["torch27-cu128-x86_64-windows"]
        );
        assert_eq!(win.describe(), "torch 2.7, CUDA 12.9, x86_64-windows");
        assert_eq!(
            linux(2, 10, Some("12.8")).describe(),
            "torch 2.10 (cxx11 ABI), CUDA 12.8, x86_64-linux"
        );
    }
}
