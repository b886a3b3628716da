//! Declared targets at lock time: every locked kernel must have a build
//! variant for every declared target (`[[tool.kernels.targets]]`) that names
//! `torch` and a `backend`, as uv's `required-environments` requires a
//! distribution for every declared environment.
//!
//! The verdict is the runtime's: each target is made into the environment
//! `kernels download` would select for (the declared values, `requires-python`
//! for the Python part), and the locked commit's variant names (the lock's
//! variant hashes, the `build/` listing the 0.17+ lock already read, else one
//! tree listing) are ranked with the profile's [`VariantRules`]. Nothing
//! large is downloaded. A kernel without a build is one diagnostic per target
//! (the cause), listing every kernel it affects and, per kernel, the versions
//! (`vN` branches, release tags) that have a build for it; `[tool.kernels]
//! missing-target-builds = "warn"` makes it a warning.
//!
//! A target without `torch` or `backend`, or with a backend variant selection
//! does not model (`tpu`, `cann-X.Y`), is not checked here; `-v` says so.

use std::collections::BTreeSet;
use std::path::Path;

use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

use crate::cli::printer::Printer;
use crate::cli::project::declared::{DeclaredEnv, declared_envs};
use crate::lock::format::LockedKernel;
use crate::lock::manifest::{Manifest, MissingTargetBuilds};
use crate::lock::profile::Profile;
use crate::lock::project::LockOutcome;
use crate::variant::{VariantRules, VariantSelection};

/// A declared target without a build of some locked kernels: one cause.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("no build for {target} ({key} of {manifest}): {kernels}")]
#[diagnostic(code(kernels::lock::no_target_build), help("{help}"))]
pub struct NoTargetBuild {
    /// `torch 2.7 + cuda-12.6`.
    target: String,
    /// `targets[1]`.
    key: String,
    /// The `pyproject.toml`.
    manifest: String,
    /// The kernels without a build, `org/name v1, …`.
    kernels: String,
    /// Per kernel the versions that have a build, then the fix.
    help: String,
}

/// Several declared targets without builds: one diagnostic each.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} declared targets have no build of a locked kernel; {lock} was not changed", causes.len())]
#[diagnostic(code(kernels::lock::missing_target_builds))]
pub struct MissingBuilds {
    /// The lock file.
    lock: String,
    /// One per target.
    #[related]
    causes: Vec<NoTargetBuild>,
}

/// Each repository's versions with their variants, listed once per run
/// (the error text of a listing that failed).
type Versions =
    std::collections::HashMap<RepoId, Result<Vec<crate::lock::inspect::VersionInfo>, String>>;

/// The last fix of the error, left out of the warnings of
/// `missing-target-builds = "warn"`.
const WARN_INSTEAD: &str =
    ", or set `missing-target-builds = \"warn\"` under [tool.kernels] to lock anyway";

/// What the check needs of a finished lock plan.
pub(super) struct LockedProject<'a> {
    /// The manifest locked.
    pub(super) manifest: &'a Manifest,
    /// The profile it was locked for.
    pub(super) profile: &'a Profile,
    /// The resolution (its lock, labels and read variants).
    pub(super) outcome: &'a LockOutcome,
    /// The lock file's path, for messages.
    pub(super) lock_path: &'a Path,
}

/// Checks every locked kernel of `project` against its declared targets:
/// `Ok` when each has a build for each (or the setting is `warn`, after one
/// warning per target); else the error, one diagnostic per target. Listing a
/// commit's `build/` or a kernel's versions uses `client`; a listing that
/// fails leaves that kernel unchecked (the lock does not fail on it).
pub(super) fn check(
    project: &LockedProject<'_>,
    client: &HubClient,
    printer: &Printer,
) -> miette::Result<()> {
    let (targets, skipped) = declared_envs(&project.manifest.settings, &project.manifest.path);
    if printer.is_verbose() {
        for key in &skipped {
            printer.status(format_args!(
                "note: {key} of {} names no `torch` and `backend` variant selection models: not checked at lock time",
                project.manifest.path.display()
            ));
        }
    }
    if targets.is_empty() {
        return Ok(());
    }
    let rules = VariantRules::of_profile(project.profile);
    let kernels = project
        .outcome
        .lockfile
        .locked_kernels(project.lock_path)
        .map_err(miette::Report::new)?;
    let rt = crate::cli::project::client::runtime()?;
    let listed: Vec<(LockedKernel, Option<BTreeSet<String>>)> = kernels
        .into_iter()
        .map(|kernel| {
            let names = variant_names(&kernel, project, client, &rt);
            (kernel, names)
        })
        .collect();
    let mut causes = Vec::new();
    let mut versions = Versions::default();
    for target in &targets {
        let selection = VariantSelection::Detected {
            env: Box::new(target.env.clone()),
            rules,
        };
        let missing: Vec<&LockedKernel> = listed
            .iter()
            .filter(|(kernel, names)| {
                names.as_ref().is_some_and(|names| {
                    selection
                        .select(&kernel.repo_id, &kernel.commit, names)
                        .is_err()
                })
            })
            .map(|(kernel, _)| kernel)
            .collect();
        if !missing.is_empty() {
            let hub = (client, &rt, &mut versions);
            causes.push(cause(target, &missing, &selection, project, hub));
        }
    }
    finish(causes, project, printer)
}

