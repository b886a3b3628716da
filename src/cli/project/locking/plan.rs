//! Planning a lock: the manifest, the target profile, what to keep and what
//! to resolve again (sticky, a conflicted lock's agreed entries, the
//! upgrades asked for), the release cooldown, and the resolution behind a
//! spinner.

use std::path::{Path, PathBuf};

use kernels_cache::HubCache;
use kernels_types::repo_id::RepoId;

use crate::cli::args::RepoTypeArg;
use crate::cli::printer::Printer;
use crate::cli::progress::ProgressMode;
use crate::cli::project::profile::choose_profile;
use crate::cli::settings::Settings;
use crate::lock::conflict;
use crate::lock::cooldown::{Cooldown, ExcludeNewer, Use};
use crate::lock::format::{LockFormat, Lockfile};
use crate::lock::freshness::LockOnDisk;
use crate::lock::manifest::Manifest;
use crate::lock::profile::Profile;
use crate::lock::profile::RequirementForms;
use crate::lock::project::{LockOptions, lock_project};
use crate::lock::sticky::{Change, Upgrade, changes};

/// `--upgrade-package` names a repository the project does not depend on.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("--upgrade-package {repo_id}: `{repo_id}` is not a dependency of {manifest}")]
#[diagnostic(
    code(kernels::lock::unknown_package),
    help("the project's dependencies are: {known}")
)]
struct UnknownPackage {
    repo_id: RepoId,
    manifest: PathBuf,
    known: String,
}

/// What `kernels lock` would write: the outcome, the profile and the text.
pub(super) struct Plan {
    pub(super) outcome: crate::lock::project::LockOutcome,
    /// The declared targets the outcome's fit was checked for.
    pub(super) targets: crate::variant::Targets,
    pub(super) profile: Profile,
    /// The manifest locked (its declared targets are checked before writing).
    pub(super) manifest: Manifest,
    pub(super) old_format: Option<LockFormat>,
    pub(super) json: String,
    /// Repo ids kept from a conflicted lock without resolving them again.
    pub(super) kept: Vec<String>,
    /// What changes from the lock on disk (empty without one).
    pub(super) changes: Vec<Change>,
    /// Whether a lock in the same format existed (sticky resolution applied).
    pub(super) had_previous: bool,
    /// How long resolving took.
    pub(super) elapsed: std::time::Duration,
    /// The release cooldown in force, if any.
    pub(super) cooldown: Option<Cooldown>,
}

/// What [`plan`] resolves: the project, its target-runtime and repository
/// options, what to trust and upgrade, and the entries of a conflicted lock.
pub(super) struct PlanInputs<'a> {
    pub(super) project_dir: &'a Path,
    /// `--target-runtime`.
    pub(super) target_runtime: Option<&'a str>,
    /// `--repo-type`.
    pub(super) repo_type: Option<RepoTypeArg>,
    /// `--trust`, added to `trust` under `[tool.kernels]`.
    pub(super) extra_trust: &'a [RepoId],
    /// `--allow-model-repos`.
    pub(super) allow_model_repos: bool,
    /// A conflicted lock's agreed entries (variant-hash locks only).
    pub(super) merged: Option<&'a conflict::Merged>,
    /// `--upgrade` / `--upgrade-package`.
    pub(super) upgrade: &'a Upgrade,
    /// `--cuda-capability` / `--rocm-arch`.
    pub(super) targets: &'a [kernels_types::fit::Target],
    /// `--exclude-newer`, and whether the command locks or checks.
    pub(super) exclude_newer: (Option<&'a ExcludeNewer>, Use),
}

/// Resolves the manifest for its target profile, as `kernels lock` does, without
/// writing. Entries a conflicted lock agrees on (`inputs.merged`, variant-hash
/// locks only) are kept instead of resolved again. The profile line and the
/// spinner follow `printer`; retries are shown in `retries` mode.
pub(super) fn plan(
    inputs: &PlanInputs<'_>,
    settings: &Settings,
    printer: &Printer,
    retries: ProgressMode,
    on_disk: &LockOnDisk,
) -> miette::Result<Plan> {
    let manifest = Manifest::read(inputs.project_dir)?;
    let old_lock = on_disk.lockfile().cloned();
    let old_format = old_lock
        .as_ref()
        .map(|lock| lock.format())
        .or(inputs.merged.map(|_| LockFormat::VariantHash));
    let upgrade =
        check_upgrade_packages(inputs.upgrade, &manifest, old_lock.as_ref(), on_disk.path())?;
    let profile = choose_profile(
        inputs.project_dir,
        inputs.target_runtime,
        manifest.target_runtime(),
        old_format,
        inputs.repo_type,
        Some(RequirementForms::of(
            manifest.dependencies.iter().map(|d| &d.requirement),
        )),
        printer,
    )?;
    let merged = inputs
        .merged
        .filter(|_| profile.lock_format == LockFormat::VariantHash);
    let mut to_resolve = manifest.clone();
    to_resolve
        .dependencies
        .retain(|dep| agreed_entry(merged, &dep.repo_id).is_none());
    let targets = crate::cli::project::fit::lock::declared(inputs.targets, &manifest);
    let trust = [inputs.extra_trust, &manifest.settings.trust].concat();
    // Sticky resolution starts from a lock in the format being written; a
    // conflicted lock is repaired from its agreed entries instead.
    let previous = old_lock
        .clone()
        .filter(|lock| lock.format() == profile.lock_format && merged.is_none());
    let had_previous = previous.is_some();
    let cooldown = cooldown_in_force(inputs, &manifest)?;
    let options = LockOptions {
        trust,
        allow_model_repos: inputs.allow_model_repos,
        previous,
        upgrade,
        cache: Some(HubCache::new(&settings.cache_dir)),
        targets: targets.list.clone(),
        cooldown: cooldown.clone(),
    };
    let started = std::time::Instant::now();
    let mut outcome = resolve(&profile, &to_resolve, &options, settings, printer, retries)?;
    let elapsed = started.elapsed();
    let kept = keep_agreed(merged, &manifest, &mut outcome.lockfile);
    let json = outcome.lockfile.to_json();
    let changes = changes(
        old_lock.as_ref(),
        &outcome.lockfile,
        &outcome.previous_labels,
        &outcome.labels,
    );
    Ok(Plan {
        outcome,
        targets,
        profile,
        manifest,
        old_format,
        json,
        kept,
        changes,
        had_previous,
        elapsed,
        cooldown,
    })
}

