//! `kernels download`.

use std::process::ExitCode;

use super::args::{
    CacheArgs, LockModeArgs, OutputFormat, ProgressArgs, ProjectArgs, SelectArgs, TrustArgs,
};
use super::json::{DownloadDoc, DownloadedDoc, DryRunDoc, ErrorDoc, FailureDoc};
use super::printer::Printer;
use super::progress::{Progress, human_bytes, plural, summary_line};
use super::project::client::retry_observer;
use super::project::profile::other_folder_note;
use super::project::read::{project_trust, read_lock_with, shell_path};
use crate::cli::settings::Settings;
use crate::install::dry_run::DryRunKernel;
use crate::install::{
    DEFAULT_CONCURRENCY, DRY_RUN_SCHEMA, DownloadError, DownloadOptions, download, dry_run,
};
use crate::lock::format::LockedKernel;
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

/// Arguments of `kernels download`.
#[derive(Debug, clap::Args)]
pub struct DownloadArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// Which variants, and where they live in the cache.
    #[command(flatten)]
    pub select: SelectArgs,

    /// Maximum number of files downloaded at the same time.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY,
          value_parser = parse_concurrency)]
    pub concurrency: usize,

    /// Make no network request: check the cache (as `kernels verify` does) and
    /// fail naming whatever is missing. Same as `HF_HUB_OFFLINE=1`.
    #[arg(long)]
    pub offline: bool,

    /// List every kernel on the Hub even when it is already complete and
    /// verified in the cache. Without it, a kernel whose selected variants are
    /// all cached and verified costs no request (with a 0.17 lock, once a
    /// download recorded the commit's receipts).
    #[arg(long, conflicts_with = "offline")]
    pub refresh: bool,

    /// Print what would be downloaded (files and bytes per kernel and variant,
    /// and what is already cached) without downloading; only metadata requests,
    /// and the metadata.json files of the candidate variants (fetched into the
    /// cache) to check which one the target runtime would load.
    #[arg(long)]
    pub dry_run: bool,

    /// Print, per locked kernel, the variant chosen for the environment, why
    /// every other one was rejected and which newer versions of the kernel have
    /// a build for it; download nothing. With the overrides
    /// (`--torch-version`, `--cuda-version`, …) for another machine.
    #[arg(long, conflicts_with = "dry_run")]
    pub explain: bool,

    /// Also place each locked kernel's `benchmarks/` and `tests/` folders (if
    /// it has them) at the locked commit in the cache, every file verified by
    /// the listing's digest: what `kernels benchmark` runs.
    #[arg(long, conflicts_with_all = ["offline", "dry_run", "explain"])]
    pub with_benchmarks: bool,

    /// Output format (on stdout): with `json`, one document per run (the
    /// download summary, the `--dry-run` plan or the `--explain` verdicts).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Do not write the target runtime's digest receipts
    /// (`.verified-kernels/digest/v1/` in the cache, read by kernels 0.18 and
    /// 0.19), which let the runtime load a variant verified here without
    /// hashing it again. Default: `runtime-receipts` under `[tool.kernels]`
    /// (true).
    #[arg(long)]
    pub no_runtime_receipts: bool,

    /// Accept, after review, what `kernels.lock.provenance` refused for the
    /// locked kernel REPO (`owner/name`; repeatable): another signer, other
    /// files or no signature for its locked commit. Its variants are placed
    /// without that comparison and recorded as found.
    #[arg(long, value_name = "REPO", conflicts_with_all = ["offline", "dry_run", "explain"])]
    pub accept_provenance: Vec<RepoId>,
    /// The image every compiled file (ELF, Mach-O) of the chosen variants
    /// must load on: `manylinux_2_28` (or its glibc, `2.28`), or `host` for
    /// this machine's glibc. A file needing a newer symbol version makes its
    /// variant unfit. Default: `manylinux` and `macos-min` under
    /// `[tool.kernels]` and its targets; without any, not checked.
    #[arg(long, value_name = "TARGET")]
    pub manylinux: Option<String>,

    /// `--trust-root`, `--require-signed`: which signatures a variant must
    /// have to be placed in the cache.
    #[command(flatten)]
    pub trust: TrustArgs,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: CacheArgs,

    /// `--no-progress`.
    #[command(flatten)]
    pub progress: ProgressArgs,
}

