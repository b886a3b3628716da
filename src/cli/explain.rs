//! Printing the per-kernel variant explanation of `kernels download
//! --explain` and `kernels env` (text or JSON).

use std::path::Path;
use std::process::ExitCode;

use super::download::Format;
use crate::install::explain::{KernelExplanation, NewerVersion, VersionRefs, explain};
use crate::install::{DownloadOptions, LockedKernel};
use crate::lock::format::LockFormat;
use crate::lock::manifest::Manifest;
use crate::lock::requirement::Requirement;
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

/// The `schema` of `kernels download --explain --format json`
/// (`docs/json-output.md`).
pub const EXPLAIN_SCHEMA: u32 = 1;

/// At most this many newer versions are printed per kernel in text (JSON has
/// every one looked up).
const NEWER_SHOWN: usize = 3;

/// The explanations of `kernels`, and the kernels whose variants could not be
/// listed (as JSON objects with `repo_id`, `commit`, `code` and `message`).
pub struct Explained {
    /// One explanation per kernel that could be listed, in lock order.
    pub kernels: Vec<KernelExplanation>,
    /// One typed object per kernel that could not be.
    pub failed: Vec<serde_json::Value>,
}

impl Explained {
    /// Whether every kernel was listed and has a chosen variant.
    pub fn all_chosen(&self) -> bool {
        self.failed.is_empty() && self.kernels.iter().all(|k| !k.chosen.is_empty())
    }
}

/// Which refs name the versions of each kernel of the project in
/// `project_dir`, whose lock is in `format`: `vN` branches for every entry of
/// a 0.17 lock (that runtime reads integer versions only); for a variant-hash
/// lock, what the `pyproject.toml` requirement selects (branches for an
/// integer, tags for a specifier, both for a revision or a kernel it does not
/// name).
fn version_refs(
    project_dir: &Path,
    format: LockFormat,
) -> impl Fn(&LockedKernel) -> VersionRefs + Sync {
    let kernel_locks = format == LockFormat::KernelLocks;
    let requirements: Vec<(RepoId, VersionRefs)> = Manifest::read(project_dir)
        .map(|m| {
            m.dependencies
                .into_iter()
                .map(|dep| {
                    let kind = match dep.requirement {
                        Requirement::Branch(_) => VersionRefs::Branches,
                        Requirement::Pep440(_) | Requirement::Semver(_) => VersionRefs::Tags,
                        Requirement::Revision(_) => VersionRefs::Any,
                    };
                    (dep.repo_id, kind)
                })
                .collect()
        })
        .unwrap_or_default();
    move |kernel: &LockedKernel| {
        if kernel_locks {
            return VersionRefs::Branches;
        }
        requirements
            .iter()
            .find(|(repo_id, _)| *repo_id == kernel.repo_id)
            .map_or(VersionRefs::Any, |(_, kind)| *kind)
    }
}

/// Explains every kernel of the project in `project_dir`; a kernel that
/// cannot be listed is reported on stderr and in [`Explained::failed`].
pub fn collect(
    client: &HubClient,
    cache: &HubCache,
    project_dir: &Path,
    format: LockFormat,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
) -> miette::Result<Explained> {
    let kinds = version_refs(project_dir, format);
    let results = super::runtime()?.block_on(explain(client, cache, kernels, options, &kinds));
    let mut explained = Explained {
        kernels: Vec::new(),
        failed: Vec::new(),
    };
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(kernel) => explained.kernels.push(kernel),
            Err((kernel, error)) => {
                use miette::Diagnostic;
                explained.failed.push(serde_json::json!({
                    "repo_id": kernel.repo_id.to_string(),
                    "commit": kernel.commit,
                    "code": error.code().map(|c| c.to_string()),
                    "message": error.to_string(),
                }));
                failures.push((
                    crate::install::plan::label(&kernel.repo_id, &kernel.commit),
                    error,
                ));
            }
        }
    }
    super::causes::print_kernel_failures(failures, client.endpoint(), "not listed");
    Ok(explained)
}

