//! Locking a project, as one request ([`LockRequest`], with defaults) that
//! `kernels lock` builds from its flags and `add`, `remove`, `lock
//! --breaking` and the stale-lock gate build directly: the check of
//! `--check` / `--locked`, raising majors (`--breaking`), or planning
//! (manifest, target profile, sticky resolution, fit of the declared targets)
//! and writing `kernels.lock`.

mod breaking;
mod check;
mod plan;
mod targets;
mod write;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kernels_types::fit::Target;
use kernels_types::repo_id::RepoId;

use crate::cli::GlobalArgs;
use crate::cli::args::{OutputFormat, RepoTypeArg};
use crate::cli::json::{CheckDoc, ErrorDoc, LockDoc};
use crate::cli::printer::Printer;
use crate::cli::settings::Settings;
use crate::lock::conflict;
use crate::lock::cooldown::{ExcludeNewer, Use};
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::freshness::{CheckMode, LockOnDisk};
use crate::lock::sticky::Upgrade;

use check::StaleLocked;
pub use check::{ensure_locked, offline_report, stale_online};
pub use plan::check_upgrade_packages;
use plan::{Plan, PlanInputs, plan};
pub use targets::versions_with_build;
use write::write_plan;

/// What to lock and how: the options of `kernels lock` as plain values.
/// [`LockRequest::for_project`] is `kernels lock <dir>` with every option at
/// its default; a caller sets only what it changes.
#[derive(Debug, Clone, Default)]
pub struct LockRequest {
    /// The project directory (holding `pyproject.toml` and `kernels.lock`).
    pub project_dir: PathBuf,
    /// `--target-runtime`: the `kernels` runtime version to lock for.
    pub target_runtime: Option<String>,
    /// `--repo-type`: overrides the target runtime's repository type.
    pub repo_type: Option<RepoTypeArg>,
    /// `--trust`: repositories locked whatever their publisher, on top of
    /// `trust` under `[tool.kernels]`.
    pub trust: Vec<RepoId>,
    /// `--allow-model-repos`.
    pub allow_model_repos: bool,
    /// `--check`: check the lock instead of writing it.
    pub check: bool,
    /// `--offline`: no request (only a check works offline).
    pub offline: bool,
    /// `--upgrade`: resolve every entry again.
    pub upgrade: bool,
    /// `--upgrade-package`: resolve these entries again.
    pub upgrade_package: Vec<RepoId>,
    /// `--breaking`: raise integer requirements to the newest fitting major
    /// first (`locking/breaking.rs`).
    pub breaking: bool,
    /// `--dry-run`: print what would change, write nothing.
    pub dry_run: bool,
    /// `--exclude-newer`: the release cooldown of this run.
    pub exclude_newer: Option<ExcludeNewer>,
    /// `--force`: replace a `kernels.lock` that is no lock file.
    pub force: bool,
    /// `--format`: text, or one JSON document on stdout.
    pub format: OutputFormat,
    /// Whether `--locked` itself was given (not only `KERNELS_LOCKED`): names
    /// the flag in the refusal of a check with an upgrade.
    pub locked_flag: bool,
    /// `--cuda-capability` / `--rocm-arch`: the declared targets (empty:
    /// the manifest's).
    pub targets: Vec<Target>,
}

impl LockRequest {
    /// `kernels lock <project_dir>` with every option at its default.
    pub fn for_project(project_dir: &Path) -> Self {
        LockRequest {
            project_dir: project_dir.to_owned(),
            ..LockRequest::default()
        }
    }
}

/// `kernels lock` would replace a file that is not a lock file.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("refusing to replace {}: it is not a kernels lock file ({detail})", path.display())]
#[diagnostic(
    code(kernels::lock::not_ours),
    help("move it away, or run `kernels lock --force` to replace it with a lock file")
)]
struct NotOurs {
    path: PathBuf,
    detail: String,
}

/// `kernels.lock` is frozen: `kernels lock` may not update it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} is frozen (--frozen or KERNELS_FROZEN): `kernels lock` does not update it", path.display())]
#[diagnostic(
    code(kernels::lock::frozen),
    help(
        "drop --frozen / unset KERNELS_FROZEN to update the lock, or use `kernels lock --check` to check it"
    )
)]
struct Frozen {
    path: PathBuf,
}

/// `--check` / `--locked` (or `KERNELS_LOCKED`) together with `--upgrade` /
/// `--upgrade-package`: a check compares the lock with a sticky resolution,
/// so it cannot say whether an upgrade would change it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "{check} cannot be used with {upgrade}: a check does not upgrade, so it cannot tell what the upgrade would change"
)]
#[diagnostic(code(kernels::lock::check_with_upgrade), help("{hint}"))]
struct CheckWithUpgrade {
    check: &'static str,
    upgrade: &'static str,
    hint: String,
}

impl CheckWithUpgrade {
    /// The refusal of `check` together with `upgrade`, with the command that
    /// shows what the upgrade would change (`--breaking` edits
    /// `pyproject.toml`, so it has no dry run).
    fn new(check: &'static str, upgrade: &'static str) -> Self {
        let hint = if upgrade == "--breaking" {
            format!(
                "run `kernels lock --breaking` without {check}, then review the changes to pyproject.toml and kernels.lock (`git diff`)"
            )
        } else {
            format!(
                "run `kernels lock {upgrade} --dry-run` to see what the upgrade would change, without writing"
            )
        };
        CheckWithUpgrade {
            check,
            upgrade,
            hint,
        }
    }
}

