//! The check of `kernels lock --check`, `kernels lock --locked` and
//! `kernels download --locked`: offline structural, or online against a
//! fresh plan, with the fit of the declared targets; its report as text or
//! JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kernels_cache::HubCache;
use kernels_types::wire::RepoType;

use super::LockRequest;
use super::plan::{PlanInputs, plan};
use crate::cli::GlobalArgs;
use crate::cli::args::{OutputFormat, RepoTypeArg};
use crate::cli::json::CheckDoc;
use crate::cli::printer::Printer;
use crate::cli::project::fit::lock::{FitCheck, declared};
use crate::cli::project::profile::{ProfileInputs, choose_profile, choose_profile_with};
use crate::cli::settings::Settings;
use crate::lock::cooldown::{ExcludeNewer, Use};
use crate::lock::fit::{cached_lock_variants, findings};
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::freshness::{CheckReport, FindingKind, LockOnDisk, check_offline, diff_locks};
use crate::lock::manifest::Manifest;
use crate::lock::profile::ProfileSource;
use crate::lock::sticky::{Change, Upgrade};

/// `--locked` was given and the lock is stale or missing.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} is not up to date with {} and --locked forbids updating it", lock.display(), manifest.display())]
#[diagnostic(
    code(kernels::lock::locked),
    help("run `kernels lock` to update it (the reasons are listed above)")
)]
pub(super) struct StaleLocked {
    pub(super) lock: PathBuf,
    pub(super) manifest: PathBuf,
}

/// Prints a check report (text on stderr plus the would-be diff on stdout, or one
/// JSON document on stdout) and returns whether the lock is stale.
pub(super) fn print_report(
    report: &CheckReport,
    printer: &Printer,
    format: OutputFormat,
    changes: Option<&[Change]>,
    fit: Option<&crate::cli::project::fit::lock::FitCheck>,
) -> bool {
    let stale = report.is_stale() || changes.is_some_and(|c| !c.is_empty());
    if format == OutputFormat::Json {
        printer.json_line(&CheckDoc {
            schema: CheckDoc::SCHEMA,
            command: "lock --check",
            lock_file: report.lock_file.display().to_string(),
            mode: report.mode,
            up_to_date: !stale,
            unverified: report.unverified().count(),
            findings: &report.findings,
            error: None,
            failed: Vec::new(),
            changes,
            fit: fit.map(crate::cli::project::fit::lock::FitCheck::doc),
        });
        return stale;
    }
    let verbose = printer.is_verbose();
    match changes {
        // Online: the entries `kernels lock` would change, in its own lines,
        // and the findings about the whole file (format, missing, conflict).
        Some(changes) => {
            let mut file_level = report.clone();
            file_level
                .findings
                .retain(|f| f.repo_id.is_none() || f.kind == FindingKind::NoVariants);
            printer.status_raw(report_text(&file_level, verbose));
            for change in changes {
                printer.status(change);
            }
        }
        None => printer.status_raw(report_text(report, verbose)),
    }
    let unverified = report.unverified().count();
    let empty = report.without_variants();
    if stale {
        printer.status(format_args!(
            "{} is not up to date: run `kernels lock` to update it",
            report.lock_file.display()
        ));
    } else if unverified > 0 {
        printer.status(format_args!(
            "note: {unverified} of {} entries of {} cannot be checked offline (the cache does not know their versions); every dependency is locked and no entry is extra. Run `kernels lock --check` without --offline to check versions{}",
            report.findings.len(),
            report.lock_file.display(),
            if verbose { "" } else { " (-v lists them)" }
        ));
    } else if empty > 0 {
        printer.status(format_args!(
            "{} matches pyproject.toml, but {empty} of its entries {} no build variants",
            report.lock_file.display(),
            if empty == 1 { "has" } else { "have" }
        ));
    } else {
        printer.status(format_args!("{} is up to date", report.lock_file.display()));
    }
    stale
}