/// Resolves `to_resolve` for `profile` behind a `Resolving N kernels`
/// spinner; a failure becomes the CLI's lock error.
fn resolve(
    profile: &Profile,
    to_resolve: &Manifest,
    options: &LockOptions,
    settings: &Settings,
    printer: &Printer,
    retries: ProgressMode,
) -> miette::Result<crate::lock::project::LockOutcome> {
    let client = crate::cli::project::client::client_showing_retries(settings, printer, retries)?;
    let spinner = crate::cli::progress::Spinner::start(
        printer,
        printer.progress_mode(),
        &format!(
            "Resolving {}",
            crate::cli::progress::plural(to_resolve.dependencies.len(), "kernel")
        ),
    );
    let outcome = crate::cli::project::client::runtime()?
        .block_on(lock_project(&client, profile, to_resolve, options));
    drop(spinner);
    outcome.map_err(|err| crate::cli::project::causes::lock_failure(err, settings))
}

/// The release cooldown in force for this run (`--exclude-newer` or the
/// manifest's `exclude-newer` settings), measured from now.
fn cooldown_in_force(
    inputs: &PlanInputs<'_>,
    manifest: &Manifest,
) -> miette::Result<Option<crate::lock::cooldown::Cooldown>> {
    let (flag, purpose) = inputs.exclude_newer;
    manifest
        .settings
        .cooldown
        .in_force(flag, purpose, jiff::Timestamp::now())
        .map_err(|err| {
            miette::miette!(
                code = "kernels::lock::exclude_newer",
                "{}: exclude-newer: {err}",
                manifest.path.display()
            )
        })
}

/// `--upgrade-package` may name only dependencies of the manifest or entries
/// of the lock at `lock_path`, matched exactly, else ignoring ASCII case (as
/// `kernels add` / `kernels remove` match them). Returns the upgrade with each
/// name spelled as the manifest (or the lock) spells it.
pub fn check_upgrade_packages(
    upgrade: &Upgrade,
    manifest: &Manifest,
    old_lock: Option<&Lockfile>,
    lock_path: &Path,
) -> miette::Result<Upgrade> {
    let Upgrade::Packages(repos) = upgrade else {
        return Ok(upgrade.clone());
    };
    let mut known: Vec<RepoId> = manifest
        .dependencies
        .iter()
        .map(|d| d.repo_id.clone())
        .collect();
    if let Some(Ok(locked)) = old_lock.map(|lock| lock.locked_kernels(lock_path)) {
        known.extend(locked.into_iter().map(|k| k.repo_id));
    }
    let spelled = |repo: &RepoId| {
        known.iter().find(|k| *k == repo).or_else(|| {
            known
                .iter()
                .find(|k| k.as_str().eq_ignore_ascii_case(repo.as_str()))
        })
    };
    let mut canonical = Vec::new();
    for repo in repos {
        match spelled(repo) {
            Some(known) => canonical.push(known.clone()),
            None => return Err(unknown_package(repo, manifest).into()),
        }
    }
    Ok(Upgrade::Packages(canonical))
}

/// The error for an `--upgrade-package` the project does not depend on.
fn unknown_package(repo: &RepoId, manifest: &Manifest) -> UnknownPackage {
    let names: Vec<String> = manifest
        .dependencies
        .iter()
        .map(|d| d.repo_id.to_string())
        .collect();
    UnknownPackage {
        repo_id: repo.clone(),
        manifest: manifest.path.clone(),
        known: if names.is_empty() {
            "none ([tool.kernels.dependencies] is empty)".to_owned()
        } else {
            names.join(", ")
        },
    }
}

/// The entry of `repo` both sides of a conflicted lock agree on, if any.
fn agreed_entry<'a>(
    merged: Option<&'a conflict::Merged>,
    repo: &RepoId,
) -> Option<&'a crate::lock::format::KernelHashLock> {
    merged.and_then(|m| m.agreed.iter().find(|a| a.repo_id == repo.as_str()))
}

/// Puts the agreed entries of a conflicted lock back into the freshly
/// resolved `lockfile`, in manifest order; returns their repo ids.
fn keep_agreed(
    merged: Option<&conflict::Merged>,
    manifest: &Manifest,
    lockfile: &mut Lockfile,
) -> Vec<String> {
    let mut kept = Vec::new();
    let (Some(_), Lockfile::VariantHash(fresh)) = (merged, &*lockfile) else {
        return kept;
    };
    let entries = manifest
        .dependencies
        .iter()
        .filter_map(|dep| match agreed_entry(merged, &dep.repo_id) {
            Some(entry) => {
                kept.push(entry.repo_id.clone());
                Some(entry.clone())
            }
            None => fresh
                .iter()
                .find(|f| f.repo_id == dep.repo_id.as_str())
                .cloned(),
        })
        .collect();
    *lockfile = Lockfile::VariantHash(entries);
    kept
}
