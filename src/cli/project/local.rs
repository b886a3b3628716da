//! Which source each loading API of the runtime uses for every locked
//! kernel that has a local build: `LOCAL_KERNELS` (read by the runtime's
//! `get_kernel`, `get_local_kernel` and `has_kernel`, ignored by
//! `load_kernel(lockfile=…)` and `get_locked_kernel`; reference 0.19.1
//! `load.py`) or a `pyproject.toml` `path` (used by our `check`, `benchmark`
//! and `env`, and loaded by the application once `LOCAL_KERNELS` names it).
//! Shared by `env`, `check`, `benchmark` and `download --explain`.

use std::path::{Path, PathBuf};

use crate::cli::json::{LocalSourceDoc, LocalSourcesDoc};
use crate::cli::printer::Printer;
use crate::cli::settings::Settings;
use crate::local::{LocalBuild, LocalError, LocalKernels};
use crate::lock::format::LockedKernel;
use crate::lock::manifest::Manifest;
use crate::variant::{TorchEnv, VariantRules};

/// The environment a local build's variant is chosen for; `None` when torch
/// could not be asked (the variant is then not named).
pub type ChoiceEnv<'a> = Option<(&'a TorchEnv, VariantRules)>;

/// The local sources of `locked` (the project's lock, in order): a
/// `LOCAL_KERNELS` entry first (what the runtime does), else the
/// `pyproject.toml` `path` of the entry. A path that is missing or holds no
/// variant is reported in the kernel's `error`.
///
/// # Errors
/// [`LocalError::MalformedEntry`] when `LOCAL_KERNELS` is malformed (the
/// runtime's `get_kernel` raises for it).
pub fn gather(
    settings: &Settings,
    project_dir: &Path,
    locked: &[LockedKernel],
    env: ChoiceEnv<'_>,
) -> Result<LocalSourcesDoc, LocalError> {
    let overrides = settings.local_kernels().transpose()?.unwrap_or_default();
    let paths: Vec<(String, PathBuf)> = Manifest::read(project_dir)
        .map(|m| {
            m.dependencies
                .into_iter()
                .filter_map(|d| d.path.map(|p| (d.repo_id.to_string(), p)))
                .collect()
        })
        .unwrap_or_default();
    let mut doc = LocalSourcesDoc::default();
    let mut uncovered: Vec<(String, PathBuf)> = Vec::new();
    for kernel in locked {
        let repo = kernel.repo_id.to_string();
        let (origin, path, name) = if let Some(entry) = overrides.get(&repo) {
            ("LOCAL_KERNELS", entry.path.clone(), entry.source_name())
        } else if let Some((_, path)) = paths.iter().find(|(r, _)| r.eq_ignore_ascii_case(&repo)) {
            uncovered.push((repo.clone(), path.clone()));
            let name = format!("pyproject.toml entry `{repo}` path `{}`", path.display());
            ("pyproject.toml", project_dir.join(path), name)
        } else {
            continue;
        };
        let build = LocalBuild::open(&path, &name);
        let variant = match (&build, env) {
            (Ok(build), Some((torch, rules))) => build.choose(torch, rules),
            _ => None,
        };
        let error = match (&build, env, &variant) {
            (Err(err), _, _) => Some(err.to_string()),
            (Ok(_), Some((torch, _)), None) => Some(format!(
                "{name}: {} holds no variant for {}",
                path.display(),
                torch.describe()
            )),
            _ => None,
        };
        doc.kernels.push(LocalSourceDoc {
            repo_id: repo,
            locked_commit: kernel.commit.clone(),
            origin,
            path,
            variant,
            error,
            get_kernel: if origin == "LOCAL_KERNELS" {
                "local"
            } else {
                "hub"
            },
            load_kernel: "locked",
        });
    }
    doc.unlocked = overrides
        .entries()
        .iter()
        .filter(|e| !locked.iter().any(|k| k.repo_id.to_string() == e.repo_id))
        .cloned()
        .collect();
    if !uncovered.is_empty() {
        let base = fs_err::canonicalize(project_dir).unwrap_or_else(|_| project_dir.to_owned());
        doc.local_kernels_value = Some(value_with(&overrides, &uncovered, &base));
    }
    Ok(doc)
}

/// `LOCAL_KERNELS` as set (if it is) with the `uncovered` path sources added.
fn value_with(overrides: &LocalKernels, uncovered: &[(String, PathBuf)], base: &Path) -> String {
    let mut entries: Vec<(String, PathBuf)> = overrides
        .entries()
        .iter()
        .map(|e| (e.repo_id.clone(), e.path.clone()))
        .collect();
    entries.extend(uncovered.iter().cloned());
    LocalKernels::value_for(&entries, base)
}

/// The text lines: one per kernel with a local build, then the
/// `LOCAL_KERNELS` entries of no locked kernel and the value that loads the
/// path sources. Prints nothing when there is nothing to say.
pub fn print_text(printer: &Printer, doc: &LocalSourcesDoc) {
    if doc.is_empty() {
        return;
    }
    printer.data(format_args!("\nLocal builds:"));
    for kernel in &doc.kernels {
        let built = match (&kernel.variant, &kernel.error) {
            (_, Some(error)) => format!("unusable: {error}"),
            (Some(variant), None) => format!(
                "variant {} ({}) of {}",
                variant.name,
                variant.layout.describe(),
                kernel.path.display()
            ),
            (None, None) => format!(
                "{} (variant not chosen: torch not found)",
                kernel.path.display()
            ),
        };
        printer.data(format_args!(
            "  {} ({}): {built}",
            kernel.repo_id, kernel.origin
        ));
        let short = kernel
            .locked_commit
            .as_str()
            .get(..7)
            .unwrap_or(kernel.locked_commit.as_str());
        let get_kernel = if kernel.get_kernel == "local" {
            "the local build"
        } else {
            "the Hub (LOCAL_KERNELS does not name it)"
        };
        printer.data(format_args!(
            "    get_kernel: {get_kernel}; load_kernel/get_locked_kernel: the locked commit {short}"
        ));
    }
    for entry in &doc.unlocked {
        printer.data(format_args!(
            "  {}: named by LOCAL_KERNELS ({}) but not in kernels.lock",
            entry.repo_id,
            entry.path.display()
        ));
    }
    if let Some(value) = &doc.local_kernels_value {
        printer.data(format_args!(
            "  To make the application's get_kernel load the pyproject.toml paths: LOCAL_KERNELS={value}"
        ));
    }
}