fn parse_concurrency(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a positive number of parallel downloads"
        )),
    }
}

/// `kernels download` failures that are not about one kernel.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum DownloadCliError {
    #[error("{detail} (while downloading {})", kernels.join(", "))]
    #[diagnostic(
        code(kernels::download::disk_full),
        help(
            "free space (`kernels cache prune` removes leftovers) or move the cache (`--cache-dir` or KERNELS_CACHE), then run `kernels download` again: partial files resume"
        )
    )]
    DiskFull {
        detail: String,
        kernels: Vec<String>,
    },

    #[error("{} of {} kernels failed to download: {}", failures.len(), total, failures.join("; "))]
    #[diagnostic(code(kernels::download::failed))]
    Failed {
        total: usize,
        failures: Vec<String>,
        #[help]
        help: String,
    },
}

/// `kernels download` as the command line runs it: the stale-lock gate
/// ([`super::project::stale::ensure_current`]), then [`run`]; with `--format json`, a
/// failed gate still prints one document.
pub fn run_checked(
    mut args: DownloadArgs,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    // `KERNELS_FROZEN` counts as `--frozen` from here on.
    args.lock_mode.frozen = global.frozen;
    let mut check_settings = settings.clone();
    check_settings.offline |= args.offline;
    let gate = super::project::stale::ensure_current(
        "download",
        &args.project.project_dir,
        super::project::stale::LockTarget {
            runtime: args.select.runtime.version(),
            repo_type: args.select.repo.repo_type.map(Into::into),
        },
        &check_settings,
        global,
        printer,
        super::project::stale::OnStale::LockOrCreate,
    )
    .inspect_err(|report| {
        if summary_json(&args) {
            print_failure(settings, printer, report, &[]);
        }
    })?;
    // Refs are recorded only from requirements the gate could check.
    args.lock_mode.frozen |= gate == super::project::stale::Gate::Unproven;
    run(args, settings, printer)
}

/// Reads `<project>/kernels.lock`, selects variants and downloads every kernel
/// (with several declared targets, for each: each variant once).
/// Exit 0 when all kernels are in the cache and verified, 1 when any failed
/// (each is named on stderr), 2 on internal errors.
pub fn run(args: DownloadArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let json = summary_json(&args);
    // With JSON on stdout (the summary, the `--dry-run` plan or the
    // `--explain` verdicts), stderr keeps only warnings and errors.
    let printer = &printer.quiet_if(args.format == OutputFormat::Json);
    settings.note_runtime_overrides(printer);
    let read = read_project_lock(&args, settings, printer).inspect_err(|report| {
        if json {
            print_failure(settings, printer, report, &[]);
        }
    })?;
    let profile = read.profile.clone();
    let per_target = read.per_target.clone();
    let (kernels, format, mut options) = download_options(&args, read)?;
    if !options.fit.images.is_empty() || printer.is_verbose() {
        printer.status(format_args!(
            "{}",
            super::project::fit::images_line(&options.fit.images)
        ));
    }
    let settings = &settings.clone().offline_if(args.offline);
    let progress = Progress::new(
        printer,
        if args.dry_run {
            printer.lines_mode()
        } else {
            printer.progress_mode()
        },
    );
    let client = profile.hub_client(
        &HubClient::new(&settings.client_config(printer))
            .map_err(super::project::client::client_error)?
            .with_retry_observer(retry_observer(&progress, &settings.endpoint)),
    );
    let cache = settings.cache();
    let passes = super::project::declared::passes(&per_target, &options.selection);
    if args.explain || args.dry_run {
        let (hub, lock) = ((settings, &client, &cache), (kernels.as_slice(), format));
        return preview(&args, hub, lock, &mut options, &passes, &progress, printer);
    }
    let (mut summary, build_notes) = download_passes(
        (&client, &cache),
        &kernels,
        &mut options,
        passes,
        &progress,
        printer,
    )?;
    if args.with_benchmarks {
        place_extras(&client, &cache, &options, &mut summary, printer)?;
    }
    if let Some(note) = profile.served_as_kernel_note(&client, "downloaded") {
        printer.status(format_args!("warning: {note}"));
    }
    let run = Run {
        args: &args,
        settings,
        cache: &cache,
        kernels: &kernels,
        options: &options,
        build_notes,
        printer,
    };
    run.report(summary, &progress)
}

