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
//!   say so, and go on, as `uv sync` does; `download` also creates a missing
//!   lock ([`OnStale::LockOrCreate`]).
//!
//! The verdict is the one of `kernels lock --check --offline`
//! ([`locking::offline_report`]): an installed runtime that cannot read the
//! lock fails every gate with `kernels::profile::runtime_cannot_read_lock`.

use std::path::{Path, PathBuf};

use crate::cli::GlobalArgs;
use crate::cli::printer::Printer;
use crate::cli::project::locking::{self, LockRequest};
use crate::cli::settings::Settings;
use crate::lock::format::LOCK_FILE_NAME;
use crate::lock::freshness::{CheckReport, FindingKind};
use crate::lock::manifest::MANIFEST_FILE_NAME;
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

/// The findings that prove the lock does not cover the manifest: every stale
/// entry, and a file in another format than the target runtime's (the
/// runtime changed). Other file-level problems (missing, malformed,
/// conflicted lock) are reported by the commands themselves.
fn stale_entries(report: &CheckReport) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| f.kind.is_stale() && (f.repo_id.is_some() || f.kind == FindingKind::Format))
        .map(|f| match &f.repo_id {
            Some(repo_id) => format!("{repo_id}: {}", f.detail),
            None => f.detail.clone(),
        })
        .collect()
}

/// What the command names about the target runtime: `--repo-type`, which the
/// gate's verdict honours as `kernels lock` does, and `--target-runtime`,
/// which overrides the project's format for the run only (a lock in another
/// format is then no reason to lock again).
#[derive(Debug, Clone, Copy, Default)]
pub struct LockTarget<'a> {
    /// `--target-runtime`.
    pub runtime: Option<&'a str>,
    /// `--repo-type`.
    pub repo_type: Option<RepoType>,
}

/// What a gate does with a lock that does not cover the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStale {
    /// Fail with [`StaleLock`] (commands that make no request).
    Fail,
    /// Lock again before going on (online); a missing lock is left to the
    /// command's own error.
    Lock,
    /// Lock again, and create a missing lock (`download`, as `uv sync`).
    LockOrCreate,
}

/// What the gate found a command may rely on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// The lock covers the manifest (checked, or locked again), or nothing
    /// was to be checked (`--frozen`, no manifest, no lock).
    Checked,
    /// Offline, and the cache cannot tell whether a requirement still
    /// matches its locked commit: the lock is used as it is, and no ref is
    /// recorded from the (possibly edited) requirement.
    Unproven,
}

/// [`ensure_current`] for a command that makes no request (`verify`,
/// `check`): the gate runs offline, and when it fails `on_failure` is given
/// the report first (to print the command's JSON failure document).
pub fn ensure_current_offline(
    command: &str,
    project_dir: &Path,
    target: LockTarget<'_>,
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
        target,
        &offline,
        global,
        printer,
        OnStale::Fail,
    )
    .map(drop)
    .inspect_err(on_failure)
}

/// Checks the lock of `project_dir` before `command` uses it; see the module
/// documentation; `on_stale` says whether the command may lock.
pub fn ensure_current(
    command: &str,
    project_dir: &Path,
    target: LockTarget<'_>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
    on_stale: OnStale,
) -> miette::Result<Gate> {
    let repo_type = target.repo_type;
    if global.locked {
        locking::ensure_locked(project_dir, repo_type, settings, global, printer)?;
        return Ok(Gate::Checked);
    }
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let can_lock = on_stale != OnStale::Fail;
    if global.frozen || !project_dir.join(MANIFEST_FILE_NAME).is_file() {
        return Ok(Gate::Checked);
    }
    if !lock_path.is_file() {
        if on_stale != OnStale::LockOrCreate || settings.offline {
            return Ok(Gate::Checked);
        }
        printer.status(format_args!(
            "no {} yet; locking {} before `kernels {command}`",
            lock_path.display(),
            project_dir.join(MANIFEST_FILE_NAME).display()
        ));
        relock(project_dir, target, settings, global, printer)?;
        return Ok(Gate::Checked);
    }
    let report = gate_report(project_dir, target, settings, printer)?;
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let entries = stale_entries(&report);
    if entries.is_empty()
        && on_stale == OnStale::LockOrCreate
        && let Some(gate) = undecided_gate(
            command,
            project_dir,
            target,
            settings,
            global,
            printer,
            &report,
        )?
    {
        return Ok(gate);
    }
    if entries.is_empty() {
        return Ok(Gate::Checked);
    }
    if settings.offline || !can_lock {
        return Err(stale_lock(lock_path, manifest_path, entries, can_lock));
    }
    printer.status(format_args!(
        "{} does not match {} ({}); locking again before `kernels {command}`",
        lock_path.display(),
        manifest_path.display(),
        stale_names(&report)
    ));
    relock(project_dir, target, settings, global, printer)?;
    Ok(Gate::Checked)
}

/// The [`StaleLock`] error for `lock_path` against `manifest_path` naming the
/// stale `entries`. Its help: lock again while the Hub is reachable when the
/// command could have locked (`can_lock`: it fails for being offline), else
/// run `kernels lock` before the command.
fn stale_lock(
    lock_path: PathBuf,
    manifest_path: PathBuf,
    entries: Vec<String>,
    can_lock: bool,
) -> miette::Report {
    let help = if can_lock {
        "run `kernels lock` while the Hub is reachable, or pass --frozen to use the lock as it is"
    } else {
        "run `kernels lock` (then `kernels download`), or pass --frozen to use the lock as it is"
    };
    StaleLock {
        lock: lock_path,
        manifest: manifest_path,
        entries,
        help: help.to_owned(),
    }
    .into()
}

