//! `kernels lock`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{ProjectArgs, RepoTypeArg, RepoTypeArgs, TargetRuntimeArgs};
use super::{GlobalArgs, OutputFormat};
use crate::lock::conflict;
use crate::lock::cooldown::{Cooldown, ExcludeNewer, Use};
use crate::lock::freshness::{
    CheckMode, CheckReport, FindingKind, LockOnDisk, check_offline, diff_locks,
};
use kernels_cache::HubCache;

use super::json::{CheckDoc, ErrorDoc, LockDoc, LockedEntryDoc};
use super::printer::Printer;
use super::profile::choose_profile;
use super::progress::ProgressMode;
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, LockFormat, Lockfile};
use crate::lock::manifest::Manifest;
use crate::lock::profile::{Profile, ProfileSource};
use crate::lock::project::{LockOptions, lock_project};
use crate::lock::sticky::{Change, Upgrade, changes};
use kernels_cache::atomic::write_atomic;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

/// Arguments of `kernels lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Lock this repository even if its publisher is not a trusted kernel
    /// publisher (runtime 0.17+ checks trust); repeatable. Also `trust = [...]`
    /// under `[tool.kernels]`.
    #[arg(long = "trust", value_name = "REPO_ID")]
    pub trust: Vec<RepoId>,

    /// Lock repositories that exist only as `model` repositories through the
    /// `model` API (runtimes ≥0.14 cannot load them).
    #[arg(long)]
    pub allow_model_repos: bool,

    /// Check that `kernels.lock` is up to date instead of writing it: exit 0 when it
    /// is, 1 with one explanation per entry when it is not. With `--offline`, no
    /// request is made: the check is structural, and entries whose versions only
    /// the Hub can confirm are reported as not checkable offline (exit 0).
    /// Ignores `KERNELS_FROZEN`. Refused with `--upgrade` / `--upgrade-package`
    /// (use `--dry-run` to see what an upgrade would change).
    #[arg(long)]
    pub check: bool,

    /// Make no network request (only `--check` works offline). Also set by a true
    /// `KERNELS_OFFLINE` or `HF_HUB_OFFLINE`.
    #[arg(long)]
    pub offline: bool,

    /// Resolve every entry again to the newest version its requirement allows,
    /// instead of keeping what is locked.
    #[arg(short = 'U', long, conflicts_with = "upgrade_package")]
    pub upgrade: bool,

    /// Resolve this dependency again (and, in the 0.17 format, what it depends
    /// on), keeping every other entry; repeatable.
    #[arg(short = 'P', long, value_name = "REPO_ID")]
    pub upgrade_package: Vec<RepoId>,

    /// Raise each integer requirement (`"org/name" = N`, `{ version = N }`) to
    /// the newest major `vM` whose branch has a build variant for the declared
    /// targets (any variant without targets), rewrite `pyproject.toml` and
    /// lock; with `--upgrade-package`, only those repositories. Version
    /// specifiers and revision pins are left as they are.
    #[arg(long, conflicts_with_all = ["check", "locked", "frozen", "dry_run"])]
    pub breaking: bool,

    /// Print what would change without writing `kernels.lock`.
    #[arg(long)]
    pub dry_run: bool,

    /// Release cooldown: lock only commits dated at or before this instant
    /// (RFC 3339 time, a date at midnight UTC, or a span before now such as
    /// `7 days`), for entries resolved in this run. Overrides `exclude-newer`
    /// under `[tool.kernels]`; the instant is recorded there as
    /// `exclude-newer-cutoff` (docs/lockfile.md).
    #[arg(long, value_name = "WHEN", value_parser = parse_exclude_newer)]
    pub exclude_newer: Option<ExcludeNewer>,

    /// Replace a `kernels.lock` that is not a lock file of either format (for
    /// example a checksum list); without it, `kernels lock` refuses to.
    #[arg(long)]
    pub force: bool,

    /// Output format on stdout (schemas in docs/json-output.md).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::CacheArgs,

    /// `--no-progress`.
    #[command(flatten)]
    pub progress: super::ProgressArgs,

    /// `--cuda-capability` / `--rocm-arch`: the declared targets every locked
    /// kernel must have a variant for (warned about; `--check` fails).
    #[command(flatten)]
    pub targets: super::args::TargetArgs,
}