/// The project's lock as `kernels download` reads it: for the project's
/// interpreter (its modules and probe receipts), `--frozen` kept.
fn read_project_lock(
    args: &DownloadArgs,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<super::project::read::LockRead> {
    let python = super::project::read::lock_reader_python(&args.project.project_dir, settings);
    let (dir, frozen) = (&args.project.project_dir, args.lock_mode.frozen);
    read_lock_with(dir, &args.select, &python, printer, frozen, true)
}

/// The locked kernels, the lock's format and the download options of a read
/// lock, with this run's trust (`--trust-root`, `--accept-provenance`),
/// `--concurrency`, `--refresh`, `--no-runtime-receipts` and `--manylinux`.
/// Errors: an unreadable trust setting, `--accept-provenance` of a kernel the
/// lock does not name, a bad `--manylinux`.
fn download_options(
    args: &DownloadArgs,
    read: super::project::read::LockRead,
) -> miette::Result<(
    Vec<LockedKernel>,
    crate::lock::format::LockFormat,
    DownloadOptions,
)> {
    let dir = &args.project.project_dir;
    let mut trust = project_trust(dir, &args.trust)?;
    accept_provenance(&mut trust, &args.accept_provenance, &read.kernels)?;
    let (kernels, format, mut options) = read.into_options(Some(trust.into()));
    options.concurrency = args.concurrency;
    options.refresh = args.refresh;
    options.runtime_receipts = options
        .runtime_receipts
        .filter(|_| !args.no_runtime_receipts);
    if args.manylinux.is_some() {
        options.fit.images = super::project::fit::images(dir, args.manylinux.as_deref())?;
    }
    Ok((kernels, format, options))
}

/// Downloads `kernels` once per pass (one per declared target, each under a
/// `Target …` line, else one), each variant once; the passes' summaries
/// merged, and per kernel without a build for a pass's environment the
/// versions that have one ([`build_notes`]). A blocked pass (the cache
/// unwritable, …) stops the rest.
fn download_passes(
    (client, cache): (&HubClient, &HubCache),
    kernels: &[LockedKernel],
    options: &mut DownloadOptions,
    passes: Vec<(Option<String>, crate::variant::VariantSelection)>,
    progress: &Progress,
    printer: &Printer,
) -> miette::Result<(crate::install::DownloadSummary, Vec<String>)> {
    let mut summary = crate::install::DownloadSummary::default();
    let mut notes = Vec::new();
    for (target, selection) in passes {
        options.selection = selection;
        if let Some(target) = &target {
            printer.status(format_args!("Target {target}:"));
        }
        let pass = super::project::client::runtime()?
            .block_on(download(client, cache, kernels, options, progress));
        if let Some(target) = &target {
            super::project::declared::report_failures(target, &pass, printer);
        }
        notes.extend(build_notes(
            client,
            options,
            target.as_deref(),
            &pass.failed,
        )?);
        super::project::declared::merge(&mut summary, pass);
        if summary.blocked.is_some() {
            break;
        }
    }
    Ok((summary, notes))
}

/// Online, for each of the `failed` kernels that has no build variant for
/// the pass's environment (`target`, a declared one, else this one): which
/// versions of it have one, with the command that requires one
/// ([`super::project::locking::versions_with_build`]), or that none has;
/// offline (nothing can be listed) none.
fn build_notes(
    client: &HubClient,
    options: &DownloadOptions,
    target: Option<&str>,
    failed: &[crate::install::KernelFailure],
) -> miette::Result<Vec<String>> {
    let repos: Vec<&RepoId> = failed
        .iter()
        .filter_map(|f| match &f.error {
            DownloadError::Variant(crate::variant::VariantError::NoCompatible {
                repo_id, ..
            }) => Some(repo_id),
            _ => None,
        })
        .collect();
    if repos.is_empty() || client.is_offline() {
        return Ok(Vec::new());
    }
    let build = match target {
        Some(target) => format!("a build for {target}"),
        None => "a build for this environment".to_owned(),
    };
    let rt = super::project::client::runtime()?;
    Ok(repos
        .into_iter()
        .map(|repo| {
            super::project::locking::versions_with_build(
                (client, &rt),
                options.repo_type,
                repo,
                &options.selection,
                &build,
            )
        })
        .collect())
}

/// `--explain` or `--dry-run`: what each pass (one per declared target, each
/// under a `Target …` line, else one) would download; the first error stops.
fn preview(
    args: &DownloadArgs,
    (settings, client, cache): (&Settings, &HubClient, &HubCache),
    (kernels, format): (&[LockedKernel], crate::lock::format::LockFormat),
    options: &mut DownloadOptions,
    passes: &[(Option<String>, crate::variant::VariantSelection)],
    progress: &Progress,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let mut code = ExitCode::SUCCESS;
    for (target, selection) in passes {
        options.selection = selection.clone();
        if let Some(target) = target {
            printer.status(format_args!("Target {target}:"));
        }
        code = if args.explain {
            let choice_env = match &options.selection {
                crate::variant::VariantSelection::Detected { env, rules } => Some((&**env, *rules)),
                _ => None,
            };
            let local = super::project::local::gather(
                settings,
                &args.project.project_dir,
                kernels,
                choice_env,
            )?;
            super::project::explain::print_download(
                &super::project::explain::ExplainRun {
                    client,
                    cache,
                    project_dir: &args.project.project_dir,
                    lock_format: format,
                    kernels,
                    options,
                    printer,
                    fit: None,
                    local: Some(&local),
                },
                args.format,
            )?
        } else {
            print_dry_run(
                client,
                cache,
                kernels,
                options,
                args.format,
                progress,
                printer,
            )?
        };
        if code != ExitCode::SUCCESS {
            break;
        }
    }
    Ok(code)
}

/// `--with-benchmarks`: the `benchmarks/` and `tests/` folders of every
/// downloaded kernel ([`crate::install::extras`]), one status line each; a
/// kernel whose folders cannot be placed moves to the failures. Offline
/// (`HF_HUB_OFFLINE`) nothing is listed, and a warning says so.
fn place_extras(
    client: &HubClient,
    cache: &HubCache,
    options: &DownloadOptions,
    summary: &mut crate::install::DownloadSummary,
    printer: &Printer,
) -> miette::Result<()> {
    use crate::install::extras::fetch_extras;
    if client.is_offline() {
        printer.status(format_args!(
            "warning: offline: `--with-benchmarks` fetched no benchmarks/ or tests/ folder"
        ));
        return Ok(());
    }
    let runtime = super::project::client::runtime()?;
    let mut kept = Vec::new();
    for report in std::mem::take(&mut summary.done) {
        let kernel = LockedKernel {
            repo_id: report.repo_id.clone(),
            commit: report.commit.clone(),
            variants: None,
        };
        match runtime.block_on(fetch_extras(client, cache, options.repo_type, &kernel)) {
            Ok(extras) if extras.files.is_empty() => {
                printer.status(format_args!(
                    "{}: no benchmarks/ or tests/ folder",
                    report.label()
                ));
                kept.push(report);
            }
            Ok(extras) => {
                printer.status(format_args!(
                    "{}: {} from benchmarks/ and tests/",
                    report.label(),
                    plural(extras.files.len(), "file")
                ));
                kept.push(report);
            }
            Err(error) => summary
                .failed
                .push(crate::install::KernelFailure::new(&kernel, error)),
        }
    }
    summary.done = kept;
    Ok(())
}

/// `--accept-provenance`: each repository, which must be a locked kernel,
/// is accepted by the provenance check of this run. Errors: a repository the
/// lock does not name.
fn accept_provenance(
    trust: &mut crate::install::signature::Trust,
    accepted: &[RepoId],
    kernels: &[LockedKernel],
) -> miette::Result<()> {
    if let Some(repo) = accepted
        .iter()
        .find(|r| !kernels.iter().any(|k| &k.repo_id == *r))
    {
        return Err(AcceptNotLocked { repo: repo.clone() }.into());
    }
    if let Some(recorded) = &mut trust.recorded {
        recorded.accepted = accepted.to_vec();
    }
    Ok(())
}

/// `--accept-provenance` names a repository the lock does not have.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("--accept-provenance {repo}: not a locked kernel of this project")]
#[diagnostic(
    code(kernels::download::accept_not_locked),
    help("name a kernel that kernels.lock locks (`kernels info` lists them)")
)]
struct AcceptNotLocked {
    repo: RepoId,
}

