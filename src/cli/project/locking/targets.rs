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
//! `kernels lock --check` runs the same check on the lock on disk (online with
//! the same listings; offline from the lock's hashes and the cache's listing
//! receipts, saying which kernels it cannot decide because the cache lacks
//! their listing).
//!
//! A target without `torch` or `backend`, or with a backend variant selection
//! does not model (`tpu`, `cann-X.Y`), is not checked here; `-v` says so.

use std::collections::BTreeSet;
use std::path::Path;

use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

use crate::cli::printer::Printer;
use crate::cli::project::declared::{DeclaredEnv, declared_envs};
use crate::lock::format::{LockedKernel, Lockfile};
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
    /// The lock checked.
    pub(super) lockfile: &'a Lockfile,
    /// The resolution that made it (its labels and read variants), when the
    /// lock was just planned.
    pub(super) outcome: Option<&'a LockOutcome>,
    /// The lock file's path, for messages.
    pub(super) lock_path: &'a Path,
}

/// Where the variant names of a locked commit and a kernel's versions come
/// from when neither the lock nor the resolution has them.
#[derive(Clone, Copy)]
pub(super) enum Listings<'a> {
    /// One tree listing per commit, one refs listing per kernel; the names
    /// are stored as the cache's listing receipts for the offline check.
    Hub(&'a HubClient, &'a HubCache),
    /// The cache's listing receipts only (offline); versions are not listed.
    Cache(&'a HubCache),
}

/// Checks every locked kernel of `project` against its declared targets:
/// `Ok` when each has a build for each (or the setting is `warn`, after one
/// warning per target); else the error, one diagnostic per target. Listing a
/// commit's `build/` or a kernel's versions uses `listings`; a listing that
/// fails, or that the cache lacks offline, leaves that kernel unchecked (the
/// lock does not fail on it; offline a note names it).
pub(super) fn check(
    project: &LockedProject<'_>,
    listings: Listings<'_>,
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
        .lockfile
        .locked_kernels(project.lock_path)
        .map_err(miette::Report::new)?;
    let hub = match listings {
        Listings::Hub(client, _) => Some((client, crate::cli::project::client::runtime()?)),
        Listings::Cache(_) => None,
    };
    let hub = hub.as_ref().map(|(client, rt)| (*client, rt));
    let listed: Vec<(LockedKernel, Option<BTreeSet<String>>)> = kernels
        .into_iter()
        .map(|kernel| {
            let names = variant_names(&kernel, project, listings, hub.map(|(_, rt)| rt));
            (kernel, names)
        })
        .collect();
    match listings {
        Listings::Cache(_) => undecided_note(&listed, project, printer),
        Listings::Hub(_, cache) => store_receipts(cache, &listed, project),
    }
    let mut causes = Vec::new();
    let mut versions = Versions::default();
    for target in &targets {
        let selection = VariantSelection::Detected {
            env: Box::new(target.env.clone()),
            rules,
        };
        let missing = without_build(&listed, &selection);
        if !missing.is_empty() {
            causes.push(cause(
                target,
                &missing,
                &selection,
                project,
                (hub, &mut versions),
            ));
        }
    }
    finish(causes, project, printer)
}

/// Stores the variant names listed from the Hub as the cache's listing
/// receipts, which the offline check reads.
fn store_receipts(
    cache: &HubCache,
    listed: &[(LockedKernel, Option<BTreeSet<String>>)],
    project: &LockedProject<'_>,
) {
    for (kernel, names) in listed {
        if let Some(names) = names {
            // A cache that cannot be written only costs the offline check
            // its decision.
            let receipt = kernels_cache::ListingReceipt {
                variants: names.clone(),
            };
            let _ = cache
                .repo(&kernel.repo_id, project.profile.repo_type)
                .write_listing_receipt(kernel.commit.as_str(), &receipt);
        }
    }
}