/// `--exclude-newer`: an instant, a date or a span.
fn parse_exclude_newer(text: &str) -> Result<ExcludeNewer, String> {
    ExcludeNewer::parse(text)
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

impl LockArgs {
    /// `kernels lock <project_dir>` with every option at its default.
    pub fn for_project(project_dir: &Path) -> Self {
        LockArgs {
            project: ProjectArgs::at(project_dir),
            runtime: TargetRuntimeArgs::default(),
            repo: RepoTypeArgs::default(),
            trust: Vec::new(),
            allow_model_repos: false,
            check: false,
            offline: false,
            upgrade: false,
            upgrade_package: Vec::new(),
            breaking: false,
            dry_run: false,
            exclude_newer: None,
            force: false,
            format: OutputFormat::Text,
            lock_mode: super::LockModeArgs::default(),
            cache: super::CacheArgs::default(),
            progress: super::ProgressArgs::default(),
            targets: super::args::TargetArgs::default(),
        }
    }
}

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

/// `--locked` was given and the lock is stale or missing.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} is not up to date with {} and --locked forbids updating it", lock.display(), manifest.display())]
#[diagnostic(
    code(kernels::lock::locked),
    help("run `kernels lock` to update it (the reasons are listed above)")
)]
struct StaleLocked {
    lock: PathBuf,
    manifest: PathBuf,
}