/// One `kernels download` run, for reporting its outcome.
struct Run<'a> {
    args: &'a DownloadArgs,
    settings: &'a Settings,
    cache: &'a HubCache,
    kernels: &'a [LockedKernel],
    options: &'a DownloadOptions,
    /// The versions with a build of the kernels that have none
    /// ([`build_notes`]), printed after the failures.
    build_notes: Vec<String>,
    printer: &'a Printer,
}

impl Run<'_> {
    /// Prints the outcome of the download (warnings, the JSON document or the
    /// summary line, one message per cause of failure) and gives the exit code.
    fn report(
        &self,
        summary: crate::install::DownloadSummary,
        progress: &Progress,
    ) -> miette::Result<ExitCode> {
        let (settings, printer) = (self.settings, self.printer);
        for warning in &summary.warnings {
            printer.status(format_args!("warning: {warning}"));
        }
        super::project::fit::print_fits(
            printer,
            &self.options.fit,
            &self.options.selection,
            summary.done.iter().map(|r| (r.label(), &r.fit)),
        );
        if let Some(blocked) = summary.blocked {
            let report = miette::Report::new(blocked);
            if summary_json(self.args) {
                print_failure(settings, printer, &report, &summary.failed);
            }
            for failure in summary.failed {
                printer.error(format_args!(
                    "{}: {:?}",
                    failure.label(),
                    miette::Report::new(failure.error)
                ));
            }
            return Err(report);
        }
        if self.args.format == OutputFormat::Json {
            printer.json(&DownloadDoc {
                schema: 1,
                command: "download",
                cache_dir: &settings.cache_dir,
                runtime_overrides: &settings.runtime_overrides,
                kernels: summary.done.iter().map(downloaded_doc).collect(),
                failed: summary.failed.iter().map(failure_doc).collect(),
                error: None,
            });
        }
        if let Some(note) = unsigned_note(&summary.done) {
            printer.status(format_args!("note: {note}"));
        }
        let project_dir = &self.args.project.project_dir;
        let write = !settings.offline;
        crate::install::check::provenance::remember(
            project_dir,
            self.kernels,
            &summary.done,
            write,
            &self.args.accept_provenance,
        )?;
        if !summary.done.is_empty() {
            printer.status(summary_line(
                &summary.done,
                progress.elapsed(),
                &settings.display_path(&settings.cache_dir),
            ));
        }
        if summary.failed.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        let code = self.failures(summary.failed);
        for note in &self.build_notes {
            printer.status(format_args!("note: {note}"));
        }
        code
    }

    /// The error of a run where `failed` kernels failed: a full disk once, one
    /// message per cause, the exit code.
    fn failures(&self, failed: Vec<crate::install::KernelFailure>) -> miette::Result<ExitCode> {
        // A disk that fills mid-way is one error, not one per file.
        if let Some(full) = failed.iter().find_map(|f| match &f.error {
            DownloadError::Cache(err @ kernels_cache::CacheError::DiskFull { .. }) => {
                Some(err.to_string())
            }
            _ => None,
        }) {
            return Err(miette::Report::new(DownloadCliError::DiskFull {
                detail: full,
                kernels: failed.iter().map(|f| f.label()).collect(),
            }));
        }
        let failures: Vec<String> = failed.iter().map(|f| f.label()).collect();
        let internal = failed.iter().find_map(|f| match &f.error {
            DownloadError::Internal(msg) => Some(format!("{}: {msg}", f.label())),
            _ => None,
        });
        // One cause, one message: failures with the same code and help (a
        // `--variant` typo, the Hub unreachable) are printed once, naming the kernels.
        let failed_fixable = failed.iter().any(|f| f.error.fixed_by_download());
        let groups = group_by_cause(failed);
        let single_cause = groups.len() == 1 && internal.is_none();
        for (_, group) in groups {
            if let Some(err) = self.unreachable(&group) {
                if single_cause {
                    return Err(err);
                }
                self.printer.error(format_args!("{err:?}"));
                continue;
            }
            let labels: Vec<String> = group.iter().map(|f| f.label()).collect();
            let Some(first) = group.into_iter().next() else {
                continue;
            };
            let note = match &first.error {
                DownloadError::NotCached {
                    repo_id, commit, ..
                } => other_folder_note(self.cache, self.options.repo_type, repo_id, commit),
                _ => None,
            };
            self.printer.error(format_args!(
                "{}: {:?}",
                super::project::causes::name_kernels(&labels),
                miette::Report::new(first.error)
            ));
            if let Some(note) = note {
                self.printer.status(format_args!("note: {note}"));
            }
            let offline = self.settings.offline;
            let no_fetch_helps = !failed_fixable;
            if single_cause
                && (failures.len() > 1 || (self.kernels.len() == 1 && !offline) || no_fetch_helps)
            {
                // One cause printed once; the summary would only repeat it (offline,
                // it names the exact command that fetches what is missing).
                return Ok(ExitCode::from(1));
            }
        }
        if let Some(msg) = internal {
            return Err(super::project::client::InternalError(msg).into());
        }
        Err(DownloadCliError::Failed {
            total: self.kernels.len(),
            help: if failed_fixable {
                self.failed_help(self.kernels.len() - failures.len())
            } else {
                "no download repairs these kernels: do what is said above for each (what would fit, or what to remove)".to_owned()
            },
            failures,
        }
        .into())
    }

    /// One error for a group of failures that all are "cannot connect", naming the
    /// endpoint and the deepest cause once; with an `--offline` hint when the cache
    /// holds everything these kernels need.
    fn unreachable(&self, group: &[crate::install::KernelFailure]) -> Option<miette::Report> {
        let DownloadError::Hub(error) = &group.first()?.error else {
            return None;
        };
        // Only "cannot connect to the endpoint": a transfer that broke off, or a
        // CDN, is another cause.
        let source = super::project::causes::connect_failure(error, &self.settings.endpoint)?;
        let failed: Vec<LockedKernel> = self
            .kernels
            .iter()
            .filter(|k| {
                group
                    .iter()
                    .any(|f| f.repo_id == k.repo_id && f.commit == k.commit)
            })
            .cloned()
            .collect();
        let complete = crate::install::verify::verify_kernels(
            self.cache,
            self.options.repo_type,
            &failed,
            &self.options.selection,
        )
        .iter()
        .all(|check| check.is_ok());
        let help = if complete {
            format!(
                "the cache already holds every file these kernels need; use it without the network:\n\n    kernels download {} --offline{}",
                shell_path(&self.args.project.project_dir),
                self.args.select.flags()
            )
        } else {
            "check HF_ENDPOINT and the network; timeouts are set with HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds)".to_owned()
        };
        Some(miette::Report::new(Unreachable {
            endpoint: self.settings.endpoint.clone(),
            cause: super::project::causes::root_cause(source),
            kernels: super::project::causes::name_kernels(
                &group.iter().map(|f| f.label()).collect::<Vec<_>>(),
            ),
            help,
        }))
    }

    /// The help of [`DownloadCliError::Failed`] when `done` kernels are complete.
    fn failed_help(&self, done: usize) -> String {
        if self.settings.offline {
            return format!(
                "fetch what is missing online (without --offline and with HF_HUB_OFFLINE unset):\n\n    kernels download {}{}",
                shell_path(&self.args.project.project_dir),
                self.args.select.flags()
            );
        }
        if done == 0 {
            "fix the causes above and run `kernels download` again".to_owned()
        } else {
            format!(
                "{} in the cache; fix the causes above and run `kernels download` again",
                match done {
                    1 => "the other kernel is".to_owned(),
                    n => format!("the other {n} kernels are"),
                }
            )
        }
    }
}