/// The check half of `kernels lock --check`, `kernels lock --locked` and
/// `kernels download --locked`: offline structural check or online re-resolution.
/// Returns the report and, for the online check, what would change and the
/// fit of the re-resolved lock for the declared targets (`targets`, else the
/// manifest's; `None` offline or without targets).
/// Retries are shown unless `printer` is quiet; nothing else is printed but
/// the warnings of the target runtime about requirements.
fn freshness(
    project_dir: &Path,
    target_runtime: Option<&str>,
    repo_type: Option<RepoTypeArg>,
    targets: &[kernels_types::fit::Target],
    exclude_newer: Option<&ExcludeNewer>,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<Freshness> {
    let silent = printer.quiet_if(true);
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    // The side file must be readable: a later download compares with it.
    crate::lock::provenance::Provenance::read(project_dir)?;
    if settings.offline {
        let report = offline_report(
            project_dir,
            target_runtime,
            repo_type,
            settings,
            printer,
            true,
        )?;
        return Ok((report, None, None));
    }
    let on_disk = LockOnDisk::read(&lock_path);
    let inputs = PlanInputs {
        project_dir,
        target_runtime,
        repo_type,
        extra_trust: &[],
        allow_model_repos: false,
        merged: None,
        upgrade: &Upgrade::None,
        targets,
        exclude_newer: (exclude_newer, Use::Check),
    };
    let plan = plan(&inputs, settings, &silent, printer.lines_mode(), &on_disk)?;
    // The lock `kernels lock` would write fails here as it fails there.
    if !plan.manifest.settings.declared.is_empty() {
        let client = crate::cli::project::client::client_showing_retries(
            settings,
            printer,
            printer.lines_mode(),
        )?;
        let client = plan.profile.hub_client(&client);
        let project = super::targets::LockedProject {
            manifest: &plan.manifest,
            profile: &plan.profile,
            lockfile: &plan.outcome.lockfile,
            outcome: Some(&plan.outcome),
            lock_path: &lock_path,
        };
        let cache = HubCache::new(&settings.cache_dir);
        super::targets::check(
            &project,
            super::targets::Listings::Hub(&client, &cache),
            printer,
        )?;
    }
    let mut report = diff_locks(&on_disk, &plan.outcome.lockfile, &plan.json);
    report.add_without_variants(&plan.outcome.without_variants());
    let fit = plan
        .targets
        .is_checked()
        .then_some(crate::cli::project::fit::lock::FitCheck {
            targets: plan.targets,
            findings: plan.outcome.fit,
            from_cache: false,
        });
    Ok((report, Some(plan.changes), fit))
}

/// The one offline verdict on the lock of `project_dir`, shared by `kernels
/// lock --check --offline`, `--locked` offline and the stale-lock gate of
/// `download` and `verify` ([`crate::cli::project::stale`]): the target
/// profile is chosen as `kernels lock` chooses it (`--target-runtime`, the
/// `[tool.kernels]` key, the lock's format, the installed runtime), so an
/// installed runtime that cannot read the lock fails with
/// `kernels::profile::runtime_cannot_read_lock` here as online; a requirement
/// that runtime does not read fails as `kernels lock` fails on it (the ones it
/// only warns about are left to `kernels lock`, which says them when it writes
/// the lock); then the
/// structural check against the cache, with a `Format` finding when the
/// profile locks in another format than the file's.
///
/// With `ask_interpreter` false, the installed runtime is found by its files
/// only (no interpreter start): the stale-lock gate leaves a runtime that only
/// the interpreter reports to the command's own read of the lock
/// ([`crate::cli::project::read::read_lock`]), which fails with the same error
/// from the probe it makes anyway.
pub fn offline_report(
    project_dir: &Path,
    target_runtime: Option<&str>,
    repo_type: Option<RepoTypeArg>,
    settings: &Settings,
    printer: &Printer,
    ask_interpreter: bool,
) -> miette::Result<CheckReport> {
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let manifest = Manifest::read(project_dir)?;
    let on_disk = LockOnDisk::read(&lock_path);
    let python = if ask_interpreter {
        crate::variant::ProjectPython::for_project(
            project_dir,
            crate::cli::settings::virtual_env().as_deref(),
        )
    } else {
        // An interpreter that cannot start reports no runtime.
        crate::variant::ProjectPython::new(std::path::PathBuf::new())
    };
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: target_runtime,
            manifest: manifest.target_runtime(),
            lock_format: on_disk.lockfile().map(Lockfile::format),
            repo_type,
            python: &python,
            scope: crate::variant::ProbeScope::Runtime,
            unreadable_fails: true,
        },
        &printer.quiet_if(true),
    )?;
    // The remarks about requirements the runtime's own `kernels lock` would
    // not read are said when the lock is written, not on every check.
    crate::lock::support::check_requirements(&profile, &manifest)
        .map_err(|err| miette::Report::new(*err))?;
    let expected = (profile.source != ProfileSource::Default).then_some(profile.lock_format);
    let cache = HubCache::new(&settings.cache_dir);
    Ok(check_offline(
        &manifest,
        &on_disk,
        expected,
        &cache,
        profile.repo_type,
    ))
}

