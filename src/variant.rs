//! Build variants (directories under `build/` of a kernel repo) and how
//! `kernels download` picks them.
//!
//! The default choice matches the reference `kernels` ≤0.12: detect the
//! environment's torch, form `[arch, noarch, "torch-universal"]`
//! (`utils.py::build_variants`) and take the first of them the kernel has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::repo_id::RepoId;

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

    /// A `--variant` name is not a directory under `build/` at the locked commit.
    #[error(
        "{repo_id}@{commit} has no build variant `{variant}`; available: {}",
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

    /// None of the preferred variants exists in the kernel.
    #[error(
        "{repo_id}@{commit} has none of the build variants for this environment ({}); available: {}",
        preferred.join(", "),
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
        /// The variants tried, in order.
        preferred: Vec<String>,
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
    /// The first of the environment's preference list that exists (needs torch).
    Detect,
    /// Every directory under `build/`.
    All,
    /// Exactly these (each must exist).
    Named(Vec<String>),
}

/// A [`VariantRequest`] with the environment already detected; what the
/// download engine applies to each kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantSelection {
    /// Take the first of these that the kernel has.
    Preferred(Vec<String>),
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
    /// [`VariantSelection::Preferred`].
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
                let mut out: Vec<String> = Vec::new();
                for name in names {
                    if !available.contains(name) {
                        return Err(VariantError::NotFound {
                            repo_id: repo_id.clone(),
                            commit: commit.to_owned(),
                            variant: name.clone(),
                            available: avail(),
                        });
                    }
                    if !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                Ok(out)
            }
            VariantSelection::Preferred(order) => order
                .iter()
                .find(|v| available.contains(*v))
                .map(|v| vec![v.clone()])
                .ok_or_else(|| VariantError::NoCompatible {
                    repo_id: repo_id.clone(),
                    commit: commit.to_owned(),
                    preferred: order.clone(),
                    available: avail(),
                }),
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
    /// `torch.compiled_with_cxx11_abi()`.
    pub cxx11_abi: bool,
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
print(json.dumps({"torch": {
    "major": int(m.group(1)), "minor": int(m.group(2)),
    "cuda": torch.version.cuda, "hip": torch.version.hip,
    "xpu": getattr(torch.version, "xpu", None),
    "mps": call(lambda: torch.backends.mps.is_available(), False),
    "cxx11_abi": call(torch.compiled_with_cxx11_abi, True),
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

    /// The compute part of the arch variant: `cu{MAJ}{MIN}`, `rocm{MAJ}{MIN}`,
    /// `metal`, `xpu{YYYY}{N}` or `cpu`, checked in that order (reference ≤0.12).
    pub fn compute(&self) -> String {
        if let Some((maj, min)) = self.cuda.as_deref().and_then(major_minor) {
            format!("cu{maj}{min}")
        } else if let Some((maj, min)) = self.hip.as_deref().and_then(major_minor) {
            format!("rocm{maj}{min}")
        } else if self.mps {
            "metal".to_owned()
        } else if let Some(xpu) = &self.xpu {
            // `version[0:4] + version[5:6]` in the reference.
            let year: String = xpu.chars().take(4).collect();
            let minor: String = xpu.chars().skip(5).take(1).collect();
            format!("xpu{year}{minor}")
        } else {
            "cpu".to_owned()
        }
    }

    /// The arch variant name (`variants.md` grammar):
    /// Linux `torch{MAJ}{MIN}-{cxx11|cxx98}-{compute}-{cpu}-linux`,
    /// macOS `torch{MAJ}{MIN}-{compute}-{cpu}-darwin` (`arm64` → `aarch64`),
    /// Windows `torch{MAJ}{MIN}-{compute}-{cpu}-windows` (`AMD64` → `x86_64`).
    pub fn arch_variant(&self) -> String {
        let os = self.system.to_lowercase();
        let torch = format!("torch{}{}", self.major, self.minor);
        let compute = self.compute();
        match os.as_str() {
            "darwin" => {
                let cpu = if self.machine == "arm64" {
                    "aarch64"
                } else {
                    &self.machine
                };
                format!("{torch}-{compute}-{cpu}-darwin")
            }
            "windows" => {
                let cpu = match self.machine.to_ascii_lowercase().as_str() {
                    "amd64" | "x86_64" => "x86_64".to_owned(),
                    "arm64" | "aarch64" => "aarch64".to_owned(),
                    other => other.to_owned(),
                };
                format!("{torch}-{compute}-{cpu}-windows")
            }
            _ => {
                let abi = if self.cxx11_abi { "cxx11" } else { "cxx98" };
                format!("{torch}-{abi}-{compute}-{}-{os}", self.machine)
            }
        }
    }

    /// The Python-only variant: `torch-cuda`, `torch-rocm`, `torch-metal`,
    /// `torch-xpu` or `torch-cpu`.
    pub fn noarch_variant(&self) -> &'static str {
        if self.cuda.is_some() {
            "torch-cuda"
        } else if self.hip.is_some() {
            "torch-rocm"
        } else if self.mps {
            "torch-metal"
        } else if self.xpu.is_some() {
            "torch-xpu"
        } else {
            "torch-cpu"
        }
    }

    /// The reference ≤0.12 preference order: arch, noarch, universal.
    pub fn preference(&self) -> Vec<String> {
        vec![
            self.arch_variant(),
            self.noarch_variant().to_owned(),
            UNIVERSAL.to_owned(),
        ]
    }
}

impl VariantRequest {
    /// Turns the request into a selection, detecting torch with `python` only
    /// for [`VariantRequest::Detect`].
    pub fn resolve(&self, python: &Path) -> Result<VariantSelection, VariantError> {
        Ok(match self {
            VariantRequest::Detect => {
                VariantSelection::Preferred(TorchEnv::detect(python)?.preference())
            }
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
            cxx11_abi: true,
            system: system.to_owned(),
            machine: machine.to_owned(),
        }
    }

    #[test]
    fn arch_variants_follow_the_grammar() {
        let cuda = env(Some("12.6"), "Linux", "x86_64");
        assert_eq!(cuda.arch_variant(), "torch27-cxx11-cu126-x86_64-linux");
        assert_eq!(
            cuda.preference(),
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
        let pref = VariantSelection::Preferred(env(Some("12.6"), "Linux", "x86_64").preference());
        assert_eq!(
            pref.choose(&id, "c", &available).unwrap(),
            ["torch27-cxx11-cu126-x86_64-linux"]
        );
        let pref = VariantSelection::Preferred(env(Some("12.8"), "Linux", "x86_64").preference());
        assert_eq!(
            pref.choose(&id, "c", &available).unwrap(),
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
        let none = VariantSelection::Preferred(vec!["x".into()]).choose(&id, "c", &BTreeSet::new());
        assert!(matches!(none, Err(VariantError::NoCompatible { .. })));
    }
}