/// Failures grouped by cause, in order: one cause, one message (a `--variant`
/// typo, the Hub unreachable is printed once, naming the kernels); a kernel
/// missing offline is explained with its own problems.
fn group_by_cause(
    failed: Vec<crate::install::KernelFailure>,
) -> Vec<(String, Vec<crate::install::KernelFailure>)> {
    let mut groups: Vec<(String, Vec<crate::install::KernelFailure>)> = Vec::new();
    for failure in failed {
        let key = match &failure.error {
            DownloadError::NotCached { .. } => failure.error.to_string(),
            _ => super::project::causes::cause_key(&failure.error),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(failure),
            None => groups.push((key, vec![failure])),
        }
    }
    groups
}

/// Whether `kernels download` prints the summary document (`--format json`
/// without `--dry-run` or `--explain`, which print their own).
pub(super) fn summary_json(args: &DownloadArgs) -> bool {
    args.format == OutputFormat::Json && !args.dry_run && !args.explain
}

/// The `--format json` document of a download that stopped before any kernel
/// (the lock stale or missing, torch not found, the cache unwritable): still
/// one document, the failure typed in `error`.
pub(super) fn print_failure(
    settings: &Settings,
    printer: &Printer,
    report: &miette::Report,
    failed: &[crate::install::KernelFailure],
) {
    printer.json(&DownloadDoc {
        schema: 1,
        command: "download",
        cache_dir: &settings.cache_dir,
        runtime_overrides: &settings.runtime_overrides,
        kernels: Vec::new(),
        failed: failed.iter().map(failure_doc).collect(),
        error: Some(ErrorDoc::of(report)),
    });
}

