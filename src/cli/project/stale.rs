//! A stale lock is never used silently: before `kernels download` and
//! `kernels verify` use `kernels.lock`, it is checked without network against
//! `pyproject.toml` (every dependency locked, no extra entry, requirements that
//! the lock or the cache can contradict).
//!
//! * `--locked`: the full check of `kernels lock --locked` ([`crate::cli::project::locking::ensure_locked`]).
//! * `--frozen`: the lock is used as it is.
//! * offline (or a command that makes no request, `verify`): fail naming the
//!   entries and `kernels lock`.
//! * otherwise: lock again (sticky, so only the changed entries are resolved),
//!   say so, and go on, as `uv sync` does.

use std::path::{Path, PathBuf};

use crate::cli::GlobalArgs;
use crate::cli::printer::Printer;
use crate::cli::project::locking::{self, LockRequest};
use crate::cli::settings::Settings;
use crate::lock::format::LOCK_FILE_NAME;
use crate::lock::freshness::{CheckReport, FindingKind, LockOnDisk, check_offline};
use crate::lock::manifest::{MANIFEST_FILE_NAME, Manifest};
use kernels_cache::HubCache;
use kernels_types::wire::RepoType;

/// The lock does not cover the manifest and it may not be updated here.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} does not match {}: {}", lock.display(), manifest.display(), entries.join("; "))]
#[diagnostic(code(kernels::lock::stale), help("{help}"))]
pub struct StaleLock {
    lock: PathBuf,
    manifest: PathBuf,
    entries: Vec<String>,
    help: String,
}

/// Entry-level findings that prove the lock does not cover the manifest. File
/// level problems (missing, malformed, conflicted lock) are reported by the
/// commands themselves.
fn stale_entries(report: &CheckReport) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| f.repo_id.is_some() && f.kind.is_stale() && f.kind != FindingKind::Format)
        .map(|f| format!("{}: {}", f.repo_id.as_deref().unwrap_or_default(), f.detail))
        .collect()
}

/// [`ensure_current`] for a command that makes no request (`verify`,
/// `check`): the gate runs offline, and when it fails `on_failure` is given
/// the report first (to print the command's JSON failure document).
pub fn ensure_current_offline(
    command: &str,
    project_dir: &Path,
    repo_type: Option<RepoType>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
    on_failure: impl FnOnce(&miette::Report),
) -> miette::Result<()> {
    let mut offline = settings.clone();
    offline.offline = true;
    ensure_current(
        command,
        project_dir,
        repo_type,
        &offline,
        global,
        printer,
        false,
    )
    .inspect_err(on_failure)
}

/// Checks the lock of `project_dir` before `command` uses it; see the module
/// documentation. `can_lock` is false for commands that make no request.
pub fn ensure_current(
    command: &str,
    project_dir: &Path,
    repo_type: Option<RepoType>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
    can_lock: bool,
) -> miette::Result<()> {
    if global.locked {
        return locking::ensure_locked(project_dir, repo_type, settings, global, printer);
    }
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if global.frozen || !project_dir.join(MANIFEST_FILE_NAME).is_file() || !lock_path.is_file() {
        return Ok(());
    }
    let manifest = Manifest::read(project_dir)?;
    let cache = HubCache::new(&settings.cache_dir);
    let report = check_offline(
        &manifest,
        &LockOnDisk::read(&lock_path),
        None,
        &cache,
        repo_type.unwrap_or(RepoType::Kernel),
    );
    let entries = stale_entries(&report);
    if entries.is_empty() {
        return Ok(());
    }
    if settings.offline || !can_lock {
        let help = if can_lock {
            "run `kernels lock` while the Hub is reachable, or pass --frozen to use the lock as it is"
        } else {
            "run `kernels lock` (then `kernels download`), or pass --frozen to use the lock as it is"
        };
        return Err(StaleLock {
            lock: lock_path,
            manifest: manifest.path,
            entries,
            help: help.to_owned(),
        }
        .into());
    }
    printer.status(format_args!(
        "{} does not match {} ({}); locking again before `kernels {command}`",
        lock_path.display(),
        manifest.path.display(),
        report
            .findings
            .iter()
            .filter(|f| f.repo_id.is_some() && f.kind.is_stale())
            .filter_map(|f| f.repo_id.clone())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut request = LockRequest::for_project(project_dir);
    request.repo_type = repo_type.map(Into::into);
    locking::run(request, settings, global, printer).map(|_| ())
}