/// The requirement that selects `newer`, as `kernels add` takes it: `N` for
/// branch `vN`, `">=X.Y.Z"` for tag `vX.Y.Z`.
fn requirement_for(newer: &NewerVersion) -> String {
    let version = newer.name.trim_start_matches('v');
    match newer.kind {
        "branch" => version.to_owned(),
        _ => format!("\">={version}\""),
    }
}

/// Prints one kernel: the chosen variants, a line per rejected variant with
/// its reason, then the newer versions that have a build for the
/// environment (and, when none suits now, the command that moves to the
/// newest of them).
/// `rejected` caps the rejected-variant lines (`kernels env` shows a few,
/// `--explain` every one).
pub fn print_text(kernel: &KernelExplanation, rejected: Option<usize>) {
    let chosen = if kernel.chosen.is_empty() {
        "no variant suits this environment".to_owned()
    } else {
        kernel.chosen.join(", ")
    };
    println!("{}@{}: {chosen}", kernel.repo_id, kernel.commit.short());
    let others: Vec<_> = kernel.variants.iter().filter(|v| !v.chosen).collect();
    let shown = rejected.unwrap_or(others.len()).min(others.len());
    for v in &others[..shown] {
        println!(
            "  - {}: {}",
            v.name,
            v.reason.as_deref().unwrap_or_default()
        );
    }
    if shown < others.len() {
        println!(
            "  - … and {} more (`kernels download --explain` gives every reason)",
            others.len() - shown
        );
    }
    match (&kernel.newer, &kernel.newer_error) {
        (Some(newer), _) if !newer.is_empty() => {
            println!("  newer versions with a build for this environment:");
            for n in newer.iter().take(NEWER_SHOWN) {
                println!(
                    "    {} ({}): {}",
                    n.name,
                    n.commit.short(),
                    n.variants.join(", ")
                );
            }
            if newer.len() > NEWER_SHOWN {
                println!(
                    "    … and {} more (`--format json` lists them)",
                    newer.len() - NEWER_SHOWN
                );
            }
            if kernel.chosen.is_empty() {
                println!(
                    "  hint: to move to {}, require it and lock again:\n\n      kernels add {} {}\n",
                    newer[0].name,
                    kernel.repo_id,
                    requirement_for(&newer[0])
                );
            }
        }
        (Some(_), _) if kernel.chosen.is_empty() => {
            println!("  no newer version has a build for this environment either");
        }
        (None, Some(err)) => println!("  newer versions could not be looked up: {err}"),
        (None, None) if kernel.chosen.is_empty() => {
            println!("  newer versions were not looked up (offline)");
        }
        _ => {}
    }
}

/// `kernels download --explain`: per kernel the chosen variant, then every
/// other with its reason and the newer versions that would suit. Exit 1 when
/// a kernel could not be listed or has no variant for the environment.
pub fn print(
    client: &HubClient,
    cache: &HubCache,
    project_dir: &Path,
    lock_format: LockFormat,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    format: Format,
) -> miette::Result<ExitCode> {
    let explained = collect(client, cache, project_dir, lock_format, kernels, options)?;
    match format {
        Format::Json => {
            let environment = match &options.selection {
                crate::variant::VariantSelection::Detected { env, .. } => {
                    serde_json::Value::String(env.describe())
                }
                _ => serde_json::Value::Null,
            };
            let doc = serde_json::json!({
                "schema": EXPLAIN_SCHEMA,
                "command": "download --explain",
                "environment": environment,
                "kernels": explained.kernels,
                "failed": explained.failed,
            });
            println!("{doc:#}");
        }
        Format::Text => explained
            .kernels
            .iter()
            .for_each(|kernel| print_text(kernel, None)),
    }
    Ok(if explained.all_chosen() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