/// The Hub cannot be reached at all.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "cannot reach the Hub at {} ({cause}); not downloaded: {kernels}",
    kernels_types::text::redact(endpoint)
)]
#[diagnostic(code(kernels::download::unreachable))]
struct Unreachable {
    endpoint: String,
    cause: String,
    /// The kernels, at most three named.
    kernels: String,
    #[help]
    help: String,
}

/// `unsigned variants (no metadata.json.sigstore): acme/relu@abc1234
/// (torch-cpu, torch-cuda), …`: the one line naming the unsigned variants a
/// run placed (a kernel already complete in the cache, which this run did not
/// change, was noted by the run that placed it: warm and offline no-ops
/// print no note), short whatever their number (a kernel with more than
/// [`NAMED_UNSIGNED`] is counted, `(52 variants)`; past that many kernels,
/// `and N more kernels`; `--format json` names each); `None` when there is
/// none.
fn unsigned_note(done: &[crate::install::KernelReport]) -> Option<String> {
    let kernels: Vec<String> = done
        .iter()
        .filter(|report| !crate::cli::progress::is_cached(report))
        .filter_map(|report| {
            let unsigned: Vec<&str> = report
                .signatures
                .iter()
                .filter(|(_, s)| s.signer().is_none())
                .map(|(v, _)| v.as_str())
                .collect();
            let variants = match unsigned.len() {
                0 => return None,
                n if n > NAMED_UNSIGNED => format!("{n} variants"),
                _ => unsigned.join(", "),
            };
            Some(format!("{} ({variants})", report.label()))
        })
        .collect();
    let named = match kernels.len() {
        0 => return None,
        n if n > NAMED_UNSIGNED => format!(
            "{} and {} more kernels",
            kernels[..NAMED_UNSIGNED].join(", "),
            n - NAMED_UNSIGNED
        ),
        _ => kernels.join(", "),
    };
    Some(format!(
        "unsigned variants (no metadata.json.sigstore): {named}"
    ))
}