/// The gate for a lock the cache finds current when requirements it cannot
/// judge remain in `report` (an edited `= 1`, a specifier its refs do not
/// decide): `None` when there are none. Online the Hub decides, locking
/// again when it changes the lock, before the download places the variants
/// (and records each requirement's ref) by it; offline nothing can decide,
/// so the lock is used as it is (as `kernels lock --check --offline` and
/// `verify` accept it), with a note, and [`Gate::Unproven`] keeps the edited
/// requirement's ref from being recorded.
///
/// # Errors
///
/// Those of locking again.
fn undecided_gate(
    command: &str,
    project_dir: &Path,
    target: LockTarget<'_>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
    report: &CheckReport,
) -> miette::Result<Option<Gate>> {
    let undecided = undecided_entries(project_dir, report);
    if undecided.is_empty() {
        return Ok(None);
    }
    if settings.offline {
        printer.status(format_args!(
            "note: the cache cannot tell whether {} still matches {} ({}); using it as it is, without recording the requirements' refs (run `kernels lock --check` online to decide)",
            project_dir.join(LOCK_FILE_NAME).display(),
            project_dir.join(MANIFEST_FILE_NAME).display(),
            undecided.join("; ")
        ));
        return Ok(Some(Gate::Unproven));
    }
    relock_if_changed(command, project_dir, target, settings, global, printer)?;
    Ok(Some(Gate::Checked))
}

/// The gate's verdict on the lock of `project_dir`: the one of `kernels lock
/// --check --offline` (an installed runtime that cannot read the lock, or a
/// requirement the target runtime does not read, fails here as it fails
/// there); with the command's `--target-runtime`, the file's format is no
/// finding.
fn gate_report(
    project_dir: &Path,
    target: LockTarget<'_>,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<CheckReport> {
    let mut report = locking::offline_report(
        project_dir,
        None,
        target.repo_type.map(Into::into),
        settings,
        &printer.quiet_if(true),
        false,
    )?;
    // A `--target-runtime` of the command overrides the project's format for
    // this run only (the command warns when that runtime cannot read the
    // lock): the file's format is then no reason to lock again.
    if target.runtime.is_some() {
        report
            .findings
            .retain(|f| !(f.repo_id.is_none() && f.kind == FindingKind::Format));
    }
    Ok(report)
}

/// What is stale, for the "locking again" line: the entries' repositories,
/// `its format`.
fn stale_names(report: &CheckReport) -> String {
    report
        .findings
        .iter()
        .filter(|f| f.kind.is_stale())
        .map(|f| {
            f.repo_id
                .as_ref()
                .map_or_else(|| "its format".to_owned(), ToString::to_string)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The entries of the manifest's dependencies that nothing known offline
/// proves or disproves ([`FindingKind::Unverified`]: the cache does not know
/// the locked commit's refs for the requirement), each with why; a lock
/// entry no dependency asks for (a transitive kernel) is not one.
fn undecided_entries(project_dir: &Path, report: &CheckReport) -> Vec<String> {
    let Ok(manifest) = crate::lock::manifest::Manifest::read(project_dir) else {
        return Vec::new();
    };
    report
        .unverified()
        .filter_map(|f| {
            let repo_id = f.repo_id.as_ref()?;
            manifest
                .dependencies
                .iter()
                .any(|d| d.repo_id.as_str() == repo_id)
                .then(|| format!("{repo_id}: {}", f.detail))
        })
        .collect()
}

/// Online, for entries the cache cannot judge: the check of `kernels lock
/// --check` (a fresh resolution); when it finds the lock stale, locks again
/// (saying so) as for a stale lock, else leaves it as it is. A check that
/// fails (the Hub unreachable, a kernel's metadata malformed) leaves the lock
/// as it is too (`-v` says why): the command meets that failure itself.
fn relock_if_changed(
    command: &str,
    project_dir: &Path,
    target: LockTarget<'_>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<()> {
    let changed = match locking::stale_online(project_dir, target.repo_type, settings, printer) {
        Ok(changed) => changed,
        Err(report) => {
            if printer.is_verbose() {
                printer.status(format_args!(
                    "note: could not check {} on the Hub ({report}); using it as it is",
                    project_dir.join(LOCK_FILE_NAME).display()
                ));
            }
            return Ok(());
        }
    };
    if changed.is_empty() {
        return Ok(());
    }
    printer.status(format_args!(
        "{} does not match {} ({}: checked on the Hub, as the cache cannot tell); locking again before `kernels {command}`",
        project_dir.join(LOCK_FILE_NAME).display(),
        project_dir.join(MANIFEST_FILE_NAME).display(),
        changed.join(", ")
    ));
    relock(project_dir, target, settings, global, printer)
}

/// `kernels lock <project_dir>` with every option at its default but the
/// repository type.
fn relock(
    project_dir: &Path,
    target: LockTarget<'_>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<()> {
    let mut request = LockRequest::for_project(project_dir);
    request.repo_type = target.repo_type.map(Into::into);
    locking::run(request, settings, global, printer).map(|_| ())
}