/// The listed kernels that have no variant `selection` picks (a kernel whose
/// variants are not known is not among them).
fn without_build<'k>(
    listed: &'k [(LockedKernel, Option<BTreeSet<String>>)],
    selection: &VariantSelection,
) -> Vec<&'k LockedKernel> {
    listed
        .iter()
        .filter(|(kernel, names)| {
            names.as_ref().is_some_and(|names| {
                selection
                    .select(&kernel.repo_id, &kernel.commit, names)
                    .is_err()
            })
        })
        .map(|(kernel, _)| kernel)
        .collect()
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
    (hub, known): (
        Option<(&HubClient, &tokio::runtime::Runtime)>,
        &mut Versions,
    ),
) -> NoTargetBuild {
    let mut lines: Vec<String> = missing
        .iter()
        .map(|kernel| {
            let Some((client, rt)) = hub else {
                return format!(
                    "{}: its versions are not listed offline; `kernels lock --check` online names the ones with a build",
                    kernel.repo_id
                );
            };
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
    versions_with(repo, versions, selection, "one")
}

/// For a kernel `kernels download` found no variant of for `selection`'s
/// environment: which versions of `repo` (`vN` branches, release tags, as
/// listed on the Hub) have a `build`, with the command that requires one, or
/// that none has; why when they cannot be listed.
pub fn versions_with_build(
    (client, rt): (&HubClient, &tokio::runtime::Runtime),
    repo_type: kernels_types::wire::RepoType,
    repo: &RepoId,
    selection: &VariantSelection,
    build: &str,
) -> String {
    match rt.block_on(crate::lock::inspect::versions(client, repo_type, repo)) {
        Ok(versions) => versions_with(repo, &versions, selection, build),
        Err(err) => format!("{repo}: its versions could not be listed ({err})"),
    }
}

/// [`versions_line`], saying `has {build}` of the fitting versions.
fn versions_with(
    repo: &RepoId,
    versions: &[crate::lock::inspect::VersionInfo],
    selection: &VariantSelection,
    build: &str,
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
            format!("{repo}: no version has {build} (it has no `vN` branch or release tag)")
        } else {
            format!("{repo}: no version has {build} (checked {})", names(&all))
        };
    }
    let how = match fitting.iter().filter_map(|v| v.version).max() {
        Some(n) => format!("`kernels add {repo} {n}`"),
        None => format!(
            "edit its requirement in [tool.kernels.dependencies] to select {}, then `kernels lock -P {repo}`",
            fitting.last().map_or("", |v| v.name.as_str())
        ),
    };
    format!("{repo}: {} has {build}; require it: {how}", names(&fitting))
}

/// What the locked commit of `kernel` is called (`v1`, `v0.1.1`) by the
/// resolution, else its short commit.
fn label(kernel: &LockedKernel, outcome: Option<&LockOutcome>) -> String {
    outcome
        .and_then(|outcome| {
            outcome
                .variants
                .iter()
                .find(|v| v.repo_id == kernel.repo_id.as_str())
                .map(|v| v.label.clone())
                .or_else(|| outcome.labels.get(kernel.repo_id.as_str()).cloned())
        })
        .unwrap_or_else(|| kernel.commit.short().to_owned())
}

/// Offline: one note naming the kernels whose target builds cannot be
/// decided because neither the lock nor the cache lists their variants.
fn undecided_note(
    listed: &[(LockedKernel, Option<BTreeSet<String>>)],
    project: &LockedProject<'_>,
    printer: &Printer,
) {
    let undecided: Vec<String> = listed
        .iter()
        .filter(|(_, names)| names.is_none())
        .map(|(kernel, _)| format!("{} {}", kernel.repo_id, label(kernel, project.outcome)))
        .collect();
    if undecided.is_empty() {
        return;
    }
    printer.status(format_args!(
        "note: cannot decide offline whether {} {} a build for the declared targets of {}: the cache lacks {} build listing; run `kernels lock --check` online",
        undecided.join(", "),
        if undecided.len() == 1 { "has" } else { "have" },
        project.manifest.path.display(),
        if undecided.len() == 1 { "its" } else { "their" },
    ));
}

/// The variant directories of a locked kernel: the lock's hashes, the
/// variants the resolution read (0.17+), else one listing of `build/` (the
/// Hub's, or offline the cache's listing receipt); `None` when that listing
/// fails or the cache has none.
fn variant_names(
    kernel: &LockedKernel,
    project: &LockedProject<'_>,
    listings: Listings<'_>,
    rt: Option<&tokio::runtime::Runtime>,
) -> Option<BTreeSet<String>> {
    if let Some(hashes) = &kernel.variants {
        return Some(hashes.keys().cloned().collect());
    }
    if let Some(read) = project.outcome.and_then(|outcome| {
        outcome
            .variants
            .iter()
            .find(|v| v.repo_id == kernel.repo_id.as_str())
    }) {
        return Some(read.variants.keys().cloned().collect());
    }
    match (listings, rt) {
        (Listings::Hub(client, _), Some(rt)) => rt
            .block_on(crate::lock::inspect::build_variants(
                client,
                project.profile.repo_type,
                &kernel.repo_id,
                &kernel.commit,
            ))
            .ok()
            .map(|names| names.into_iter().collect()),
        (Listings::Cache(cache), _) => cache
            .repo(&kernel.repo_id, project.profile.repo_type)
            .read_listing_receipt(kernel.commit.as_str())
            .map(|receipt| receipt.variants),
        (Listings::Hub(..), None) => None,
    }
}
