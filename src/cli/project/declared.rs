//! The declared targets (`[[tool.kernels.targets]]`) as environments to
//! select variants for, shared by the lock-time check
//! ([`super::locking`]: every locked kernel needs a build for each) and by
//! `kernels download` with several targets (one selection per target).
//!
//! A target is an environment when it names `torch` and a `backend` that
//! variant selection models (not `tpu` or `cann-X.Y`). Its OS and CPU are the
//! declared ones, else those a GPU image of its backend has (Linux for CUDA,
//! ROCm and XPU, and x86_64 there when this machine is no Linux; arm64 macOS
//! for Metal), else this machine's; its Python is the declared one, else the
//! lower bound of `requires-python`.

use std::path::{Path, PathBuf};

use crate::cli::printer::Printer;
use crate::install::DownloadSummary;
use crate::lock::declared::{DeclaredBackend, DeclaredTarget};
use crate::lock::manifest::ToolSettings;
use crate::variant::{EnvOverrides, ProjectPython, TorchEnv, VariantSelection};

/// One declared target as an environment.
#[derive(Debug, Clone)]
pub struct DeclaredEnv {
    /// `targets[N]`, counted from 1 in file order.
    pub key: String,
    /// `torch 2.7 + cuda-12.6`, with the platform and Python when declared.
    pub label: String,
    /// The environment `kernels download` selects for.
    pub env: TorchEnv,
}

/// The declared targets of `tool` (read from the `pyproject.toml` at `path`)
/// that are environments, in file order, and the keys of those that are not.
pub fn declared_envs(tool: &ToolSettings, path: &Path) -> (Vec<DeclaredEnv>, Vec<String>) {
    let mut envs = Vec::new();
    let mut skipped = Vec::new();
    for (index, declared) in tool.declared.iter().enumerate() {
        let key = format!("targets[{}]", index + 1);
        match env_of(declared, tool, path) {
            Some((label, env)) => envs.push(DeclaredEnv { key, label, env }),
            None => skipped.push(key),
        }
    }
    (envs, skipped)
}

/// The environment of one declared target, with its label; `None` when it
/// names no torch or no backend variant selection models.
fn env_of(
    declared: &DeclaredTarget,
    tool: &ToolSettings,
    path: &Path,
) -> Option<(String, TorchEnv)> {
    let (major, minor) = declared.torch?;
    let backend = declared
        .backend
        .filter(|b| !matches!(b, DeclaredBackend::Tpu | DeclaredBackend::Cann(_)))?;
    let mut target = declared.clone();
    let (os, arch) = platform(declared, backend);
    target.os = Some(os.clone());
    target.arch = Some(arch.clone());
    let overrides = EnvOverrides::default()
        .with_declared(Some((&target, path)))
        .with_requires_python(tool.requires_python);
    // With a declared torch the interpreter is never started.
    let python = ProjectPython::new(PathBuf::from("python3"));
    let (env, _) = overrides.resolve(&python).ok()?;
    let mut label = format!("torch {major}.{minor} + {backend}");
    if declared.os.is_some() || declared.arch.is_some() {
        label.push_str(&format!(" ({arch}-{os})"));
    }
    if let Some(py) = declared.python {
        label.push_str(&format!(", Python {py}"));
    }
    Some((label, env))
}

/// The OS and CPU a target is checked for: as declared, else those a GPU
/// image of its backend has, else this machine's.
fn platform(declared: &DeclaredTarget, backend: DeclaredBackend) -> (String, String) {
    let host_os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let gpu_linux = matches!(
        backend,
        DeclaredBackend::Cuda(_) | DeclaredBackend::Rocm(_) | DeclaredBackend::Xpu(_)
    );
    let os = declared.os.clone().unwrap_or_else(|| {
        match backend {
            DeclaredBackend::Metal => "darwin",
            _ if gpu_linux => "linux",
            _ => host_os,
        }
        .to_owned()
    });
    let arch = declared.arch.clone().unwrap_or_else(|| {
        match backend {
            DeclaredBackend::Metal => "aarch64",
            _ if gpu_linux && host_os != "linux" => "x86_64",
            _ => std::env::consts::ARCH,
        }
        .to_owned()
    });
    (os, arch)
}

/// Whether `local` (the project's torch) is the environment of `target`:
/// the same torch minor and backend.
pub fn is_local(local: &TorchEnv, target: &DeclaredEnv) -> bool {
    (local.major, local.minor) == (target.env.major, target.env.minor)
        && local.backend() == target.env.backend()
}

/// The selection of each pass of `kernels download`: `selection` alone (no
/// label) for one environment, else one per declared target in `per_target`,
/// ranked by `selection`'s rules, labelled `targets[N] (torch … + …)`.
pub fn passes(
    per_target: &[DeclaredEnv],
    selection: &VariantSelection,
) -> Vec<(Option<String>, VariantSelection)> {
    let VariantSelection::Detected { rules, .. } = selection else {
        return vec![(None, selection.clone())];
    };
    if per_target.is_empty() {
        return vec![(None, selection.clone())];
    }
    per_target
        .iter()
        .map(|target| {
            (
                Some(format!("{} ({})", target.key, target.label)),
                VariantSelection::Detected {
                    env: Box::new(target.env.clone()),
                    rules: *rules,
                },
            )
        })
        .collect()
}