/// The verdict: nothing missing, warnings (`missing-target-builds = "warn"`),
/// or the error.
fn finish(
    mut causes: Vec<NoTargetBuild>,
    project: &LockedProject<'_>,
    printer: &Printer,
) -> miette::Result<()> {
    if causes.is_empty() {
        return Ok(());
    }
    if project.manifest.settings.missing_target_builds == MissingTargetBuilds::Warn {
        for cause in &causes {
            printer.status(format_args!("warning: {cause}"));
            for line in cause.help.replace(WARN_INSTEAD, "").lines() {
                printer.status(format_args!("  {line}"));
            }
        }
        return Ok(());
    }
    if causes.len() == 1 {
        return Err(causes.remove(0).into());
    }
    Err(MissingBuilds {
        lock: project.lock_path.display().to_string(),
        causes,
    }
    .into())
}

/// The diagnostic of `target` for the `missing` kernels: per kernel the
/// versions with a build for it and the command that requires one, then the
/// other fixes.
fn cause(
    target: &DeclaredEnv,
    missing: &[&LockedKernel],
    selection: &VariantSelection,
    project: &LockedProject<'_>,
    (client, rt, known): (&HubClient, &tokio::runtime::Runtime, &mut Versions),
) -> NoTargetBuild {
    let mut lines: Vec<String> = missing
        .iter()
        .map(|kernel| {
            let versions = known.entry(kernel.repo_id.clone()).or_insert_with(|| {
                rt.block_on(crate::lock::inspect::versions(
                    client,
                    project.profile.repo_type,
                    &kernel.repo_id,
                ))
                .map_err(|err| err.to_string())
            });
            match versions {
                Ok(versions) => versions_line(&kernel.repo_id, versions, selection),
                Err(err) => format!(
                    "{}: its versions could not be listed ({err})",
                    kernel.repo_id
                ),
            }
        })
        .collect();
    let or = if lines.iter().all(|l| l.contains(": no version has one")) {
        "change"
    } else {
        "or change"
    };
    lines.push(format!(
        "{or} or remove {} in [[tool.kernels.targets]] of {}{WARN_INSTEAD}",
        target.key,
        project.manifest.path.display()
    ));
    NoTargetBuild {
        target: target.label.clone(),
        key: target.key.clone(),
        manifest: project.manifest.path.display().to_string(),
        kernels: missing
            .iter()
            .map(|k| format!("{} {}", k.repo_id, label(k, project.outcome)))
            .collect::<Vec<_>>()
            .join(", "),
        help: lines.join("\n"),
    }
}

/// What `versions` of `repo` have a build for `selection`'s environment,
/// with the command that requires one: `kernels add REPO N` for the highest
/// such `vN` branch, else the release tag to select.
fn versions_line(
    repo: &RepoId,
    versions: &[crate::lock::inspect::VersionInfo],
    selection: &VariantSelection,
) -> String {
    let fitting: Vec<&crate::lock::inspect::VersionInfo> = versions
        .iter()
        .filter(|v| {
            let names = v.variants.iter().cloned().collect();
            selection.select(repo, &v.commit, &names).is_ok()
        })
        .collect();
    let names = |list: &[&crate::lock::inspect::VersionInfo]| {
        list.iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if fitting.is_empty() {
        let all: Vec<&crate::lock::inspect::VersionInfo> = versions.iter().collect();
        return if all.is_empty() {
            format!("{repo}: no version has one (it has no `vN` branch or release tag)")
        } else {
            format!("{repo}: no version has one (checked {})", names(&all))
        };
    }
    let how = match fitting.iter().filter_map(|v| v.version).max() {
        Some(n) => format!("`kernels add {repo} {n}`"),
        None => format!(
            "edit its requirement in [tool.kernels.dependencies] to select {}, then `kernels lock -P {repo}`",
            fitting.last().map_or("", |v| v.name.as_str())
        ),
    };
    format!("{repo}: {} has one; require it: {how}", names(&fitting))
}

/// What the locked commit of `kernel` is called (`v1`, `v0.1.1`), else its
/// short commit.
fn label(kernel: &LockedKernel, outcome: &LockOutcome) -> String {
    outcome
        .variants
        .iter()
        .find(|v| v.repo_id == kernel.repo_id.as_str())
        .map(|v| v.label.clone())
        .or_else(|| outcome.labels.get(kernel.repo_id.as_str()).cloned())
        .unwrap_or_else(|| kernel.commit.short().to_owned())
}

/// The variant directories of a locked kernel: the lock's hashes, the
/// variants the lock read (0.17+), else one listing of `build/`; `None` when
/// that listing fails.
fn variant_names(
    kernel: &LockedKernel,
    project: &LockedProject<'_>,
    client: &HubClient,
    rt: &tokio::runtime::Runtime,
) -> Option<BTreeSet<String>> {
    if let Some(hashes) = &kernel.variants {
        return Some(hashes.keys().cloned().collect());
    }
    if let Some(read) = project
        .outcome
        .variants
        .iter()
        .find(|v| v.repo_id == kernel.repo_id.as_str())
    {
        return Some(read.variants.keys().cloned().collect());
    }
    rt.block_on(crate::lock::inspect::build_variants(
        client,
        project.profile.repo_type,
        &kernel.repo_id,
        &kernel.commit,
    ))
    .ok()
    .map(|names| names.into_iter().collect())
}