/// Resolves `[tool.kernels.dependencies]` for the target profile and writes
/// `kernels.lock` in its format, atomically and only when its bytes change.
/// Nothing is written unless every dependency resolved. A lock with merge conflict
/// markers is repaired: entries both sides agree on are kept, the others resolved
/// again. With `--check` or `--locked` nothing is written and a stale lock exits 1.
/// Status goes to stderr; `--format json` prints what was locked on stdout, and
/// when the command fails, a document with the failure typed (`error`,
/// `failed[]`) before the error goes to stderr.
pub fn run(
    request: LockRequest,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let json = request.format == OutputFormat::Json;
    let check = request.check || global.locked;
    let lock_file = request
        .project_dir
        .join(LOCK_FILE_NAME)
        .display()
        .to_string();
    let offline = settings.offline || request.offline;
    let dry_run = request.dry_run;
    let result = run_inner(request, settings, global, printer);
    if let Err(report) = &result
        && json
        // `--locked` printed its report already.
        && report.downcast_ref::<StaleLocked>().is_none()
    {
        let failed = report
            .downcast_ref::<crate::cli::project::causes::LockFailed>()
            .map(|f| f.failed.clone())
            .unwrap_or_default();
        let error = ErrorDoc::of(report);
        if check {
            printer.json_line(&CheckDoc {
                schema: CheckDoc::SCHEMA,
                command: "lock --check",
                lock_file,
                mode: if offline {
                    CheckMode::Offline
                } else {
                    CheckMode::Online
                },
                up_to_date: false,
                unverified: 0,
                findings: &[],
                error: Some(error),
                failed,
                changes: None,
                fit: None,
            });
        } else {
            printer.json_line(&LockDoc::failed(lock_file, dry_run, error, failed));
        }
    }
    result
}

/// `kernels lock` once its JSON failure document is taken care of: the check
/// of `--check` / `--locked`, raising majors (`--breaking`), or resolving and
/// writing.
pub fn run_inner(
    request: LockRequest,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let mut settings = settings.clone();
    settings.offline |= request.offline;
    let settings = &settings;
    let lock_path = request.project_dir.join(LOCK_FILE_NAME);
    if request.check || global.locked {
        if let Some(error) = check_with_upgrade(&request) {
            return Err(error.into());
        }
        return check::run(&request, settings, printer, lock_path);
    }
    if global.frozen {
        return Err(Frozen { path: lock_path }.into());
    }
    if request.breaking {
        return breaking::run(request, settings, global, printer);
    }
    let on_disk = LockOnDisk::read(&lock_path);
    if !request.force {
        not_ours(&on_disk, &lock_path)?;
    }
    let merged = on_disk
        .text()
        .and_then(|text| conflict::merge(text, &lock_path));
    let upgrade = if request.upgrade {
        Upgrade::All
    } else if !request.upgrade_package.is_empty() {
        Upgrade::Packages(request.upgrade_package.clone())
    } else {
        Upgrade::None
    };
    let inputs = PlanInputs {
        project_dir: &request.project_dir,
        target_runtime: request.target_runtime.as_deref(),
        repo_type: request.repo_type,
        extra_trust: &request.trust,
        allow_model_repos: request.allow_model_repos,
        merged: merged.as_ref(),
        upgrade: &upgrade,
        targets: &request.targets,
        exclude_newer: (request.exclude_newer.as_ref(), Use::Lock),
    };
    let printer = &printer.quiet_if(request.format == OutputFormat::Json);
    let plan = plan(&inputs, settings, printer, printer.lines_mode(), &on_disk)?;
    if !plan.manifest.settings.declared.is_empty() {
        check_declared(&plan, settings, printer, &lock_path)?;
    }
    write_plan(&request, printer, &plan, merged.as_ref(), &on_disk)
}

/// The error of `--check` (or `--locked`, `KERNELS_LOCKED`) given with an
/// upgrade flag, which only a lock that may change can honour; `None` when no
/// upgrade flag is given.
fn check_with_upgrade(request: &LockRequest) -> Option<CheckWithUpgrade> {
    if !(request.upgrade || !request.upgrade_package.is_empty() || request.breaking) {
        return None;
    }
    let check = if request.check {
        "--check"
    } else if request.locked_flag {
        "--locked"
    } else {
        "KERNELS_LOCKED"
    };
    let upgrade = if request.breaking {
        "--breaking"
    } else if request.upgrade {
        "--upgrade"
    } else {
        "--upgrade-package <REPO_ID>"
    };
    Some(CheckWithUpgrade::new(check, upgrade))
}

/// Errors with [`NotOurs`] when the file at `lock_path` is not empty and is
/// another tool's lock (which `--force` overwrites).
fn not_ours(on_disk: &LockOnDisk, lock_path: &Path) -> miette::Result<()> {
    if on_disk.lockfile().is_none()
        && let Some(text) = on_disk.text()
        && !text.trim().is_empty()
        && let Err(err) = Lockfile::parse(text, lock_path)
        && let Some(detail) = err.foreign_detail()
    {
        return Err(NotOurs {
            path: lock_path.to_path_buf(),
            detail: detail.to_owned(),
        }
        .into());
    }
    Ok(())
}

/// The declared targets' gate on a planned lock ([`targets::check`]), with
/// the Hub's listings (through the cache).
fn check_declared(
    plan: &Plan,
    settings: &Settings,
    printer: &Printer,
    lock_path: &Path,
) -> miette::Result<()> {
    let client = crate::cli::project::client::client_showing_retries(
        settings,
        printer,
        printer.lines_mode(),
    )?;
    let client = plan.profile.hub_client(&client);
    let project = targets::LockedProject {
        manifest: &plan.manifest,
        profile: &plan.profile,
        lockfile: &plan.outcome.lockfile,
        outcome: Some(&plan.outcome),
        lock_path,
    };
    let cache = kernels_cache::HubCache::new(&settings.cache_dir);
    targets::check(&project, targets::Listings::Hub(&client, &cache), printer)
}