/// Adds the outcome of one pass to `total`: a kernel done in an earlier pass
/// gains the variants it did not have (each variant counted once, its files
/// and bytes with it); failures and cache warnings are kept, each warning
/// once. A pass `blocked` before any download stops the run: it is kept.
pub fn merge(total: &mut DownloadSummary, pass: DownloadSummary) {
    for report in pass.done {
        match total
            .done
            .iter_mut()
            .find(|r| r.repo_id == report.repo_id && r.commit == report.commit)
        {
            Some(known) if report.variants.iter().all(|v| known.variants.contains(v)) => {
                known.fetched_bytes += report.fetched_bytes;
                known.fetched_blobs += report.fetched_blobs;
            }
            Some(known) => {
                known.variants.extend(report.variants);
                known.files += report.files;
                known.bytes += report.bytes;
                known.fetched_bytes += report.fetched_bytes;
                known.fetched_blobs += report.fetched_blobs;
                known.signatures.extend(report.signatures);
                known.file_hashes.extend(report.file_hashes);
            }
            None => total.done.push(report),
        }
    }
    total.failed.extend(pass.failed);
    for warning in pass.warnings {
        if !total.warnings.contains(&warning) {
            total.warnings.push(warning);
        }
    }
    if total.blocked.is_none() {
        total.blocked = pass.blocked;
    }
}

/// The status line after one pass for the declared target `label` when
/// kernels failed, naming them (their errors come once, after every pass);
/// the variants taken were each named by the pass's own lines, under the
/// `Target …:` line printed before it.
pub fn report_failures(label: &str, pass: &DownloadSummary, printer: &Printer) {
    if pass.failed.is_empty() {
        return;
    }
    let names: Vec<String> = pass.failed.iter().map(|f| f.label()).collect();
    printer.status(format_args!(
        "Target {label}: {} failed ({})",
        crate::cli::progress::plural(names.len(), "kernel"),
        names.join(", ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::variant_name::MinorVersion;

    fn target(torch: Option<(u32, u32)>, backend: Option<DeclaredBackend>) -> DeclaredTarget {
        DeclaredTarget {
            torch,
            backend,
            ..DeclaredTarget::default()
        }
    }

    #[test]
    fn targets_with_torch_and_a_modelled_backend_are_environments() {
        let cuda = DeclaredBackend::Cuda(MinorVersion::new(12, 6));
        let tool = ToolSettings {
            declared: vec![
                target(Some((2, 7)), Some(cuda)),
                target(None, Some(cuda)),
                target(Some((2, 8)), Some(DeclaredBackend::Tpu)),
                DeclaredTarget {
                    os: Some("darwin".to_owned()),
                    ..target(Some((2, 9)), Some(DeclaredBackend::Metal))
                },
            ],
            ..ToolSettings::default()
        };
        let (envs, skipped) = declared_envs(&tool, Path::new("pyproject.toml"));
        assert_eq!(skipped, ["targets[2]", "targets[3]"]);
        assert_eq!(envs.len(), 2);
        assert_eq!(envs[0].key, "targets[1]");
        assert_eq!(envs[0].label, "torch 2.7 + cuda-12.6");
        // A CUDA target is a Linux image whatever this machine is.
        let variant = envs[0].env.arch_variant();
        assert!(variant.starts_with("torch27-cxx11-cu126-"), "{variant}");
        assert!(variant.ends_with("-linux"), "{variant}");
        assert_eq!(envs[1].label, "torch 2.9 + metal (aarch64-darwin)");
        assert_eq!(envs[1].env.arch_variant(), "torch29-metal-aarch64-darwin");
        assert!(is_local(&envs[0].env, &envs[0]));
        assert!(!is_local(&envs[1].env, &envs[0]));
    }

    #[test]
    fn one_environment_is_one_pass_and_several_are_one_each() {
        let tool = ToolSettings {
            declared: vec![
                target(Some((2, 7)), Some(DeclaredBackend::Cpu)),
                target(
                    Some((2, 10)),
                    Some(DeclaredBackend::Cuda(MinorVersion::new(12, 8))),
                ),
            ],
            ..ToolSettings::default()
        };
        let (envs, _) = declared_envs(&tool, Path::new("pyproject.toml"));
        let selection = VariantSelection::Detected {
            env: Box::new(envs[0].env.clone()),
            rules: crate::variant::VariantRules::new(
                crate::lock::profile::VariantPreference::Resolver,
                None,
            ),
        };
        assert_eq!(passes(&[], &selection).len(), 1);
        assert_eq!(passes(&envs, &VariantSelection::All).len(), 1);
        let labels: Vec<Option<String>> = passes(&envs, &selection)
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(
            labels,
            [
                Some("targets[1] (torch 2.7 + cpu)".to_owned()),
                Some("targets[2] (torch 2.10 + cuda-12.8)".to_owned())
            ]
        );
    }
}