/// What [`freshness`] finds: the report, what `kernels lock` would change and
/// the fit of the declared targets (both online only).
type Freshness = (
    CheckReport,
    Option<Vec<Change>>,
    Option<crate::cli::project::fit::lock::FitCheck>,
);

/// `--locked` for commands that use the lock (`kernels download`): fails when the
/// lock is missing or stale. A no-op without `--locked`.
pub fn ensure_locked(
    project_dir: &Path,
    repo_type: Option<RepoType>,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<()> {
    if !global.locked {
        return Ok(());
    }
    let repo_type = repo_type.map(RepoTypeArg::from);
    let (report, changes, _) =
        freshness(project_dir, None, repo_type, &[], None, settings, printer)?;
    if print_report(
        &report,
        printer,
        OutputFormat::Text,
        changes.as_deref(),
        None,
    ) {
        return Err(StaleLocked {
            lock: report.lock_file,
            manifest: project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME),
        }
        .into());
    }
    Ok(())
}

/// The online check of `kernels lock --check` (a fresh resolution), printing
/// nothing: the entries (repositories, `its format` for the file) a `kernels
/// lock` would change; empty when the lock is up to date. Errors: those of
/// `kernels lock --check` (the Hub unreachable, a declared target without a
/// build, …).
pub fn stale_online(
    project_dir: &Path,
    repo_type: Option<RepoType>,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<Vec<String>> {
    let repo_type = repo_type.map(RepoTypeArg::from);
    let quiet = printer.quiet_if(true);
    let (report, _, _) = freshness(project_dir, None, repo_type, &[], None, settings, &quiet)?;
    Ok(report
        .findings
        .iter()
        .filter(|f| f.kind.is_stale())
        .map(|f| f.repo_id.clone().unwrap_or_else(|| "its format".to_owned()))
        .collect())
}

/// `kernels lock --check` (and `--locked`): exit 0 when the lock is up to
/// date, 1 (`--check`) or an error (`--locked`) when not.
pub(super) fn run(
    request: &LockRequest,
    settings: &Settings,
    printer: &Printer,
    lock_path: PathBuf,
) -> miette::Result<ExitCode> {
    let (report, changes, online) = freshness(
        &request.project_dir,
        request.target_runtime.as_deref(),
        request.repo_type,
        &request.targets,
        request.exclude_newer.as_ref(),
        settings,
        &printer.quiet_if(request.format == OutputFormat::Json),
    )?;
    // Online the re-resolved lock's fit; offline the cached metadata's.
    let fit = match online {
        Some(fit) => Some(fit),
        None => {
            if settings.offline {
                declared_builds_cached(request, settings, printer, &lock_path)?;
            }
            fit_of_cached(request, settings, printer, &lock_path)?
        }
    };
    let stale = print_report(
        &report,
        printer,
        request.format,
        changes.as_deref(),
        fit.as_ref(),
    );
    if let Some(fit) = &fit
        && request.format == OutputFormat::Text
    {
        crate::cli::project::fit::lock::print_findings(printer, fit, request.check);
    }
    let gap = fit.as_ref().is_some_and(|f| f.has_gap()) || report.without_variants() > 0;
    match (stale, request.check) {
        (false, true) if gap => Ok(ExitCode::from(1)),
        (false, _) => Ok(ExitCode::SUCCESS),
        (true, true) => Ok(ExitCode::from(1)),
        (true, false) => Err(StaleLocked {
            lock: lock_path,
            manifest: request
                .project_dir
                .join(crate::lock::manifest::MANIFEST_FILE_NAME),
        }
        .into()),
    }
}

/// A check report as lines for stderr: stale findings, then (when `verbose`)
/// the others. Each line starts with the entry.
fn report_text(report: &CheckReport, verbose: bool) -> String {
    let mut out = String::new();
    for finding in &report.findings {
        if !finding.kind.is_stale() && finding.kind != FindingKind::NoVariants && !verbose {
            continue;
        }
        let subject = finding.repo_id.as_deref().unwrap_or("kernels.lock");
        out.push_str(&format!(
            "{subject}: {}: {}\n",
            finding.kind.label(),
            finding.detail
        ));
    }
    out
}

/// `kernels lock --check --offline`: the declared-target check of `kernels
/// lock` on the lock at `lock_path`, with the variant names of the lock's
/// hashes or the cache's listing receipts (a note names the kernels the cache
/// cannot decide). Nothing to check without declared targets or a readable
/// lock and manifest (the freshness check reports those).
fn declared_builds_cached(
    request: &LockRequest,
    settings: &Settings,
    printer: &Printer,
    lock_path: &Path,
) -> miette::Result<()> {
    let dir = &request.project_dir;
    let (Ok(manifest), Ok(lockfile)) = (Manifest::read(dir), Lockfile::read(lock_path)) else {
        return Ok(());
    };
    if manifest.settings.declared.is_empty() {
        return Ok(());
    }
    let profile = choose_profile(
        dir,
        request.target_runtime.as_deref(),
        manifest.target_runtime(),
        Some(lockfile.format()),
        request.repo_type,
        None,
        &printer.quiet_if(true),
    )?;
    let cache = HubCache::new(&settings.cache_dir);
    let project = super::targets::LockedProject {
        manifest: &manifest,
        profile: &profile,
        lockfile: &lockfile,
        outcome: None,
        lock_path,
    };
    super::targets::check(&project, super::targets::Listings::Cache(&cache), printer)
}

/// The fit of the lock at `lock_path` from the cache, without a request
/// (`kernels lock --check --offline`: only downloaded variants have their
/// `metadata.json` linked in the snapshot, the others are "not checked");
/// `None` when no target is declared or there is no readable lock or manifest
/// (the freshness check reports those).
fn fit_of_cached(
    request: &LockRequest,
    settings: &Settings,
    printer: &Printer,
    lock_path: &Path,
) -> miette::Result<Option<FitCheck>> {
    let dir = &request.project_dir;
    let (Ok(manifest), Ok(lockfile)) = (Manifest::read(dir), Lockfile::read(lock_path)) else {
        return Ok(None);
    };
    let targets = declared(&request.targets, &manifest);
    if !targets.is_checked() {
        return Ok(None);
    }
    let silent = printer.quiet_if(true);
    let profile = choose_profile(
        dir,
        request.target_runtime.as_deref(),
        manifest.target_runtime(),
        Some(lockfile.format()),
        request.repo_type,
        None,
        &silent,
    )?;
    let runtime = profile
        .runtime
        .map(crate::variant::FitPolicy::runtime_release);
    let cache = HubCache::new(&settings.cache_dir);
    let findings = cached_lock_variants(&lockfile, &cache, profile.repo_type, runtime)
        .iter()
        .flat_map(|kernel| findings(kernel, &targets.list, runtime))
        .collect();
    Ok(Some(FitCheck {
        targets,
        findings,
        from_cache: true,
    }))
}