/// How many unsigned variants of a kernel, and how many kernels, the
/// unsigned note names before it counts instead.
const NAMED_UNSIGNED: usize = 3;

/// A failed kernel as typed JSON: `repo_id`, `commit`, the diagnostic `code`
/// and the `message`.
fn failure_doc(failure: &crate::install::KernelFailure) -> FailureDoc {
    FailureDoc::new(
        &failure.repo_id,
        Some(failure.commit.to_string()),
        &failure.error,
    )
}

/// A kernel now complete in the cache, as typed JSON.
fn downloaded_doc(report: &crate::install::KernelReport) -> DownloadedDoc<'_> {
    DownloadedDoc {
        repo_id: report.repo_id.to_string(),
        version: report.version.as_deref(),
        commit: report.commit.clone(),
        variants: &report.variants,
        files: report.files,
        bytes: report.bytes,
        fetched_bytes: report.fetched_bytes,
        fetched_blobs: report.fetched_blobs,
        fit: super::json::FitDoc::of(&report.fit),
        signatures: report
            .signatures
            .iter()
            .map(|(variant, signature)| super::json::PlacedSignatureDoc::of(variant, signature))
            .collect(),
    }
}

/// `--dry-run`: prints the plan on stdout (text or JSON); exit 1 when any
/// kernel cannot be planned.
fn print_dry_run(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    format: OutputFormat,
    reporter: &Progress,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let results = super::project::client::runtime()?
        .block_on(dry_run(client, cache, kernels, options, reporter));
    let mut planned = Vec::new();
    let mut failures = Vec::new();
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok(kernel) => planned.push(kernel),
            Err(failure) => {
                failures.push(failure_doc(&failure));
                failed.push((failure.label(), failure.error));
            }
        }
    }
    super::project::causes::print_kernel_failures(
        printer,
        failed,
        client.endpoint(),
        "not planned",
    );
    let code = if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    match format {
        OutputFormat::Text => {
            for kernel in &planned {
                print_dry_run_kernel(printer, kernel);
            }
            let files: usize = planned.iter().map(|k| k.download_files).sum();
            let bytes = kernels_types::size::total(planned.iter().map(|k| k.download_bytes));
            printer.data(format_args!(
                "Total: would download {}, {}",
                plural(files, "file"),
                human_bytes(bytes)
            ));
        }
        OutputFormat::Json => printer.json(&DryRunDoc {
            schema: DRY_RUN_SCHEMA,
            command: "download --dry-run",
            kernels: &planned,
            download_files: planned.iter().map(|k| k.download_files).sum(),
            download_bytes: kernels_types::size::total(planned.iter().map(|k| k.download_bytes)),
            failed: failures,
        }),
    }
    Ok(code)
}

/// One line for the kernel, one per variant.
fn print_dry_run_kernel(printer: &Printer, kernel: &DryRunKernel) {
    printer.data(format_args!(
        "{}@{}: would download {}, {}",
        kernel.repo_id,
        kernel.commit.short(),
        plural(kernel.download_files, "file"),
        human_bytes(kernel.download_bytes)
    ));
    for v in &kernel.variants {
        printer.data(format_args!(
            "  {}: {}, {}; cached {}, {}",
            v.name,
            plural(v.files, "file"),
            human_bytes(v.bytes),
            plural(v.cached_files, "file"),
            human_bytes(v.cached_bytes)
        ));
    }
    for r in &kernel.refused {
        printer.data(format_args!(
            "  {}: the target runtime would refuse it ({}: {})",
            r.variant, r.rule, r.reason
        ));
    }
    if kernel.metadata_fetched > 0 {
        printer.data(format_args!(
            "  fetched {} into the cache to check the fit",
            plural(kernel.metadata_fetched, "metadata.json file")
        ));
    }
}