/// Prints a check report (text on stderr plus the would-be diff on stdout, or one
/// JSON document on stdout) and returns whether the lock is stale.
fn print_report(
    report: &CheckReport,
    printer: &Printer,
    format: OutputFormat,
    changes: Option<&[Change]>,
    fit: Option<&super::lock_fit::FitCheck>,
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
            fit: fit.map(super::lock_fit::FitCheck::doc),
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

/// What `kernels lock` would write: the outcome, the profile and the text.
struct Plan {
    outcome: crate::lock::project::LockOutcome,
    /// The declared targets the outcome's fit was checked for.
    targets: crate::variant::Targets,
    profile: Profile,
    old_format: Option<LockFormat>,
    json: String,
    /// Repo ids kept from a conflicted lock without resolving them again.
    kept: Vec<String>,
    /// What changes from the lock on disk (empty without one).
    changes: Vec<Change>,
    /// Whether a lock in the same format existed (sticky resolution applied).
    had_previous: bool,
    /// How long resolving took.
    elapsed: std::time::Duration,
    /// The release cooldown in force, if any.
    cooldown: Option<Cooldown>,
}

/// What [`plan`] resolves: the project, its target-runtime and repository
/// options, what to trust and upgrade, and the entries of a conflicted lock.
struct PlanInputs<'a> {
    project_dir: &'a Path,
    /// `--target-runtime`.
    target_runtime: Option<&'a str>,
    /// `--repo-type`.
    repo_type: Option<RepoTypeArg>,
    /// `--trust`, added to `trust` under `[tool.kernels]`.
    extra_trust: &'a [RepoId],
    /// `--allow-model-repos`.
    allow_model_repos: bool,
    /// A conflicted lock's agreed entries (variant-hash locks only).
    merged: Option<&'a conflict::Merged>,
    /// `--upgrade` / `--upgrade-package`.
    upgrade: &'a Upgrade,
    /// `--cuda-capability` / `--rocm-arch`.
    targets: &'a [kernels_types::fit::Target],
    /// `--exclude-newer`, and whether the command locks or checks.
    exclude_newer: (Option<&'a ExcludeNewer>, Use),
}

/// Resolves the manifest for its target profile, as `kernels lock` does, without
/// writing. Entries a conflicted lock agrees on (`inputs.merged`, variant-hash
/// locks only) are kept instead of resolved again. The profile line and the
/// spinner follow `printer`; retries are shown in `retries` mode.
fn plan(
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
        printer,
    )?;
    let merged = inputs
        .merged
        .filter(|_| profile.lock_format == LockFormat::VariantHash);
    let mut to_resolve = manifest.clone();
    to_resolve
        .dependencies
        .retain(|dep| agreed_entry(merged, &dep.repo_id).is_none());
    let targets = super::lock_fit::declared(inputs.targets, &manifest);
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
    let client = super::download::client_showing_retries(settings, printer, retries)?;
    let spinner = super::progress::Spinner::start(
        printer,
        printer.progress_mode(),
        &format!(
            "Resolving {}",
            super::progress::plural(to_resolve.dependencies.len(), "kernel")
        ),
    );
    let outcome = super::runtime()?.block_on(lock_project(&client, profile, to_resolve, options));
    drop(spinner);
    outcome.map_err(|err| super::causes::lock_failure(err, settings))
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
pub(super) fn check_upgrade_packages(
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
        let manifest = Manifest::read(project_dir)?;
        // The format this project should be locked in, when something other than
        // the lock itself says so (option, manifest key, installed runtime).
        let profile = choose_profile(
            project_dir,
            target_runtime,
            manifest.target_runtime(),
            None,
            repo_type,
            &silent,
        )?;
        // A requirement the target runtime does not read fails the check as it
        // fails `kernels lock`; the ones it only warns about are printed.
        let remarks = crate::lock::support::check_requirements(&profile, &manifest)
            .map_err(|err| miette::Report::new(*err))?;
        for remark in remarks {
            printer.error(format_args!("warning: {remark}"));
        }
        let expected = (profile.source != ProfileSource::Default).then_some(profile.lock_format);
        let cache = HubCache::new(&settings.cache_dir);
        let report = check_offline(
            &manifest,
            &LockOnDisk::read(&lock_path),
            expected,
            &cache,
            profile.repo_type,
        );
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
    let mut report = diff_locks(&on_disk, &plan.outcome.lockfile, &plan.json);
    report.add_without_variants(&plan.outcome.without_variants());
    let fit = plan
        .targets
        .is_checked()
        .then_some(super::lock_fit::FitCheck {
            targets: plan.targets,
            findings: plan.outcome.fit,
        });
    Ok((report, Some(plan.changes), fit))
}

/// What [`freshness`] finds: the report, what `kernels lock` would change and
/// the fit of the declared targets (both online only).
type Freshness = (
    CheckReport,
    Option<Vec<Change>>,
    Option<super::lock_fit::FitCheck>,
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

/// Resolves `[tool.kernels.dependencies]` for the target profile and writes
/// `kernels.lock` in its format, atomically and only when its bytes change.
/// Nothing is written unless every dependency resolved. A lock with merge conflict
/// markers is repaired: entries both sides agree on are kept, the others resolved
/// again. With `--check` or `--locked` nothing is written and a stale lock exits 1.
/// Status goes to stderr; `--format json` prints what was locked on stdout, and
/// when the command fails, a document with the failure typed (`error`,
/// `failed[]`) before the error goes to stderr.
pub fn run(
    args: LockArgs,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let json = args.format == OutputFormat::Json;
    let check = args.check || global.locked;
    let lock_file = args
        .project
        .project_dir
        .join(LOCK_FILE_NAME)
        .display()
        .to_string();
    let offline = settings.offline || args.offline;
    let dry_run = args.dry_run;
    let result = run_inner(args, settings, global, printer);
    if let Err(report) = &result
        && json
        // `--locked` printed its report already.
        && report.downcast_ref::<StaleLocked>().is_none()
    {
        let failed = report
            .downcast_ref::<super::causes::LockFailed>()
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
pub(super) fn run_inner(
    args: LockArgs,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let mut settings = settings.clone();
    settings.offline |= args.offline;
    let settings = &settings;
    let lock_path = args.project.project_dir.join(LOCK_FILE_NAME);
    if args.check || global.locked {
        if args.upgrade || !args.upgrade_package.is_empty() || args.breaking {
            let check = if args.check {
                "--check"
            } else if args.lock_mode.locked {
                "--locked"
            } else {
                "KERNELS_LOCKED"
            };
            let upgrade = if args.breaking {
                "--breaking"
            } else if args.upgrade {
                "--upgrade"
            } else {
                "--upgrade-package <REPO_ID>"
            };
            return Err(CheckWithUpgrade::new(check, upgrade).into());
        }
        return check(&args, settings, printer, lock_path);
    }
    if global.frozen {
        return Err(Frozen { path: lock_path }.into());
    }
    if args.breaking {
        return super::breaking::run(args, settings, global, printer);
    }
    let on_disk = LockOnDisk::read(&lock_path);
    if !args.force
        && on_disk.lockfile().is_none()
        && let Some(text) = on_disk.text()
        && !text.trim().is_empty()
        && let Err(err) = Lockfile::parse(text, &lock_path)
        && let Some(detail) = err.foreign_detail()
    {
        return Err(NotOurs {
            path: lock_path,
            detail: detail.to_owned(),
        }
        .into());
    }
    let merged = on_disk
        .text()
        .and_then(|text| conflict::merge(text, &lock_path));
    let upgrade = if args.upgrade {
        Upgrade::All
    } else if !args.upgrade_package.is_empty() {
        Upgrade::Packages(args.upgrade_package.clone())
    } else {
        Upgrade::None
    };
    let inputs = PlanInputs {
        project_dir: &args.project.project_dir,
        target_runtime: args.runtime.version(),
        repo_type: args.repo.repo_type,
        extra_trust: &args.trust,
        allow_model_repos: args.allow_model_repos,
        merged: merged.as_ref(),
        upgrade: &upgrade,
        targets: &args.targets.targets(),
        exclude_newer: (args.exclude_newer.as_ref(), Use::Lock),
    };
    let printer = &printer.quiet_if(args.format == OutputFormat::Json);
    let plan = plan(&inputs, settings, printer, printer.lines_mode(), &on_disk)?;
    write_plan(&args, printer, &plan, merged.as_ref(), &on_disk)
}

/// `kernels lock --check` (and `--locked`): exit 0 when the lock is up to
/// date, 1 (`--check`) or an error (`--locked`) when not.
fn check(
    args: &LockArgs,
    settings: &Settings,
    printer: &Printer,
    lock_path: PathBuf,
) -> miette::Result<ExitCode> {
    let (report, changes, online) = freshness(
        &args.project.project_dir,
        args.runtime.version(),
        args.repo.repo_type,
        &args.targets.targets(),
        args.exclude_newer.as_ref(),
        settings,
        &printer.quiet_if(args.format == OutputFormat::Json),
    )?;
    // Online the re-resolved lock's fit; offline the cached metadata's.
    let fit = match online {
        Some(fit) => Some(fit),
        None => super::lock_fit::check_cached(args, settings, printer, &lock_path)?,
    };
    let stale = print_report(
        &report,
        printer,
        args.format,
        changes.as_deref(),
        fit.as_ref(),
    );
    if let Some(fit) = &fit
        && args.format == OutputFormat::Text
    {
        super::lock_fit::print_findings(printer, fit, args.check);
    }
    let gap = fit.as_ref().is_some_and(|f| f.has_gap()) || report.without_variants() > 0;
    match (stale, args.check) {
        (false, true) if gap => Ok(ExitCode::from(1)),
        (false, _) => Ok(ExitCode::SUCCESS),
        (true, true) => Ok(ExitCode::from(1)),
        (true, false) => Err(StaleLocked {
            lock: lock_path,
            manifest: args
                .project
                .project_dir
                .join(crate::lock::manifest::MANIFEST_FILE_NAME),
        }
        .into()),
    }
}

/// Prints what `plan` resolved and writes it (unless the bytes are unchanged
/// or `--dry-run`); with `--format json`, the document.
fn write_plan(
    args: &LockArgs,
    printer: &Printer,
    plan: &Plan,
    merged: Option<&conflict::Merged>,
    on_disk: &LockOnDisk,
) -> miette::Result<ExitCode> {
    let lock_path = on_disk.path();
    let resolved = Resolved {
        lock_path,
        outcome: &plan.outcome,
        profile: &plan.profile,
        changes: &plan.changes,
        kept: &plan.kept,
    };
    if !printer.is_quiet() {
        print_status(printer, &resolved, merged, plan)?;
    }
    let unchanged = on_disk.text() == Some(plan.json.as_str());
    if unchanged {
        printer.status(format_args!("{} is up to date", lock_path.display()));
    } else if args.dry_run {
        printer.status(format_args!(
            "Dry run: {} was not written",
            lock_path.display()
        ));
    } else {
        write_atomic(lock_path, plan.json.as_bytes()).map_err(|err| {
            miette::miette!(
                code = "kernels::lock::write",
                help = "check that the project directory is writable",
                "cannot write {}: {err}",
                lock_path.display()
            )
        })?;
        printer.status(format_args!("Wrote {}", lock_path.display()));
    }
    if !args.dry_run {
        record_cutoff(&args.project.project_dir, printer, plan, !unchanged)?;
    }
    if args.format == OutputFormat::Json {
        print_json(
            printer,
            &resolved,
            plan,
            !unchanged && !args.dry_run,
            args.dry_run,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Records the cut-off a lock was resolved under in `pyproject.toml`
/// (`[tool.kernels] exclude-newer-cutoff`), so that `kernels lock --check`
/// and teammates use the same instant: when the lock was `written`, the
/// cut-off of this run (removed without one, or for a fixed `exclude-newer`);
/// when it was not, only a missing record is added.
fn record_cutoff(
    project_dir: &Path,
    printer: &Printer,
    plan: &Plan,
    written: bool,
) -> miette::Result<()> {
    let wanted = plan.cooldown.as_ref().and_then(Cooldown::to_record);
    let path = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let text = fs_err::read_to_string(&path).map_err(|err| miette::miette!("{err}"))?;
    let recorded =
        crate::lock::manifest::ToolSettings::read(project_dir)?.and_then(|t| t.cooldown.recorded);
    if !written && (recorded.is_some() || wanted.is_none()) {
        return Ok(());
    }
    let Some(edited) = crate::lock::cooldown::record(&text, wanted) else {
        return Ok(());
    };
    write_atomic(&path, edited.as_bytes()).map_err(|err| {
        miette::miette!(
            code = "kernels::lock::write",
            help = "check that the project directory is writable",
            "cannot write {}: {err}",
            path.display()
        )
    })?;
    match wanted {
        Some(cutoff) => printer.status(format_args!(
            "Recorded the cut-off {cutoff} in {} ({})",
            path.display(),
            crate::lock::cooldown::CUTOFF_KEY
        )),
        None => printer.status(format_args!(
            "Removed {} from {}",
            crate::lock::cooldown::CUTOFF_KEY,
            path.display()
        )),
    }
    Ok(())
}

/// What one `kernels lock` run resolved, for its status lines and JSON.
struct Resolved<'a> {
    lock_path: &'a Path,
    outcome: &'a crate::lock::project::LockOutcome,
    profile: &'a Profile,
    changes: &'a [Change],
    kept: &'a [String],
}

/// The status lines of a `kernels lock` that resolved: conflict repair,
/// warnings, `Resolved N kernels in …`, what changed (or, without a previous
/// lock, what was locked) and a change of lock format.
fn print_status(
    printer: &Printer,
    resolved: &Resolved<'_>,
    merged: Option<&conflict::Merged>,
    plan: &Plan,
) -> miette::Result<()> {
    let (old_format, had_previous, elapsed) = (plan.old_format, plan.had_previous, plan.elapsed);
    let Resolved {
        lock_path,
        outcome,
        profile,
        changes,
        kept,
    } = resolved;
    if let Some(merged) = merged {
        printer.status(format_args!(
            "{} had merge conflicts in {}; kept the {} entries both sides agree on and resolved the rest again",
            lock_path.display(),
            if merged.conflicting.is_empty() {
                "no entry".to_owned()
            } else {
                merged.conflicting.join(", ")
            },
            kept.len()
        ));
    }
    for warning in &outcome.warnings {
        printer.status(format_args!("warning: {warning}"));
    }
    for held_back in &outcome.held_back {
        printer.status(format_args!("note: {held_back}"));
    }
    super::lock_fit::print_outcome(printer, &outcome.fit, &plan.targets);
    let count = outcome.lockfile.locked_kernels(lock_path)?.len();
    printer.status(format_args!(
        "Resolved {count} kernel{} in {:.2}s",
        if count == 1 { "" } else { "s" },
        elapsed.as_secs_f64()
    ));
    if had_previous {
        for change in *changes {
            printer.status(format_args!("{change}"));
        }
    } else {
        for line in &outcome.locked {
            printer.status(format_args!("{line}"));
        }
    }
    if let Some(old_format) = old_format
        && old_format != profile.lock_format
        && merged.is_none()
    {
        printer.status(format_args!(
            "warning: {} was in the {} format; it is rewritten in the {} format",
            lock_path.display(),
            format_name(old_format),
            format_name(profile.lock_format)
        ));
    }
    Ok(())
}

/// `--format json`: what was locked and what changed, as one document on stdout.
fn print_json(
    printer: &Printer,
    resolved: &Resolved<'_>,
    plan: &Plan,
    written: bool,
    dry_run: bool,
) -> miette::Result<()> {
    let (old_format, had_previous) = (plan.old_format, plan.had_previous);
    let Resolved {
        lock_path,
        outcome,
        profile,
        changes,
        kept,
    } = resolved;
    let kernels: Vec<LockedEntryDoc> = outcome
        .lockfile
        .locked_kernels(lock_path)?
        .iter()
        .map(|kernel| LockedEntryDoc {
            repo_id: kernel.repo_id.to_string(),
            commit: kernel.commit.clone(),
            variants: kernel
                .variants
                .as_ref()
                .map(|v| v.keys().map(ToString::to_string).collect()),
        })
        .collect();
    // As text mode: with a previous lock in this format, only the entries
    // that change (an entry resolved again to the same commit is not news).
    let locked: Vec<&crate::lock::project::Locked> = outcome
        .locked
        .iter()
        .filter(|l| {
            !had_previous
                || changes.iter().any(|c| match c {
                    Change::Added { repo_id, .. } | Change::Updated { repo_id, .. } => {
                        *repo_id == l.repo_id
                    }
                    Change::Removed { .. } => false,
                })
        })
        .collect();
    printer.json_line(&LockDoc {
        schema: LockDoc::SCHEMA,
        command: "lock",
        lock_file: lock_path.display().to_string(),
        format: Some(format_id(profile.lock_format)),
        previous_format: old_format.map(format_id),
        written,
        dry_run,
        changes,
        kernels,
        locked,
        warnings: &outcome.warnings,
        kept,
        error: None,
        failed: Vec::new(),
        fit: outcome
            .fit
            .iter()
            .map(super::json::FitFindingDoc::new)
            .collect(),
    });
    Ok(())
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

/// A lock format as the JSON documents name it.
fn format_id(format: LockFormat) -> &'static str {
    match format {
        LockFormat::VariantHash => "variant-hash",
        LockFormat::KernelLocks => "kernel-locks",
    }
}

pub(super) fn format_name(format: LockFormat) -> &'static str {
    match format {
        LockFormat::VariantHash => "variant-hash (kernels ≤0.16)",
        LockFormat::KernelLocks => "KernelLocks (kernels 0.17)",
    }
}
