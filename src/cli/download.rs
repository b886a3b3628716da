//! `kernels download`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{EnvArgs, ProjectArgs, RepoTypeArg, RepoTypeArgs, TargetArgs, TargetRuntimeArgs};
use super::json::{DownloadDoc, DownloadedDoc, DryRunDoc, ErrorDoc, FailureDoc};
use super::printer::Printer;
use super::profile::{
    CACHE_HINT, ProfileInputs, choose_profile_with, describe_preference, other_folder_note,
};
use super::progress::{Progress, ProgressMode, human_bytes, plural, summary_line};
use crate::cli::settings::Settings;
use crate::install::dry_run::DryRunKernel;
use crate::install::{
    DEFAULT_CONCURRENCY, DRY_RUN_SCHEMA, DownloadError, DownloadOptions, download, dry_run,
};
use crate::lock::format::{LOCK_FILE_NAME, LockedKernel, Lockfile};
use crate::lock::manifest::ToolSettings;
use crate::lock::profile::ProfileSource;
use crate::variant::{FitPolicy, ProbeScope, ProjectPython, VariantRequest, VariantSelection};
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::wire::RepoType;

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
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Do not write the target runtime's digest receipts
    /// (`.verified-kernels/digest/v1/` in the cache, read by kernels 0.18 and
    /// 0.19), which let the runtime load a variant verified here without
    /// hashing it again. Default: `runtime-receipts` under `[tool.kernels]`
    /// (true).
    #[arg(long)]
    pub no_runtime_receipts: bool,

    /// `--trust-root`, `--require-signed`: which signatures a variant must
    /// have to be placed in the cache.
    #[command(flatten)]
    pub trust: super::args::TrustArgs,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::CacheArgs,

    /// `--no-progress`.
    #[command(flatten)]
    pub progress: super::ProgressArgs,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Lines for people.
    Text,
    /// One JSON document (schemas in `docs/json-output.md`).
    Json,
}

/// Variant selection and repository type, shared by `download` and `verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct SelectArgs {
    /// Use this build variant (a directory under `build/`); repeatable. Each
    /// kernel takes the named variants it has, and a kernel with none of them
    /// is an error. Without it, the variant is chosen for the project's torch.
    #[arg(long = "variant", value_name = "NAME", conflicts_with = "all_variants")]
    pub variants: Vec<String>,

    /// Use every build variant of every kernel.
    #[arg(long)]
    pub all_variants: bool,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// The environment the variant is chosen for, instead of asking torch.
    #[command(flatten)]
    pub env: EnvArgs,

    /// The GPUs the variants must load on (`--cuda-capability`, `--rocm-arch`).
    #[command(flatten)]
    pub targets: TargetArgs,
}

impl SelectArgs {
    /// The variants asked for: `--all-variants`, the `--variant` names, or
    /// detection from torch.
    fn request(&self) -> VariantRequest {
        if self.all_variants {
            VariantRequest::All
        } else if !self.variants.is_empty() {
            VariantRequest::Named(self.variants.clone())
        } else {
            VariantRequest::Detect
        }
    }

    /// The same selection as command-line flags, for hints (`--all-variants`,
    /// `--variant A --variant B`, `--repo-type model`, or nothing).
    pub fn flags(&self) -> String {
        let mut out = String::new();
        if self.all_variants {
            out.push_str(" --all-variants");
        }
        for v in &self.variants {
            out.push_str(&format!(" --variant {v}"));
        }
        if let Some(version) = self.runtime.version() {
            out.push_str(&format!(" --target-runtime {version}"));
        }
        match self.repo.repo_type {
            Some(RepoTypeArg::Model) => out.push_str(" --repo-type model"),
            Some(RepoTypeArg::Kernel) => out.push_str(" --repo-type kernel"),
            None => {}
        }
        out.push_str(&self.env.flags());
        for capability in &self.targets.cuda_capability {
            out.push_str(&format!(" --cuda-capability {capability}"));
        }
        for arch in &self.targets.rocm_arch {
            if let kernels_types::fit::Target::Rocm(arch) = arch {
                out.push_str(&format!(" --rocm-arch {arch}"));
            }
        }
        out
    }
}

/// What `download`, `verify` and `env` take from a project's `kernels.lock`,
/// read once.
pub(super) struct LockRead {
    /// The locked kernels, in lock order.
    pub kernels: Vec<LockedKernel>,
    /// The variant selection for them.
    pub selection: VariantSelection,
    /// The target runtime's repository type.
    pub repo_type: RepoType,
    /// The target profile chosen for the lock.
    pub profile: crate::lock::profile::Profile,
    /// The lock file's format.
    pub format: crate::lock::format::LockFormat,
    /// What the runtime's load-time rules check the variants against.
    pub fit: FitPolicy,
    /// The ref each entry was locked from, where the lock or `pyproject.toml`
    /// says (see [`lock_refs`]).
    pub refs: Vec<crate::install::KernelRef>,
    /// The target runtime's digest receipt format to write after a variant
    /// is verified: the profile's, unless `runtime-receipts = false` is set
    /// under `[tool.kernels]`.
    pub runtime_receipts: Option<kernels_cache::RuntimeReceiptFormat>,
}

impl LockRead {
    /// The kernels, the lock's format and the options of a download run with
    /// at most `concurrency` files in flight (`refresh`: list every kernel
    /// even when the cache shows it complete).
    pub(super) fn into_options(
        self,
        concurrency: usize,
        refresh: bool,
        trust: Option<std::sync::Arc<crate::install::signature::Trust>>,
    ) -> (
        Vec<LockedKernel>,
        crate::lock::format::LockFormat,
        DownloadOptions,
    ) {
        let options = DownloadOptions {
            repo_type: self.repo_type,
            selection: self.selection,
            concurrency,
            refs: self.refs,
            refresh,
            fit: self.fit,
            trust,
            runtime_receipts: self.runtime_receipts,
        };
        (self.kernels, self.format, options)
    }
}

/// Reads `<project>/kernels.lock`, chooses the target profile (which prints
/// its `Target runtime: …` line unless the printer is quiet; an installed
/// runtime that cannot read the lock fails) and resolves the variant
/// selection (detecting torch only when the lock has kernels and no variant
/// flag is given). `python` is the project's interpreter: it is started at
/// most once, for the installed runtime and torch together, and its probe
/// stays with the caller ([`ProjectPython::probed`]).
pub(super) fn read_lock(
    project_dir: &Path,
    select: &SelectArgs,
    python: &ProjectPython,
    printer: &Printer,
    frozen: bool,
) -> miette::Result<LockRead> {
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(no_lock_error(project_dir));
    }
    let lockfile = Lockfile::read(&lock_path)?;
    let kernels = lockfile.locked_kernels(&lock_path)?;
    let tool = ToolSettings::read(project_dir)?;
    let manifest_path = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let request = select.request();
    let overrides = select.env.overrides();
    // Nothing to select from: do not require torch for an empty lock.
    let needs_torch = !kernels.is_empty() && request.needs_torch(&overrides);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: select.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format: Some(lockfile.format()),
            repo_type: select.repo.repo_type,
            python,
            scope: ProbeScope::torch_if(needs_torch),
            unreadable_fails: true,
        },
        printer,
    )?;
    warn_unreadable_by_named_runtime(&profile, lockfile.format(), &lock_path, printer);
    if profile.cache_is_ambiguous() && !kernels.is_empty() && printer.is_verbose() {
        printer.status(format_args!("note: {CACHE_HINT}"));
    }
    let selection = if kernels.is_empty() {
        VariantSelection::All
    } else {
        request.resolve_with(python, profile.variant_preference, &overrides)?
    };
    let fit = super::fit::policy(
        &select.targets.targets(),
        tool.as_ref()
            .map(|t| (t.targets.as_slice(), manifest_path.as_path())),
        needs_torch.then(|| python.probed()).flatten(),
        profile.runtime,
    );
    if fit.targets.is_checked() && printer.is_verbose() {
        printer.status(format_args!("Target GPUs: {}", fit.targets));
    }
    print_environment(&selection, profile.runtime, printer);
    let receipts_on = tool.as_ref().is_none_or(|t| t.runtime_receipts);
    Ok(LockRead {
        runtime_receipts: profile.runtime_receipts().filter(|_| receipts_on),
        refs: lock_refs(project_dir, &lockfile, &kernels, frozen),
        format: lockfile.format(),
        kernels,
        selection,
        repo_type: profile.repo_type,
        profile,
        fit,
    })
}

/// Warns when a runtime the user named (flag or `pyproject.toml`) reads
/// another lock format than the lock's (`format`): it would fail on this lock
/// at run time, whatever the cache holds.
fn warn_unreadable_by_named_runtime(
    profile: &crate::lock::profile::Profile,
    format: crate::lock::format::LockFormat,
    lock_path: &Path,
    printer: &Printer,
) {
    if let (Some(runtime), ProfileSource::Option | ProfileSource::Manifest) =
        (profile.runtime, &profile.source)
        && profile.lock_format != format
    {
        printer.status(format_args!(
            "warning: {} is in the {} format, which kernels {runtime} cannot read (it reads {}); re-lock it for that runtime before shipping it: `kernels lock --target-runtime {runtime}`",
            shell_path(lock_path),
            super::lock::format_name(format),
            super::lock::format_name(profile.lock_format),
        ));
    }
}

/// The `Environment: …` status line of a detected selection; with `-v` it
/// names the target runtime's ranking too (`kernels env` shows it), like
/// the `Target runtime: …` line.
fn print_environment(
    selection: &VariantSelection,
    runtime: Option<crate::lock::profile::RuntimeVersion>,
    printer: &Printer,
) {
    if let VariantSelection::Detected { env, preference } = selection {
        if printer.is_verbose() {
            printer.status(format_args!(
                "Environment: {}; variants ranked by {}",
                env.describe(),
                describe_preference(*preference, runtime)
            ));
        } else {
            printer.status(format_args!("Environment: {}", env.describe()));
        }
    }
}

fn parse_concurrency(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "`{s}` is not a positive number of parallel downloads"
        )),
    }
}

/// The error of a project directory `dir` without `kernels.lock`, with
/// the command that creates it.
pub(super) fn no_lock_error(dir: &Path) -> miette::Report {
    DownloadCliError::NoLock {
        dir: dir.to_owned(),
        path: dir.join(LOCK_FILE_NAME),
        help: no_lock_help(dir),
    }
    .into()
}

/// How to get a `kernels.lock` in `dir`: lock the project, or, without a
/// `pyproject.toml` there, go to the project (or name it) first.
pub(super) fn no_lock_help(dir: &Path) -> String {
    if dir
        .join(crate::lock::manifest::MANIFEST_FILE_NAME)
        .is_file()
    {
        format!("create it with `kernels lock {}`", shell_path(dir))
    } else {
        format!(
            "{} has no pyproject.toml either: run the command in the project directory or name it (`--project DIR`); a project declares its kernels under `[tool.kernels.dependencies]` and `kernels lock` writes the lock",
            shell_path(dir)
        )
    }
}

/// `kernels download` failures that are not about one kernel.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum DownloadCliError {
    #[error("no kernels.lock in {}: expected {}", dir.display(), path.display())]
    #[diagnostic(code(kernels::download::no_lock))]
    NoLock {
        dir: PathBuf,
        path: PathBuf,
        #[help]
        help: String,
    },

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
/// ([`super::stale::ensure_current`]), then [`run`]; with `--format json`, a
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
    super::stale::ensure_current(
        "download",
        &args.project.project_dir,
        args.select.repo.repo_type.map(Into::into),
        &check_settings,
        global,
        printer,
        true,
    )
    .inspect_err(|report| {
        if summary_json(&args) {
            print_failure(settings, printer, report, &[]);
        }
    })?;
    run(args, settings, printer)
}

/// Reads `<project>/kernels.lock`, selects variants and downloads every kernel.
/// Exit 0 when all kernels are in the cache and verified, 1 when any failed
/// (each is named on stderr), 2 on internal errors.
pub fn run(args: DownloadArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let json = summary_json(&args);
    // With JSON on stdout (the summary, the `--dry-run` plan or the
    // `--explain` verdicts), stderr keeps only warnings and errors.
    let printer = &printer.quiet_if(args.format == Format::Json);
    settings.note_runtime_overrides(printer);
    let python = ProjectPython::for_project(
        &args.project.project_dir,
        super::settings::virtual_env().as_deref(),
    )
    .with_modules(kernels_types::python_depends::ALL_MODULES);
    let (dir, frozen) = (&args.project.project_dir, args.lock_mode.frozen);
    let read = read_lock(dir, &args.select, &python, printer, frozen).inspect_err(|report| {
        if json {
            print_failure(settings, printer, report, &[]);
        }
    })?;
    let profile = read.profile.clone();
    let trust = project_trust(dir, &args.trust)?;
    let (kernels, format, mut options) =
        read.into_options(args.concurrency, args.refresh, Some(trust.into()));
    options.runtime_receipts = options
        .runtime_receipts
        .filter(|_| !args.no_runtime_receipts);
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
            .map_err(super::client_error)?
            .with_retry_observer(retry_observer(&progress, &settings.endpoint)),
    );
    let cache = settings.cache();
    if args.explain {
        return super::explain::print_download(
            &super::explain::ExplainRun {
                client: &client,
                cache: &cache,
                project_dir: &args.project.project_dir,
                lock_format: format,
                kernels: &kernels,
                options: &options,
                printer,
                fit: None,
            },
            args.format,
        );
    }
    if args.dry_run {
        return print_dry_run(
            &client,
            &cache,
            &kernels,
            &options,
            args.format,
            &progress,
            printer,
        );
    }
    let mut summary =
        super::runtime()?.block_on(download(&client, &cache, &kernels, &options, &progress));
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
        printer,
    };
    run.report(summary, &progress)
}

/// The trust a download of the project in `dir` runs under: its
/// `[tool.kernels]` trust settings with `flags` applied, and the file hashes
/// its `kernels.lock.provenance` records. Errors: an unreadable manifest or
/// trust root.
pub(super) fn project_trust(
    dir: &Path,
    flags: &super::args::TrustArgs,
) -> miette::Result<crate::install::signature::Trust> {
    let tool = ToolSettings::read(dir)?.unwrap_or_default();
    let pins = crate::lock::provenance::file_pins(dir);
    Ok(crate::install::signature::Trust::new(
        flags.apply(tool.signing),
        pins,
    )?)
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
    let runtime = super::runtime()?;
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

/// One `kernels download` run, for reporting its outcome.
struct Run<'a> {
    args: &'a DownloadArgs,
    settings: &'a Settings,
    cache: &'a HubCache,
    kernels: &'a [LockedKernel],
    options: &'a DownloadOptions,
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
        print_fits(
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
        if self.args.format == Format::Json {
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
        crate::lock::provenance::remember(project_dir, self.kernels, &summary.done, write)?;
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
        self.failures(summary.failed)
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
                super::causes::name_kernels(&labels),
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
            return Err(super::InternalError(msg).into());
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
        let source = super::causes::connect_failure(error, &self.settings.endpoint)?;
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
            cause: super::causes::root_cause(source),
            kernels: super::causes::name_kernels(
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
            _ => super::causes::cause_key(&failure.error),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(failure),
            None => groups.push((key, vec![failure])),
        }
    }
    groups
}

/// The fit lines of a command, per kernel (`label`, its fit): each skipped
/// candidate as a note, each variant taken that the runtime would refuse
/// (`--all-variants`) and each runtime warning as a warning; then, once, the
/// `Target GPUs: not checked (…)` line when a variant declares archs that
/// could not be checked.
pub(super) fn print_fits<'a>(
    printer: &Printer,
    policy: &FitPolicy,
    selection: &VariantSelection,
    fits: impl Iterator<Item = (String, &'a crate::install::fit::KernelFit)>,
) {
    let taken = *selection == VariantSelection::All;
    let mut unchecked = false;
    for (label, fit) in fits {
        unchecked |= fit.archs_unchecked;
        for refused in &fit.refused {
            let reasons: Vec<String> = refused
                .refusals
                .iter()
                .map(|r| format!("{}: {r}", r.rule()))
                .collect();
            if taken {
                printer.status(format_args!(
                    "warning: {label}: variant {} is in the cache, but the target runtime would refuse to load it: {}",
                    refused.variant,
                    reasons.join("; ")
                ));
            } else {
                printer.status(format_args!(
                    "note: {label}: skipped variant {} (the target runtime would refuse to load it: {})",
                    refused.variant,
                    reasons.join("; ")
                ));
            }
        }
        for warning in &fit.warnings {
            printer.status(format_args!(
                "warning: {label}: variant {}: {}",
                warning.variant, warning.warning
            ));
        }
        for variant in &fit.shadowing {
            printer.status(format_args!(
                "warning: {label}: build/{variant} is in the cached snapshot: the runtime takes it before the variant chosen and refuses it; remove that directory"
            ));
        }
    }
    if unchecked {
        printer.status(format_args!("Target GPUs: {}", policy.targets));
    }
}

/// Whether `kernels download` prints the summary document (`--format json`
/// without `--dry-run` or `--explain`, which print their own).
pub(super) fn summary_json(args: &DownloadArgs) -> bool {
    args.format == Format::Json && !args.dry_run && !args.explain
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

/// The Hub client of a command that shows its retries as plain status lines
/// on stderr in `mode` ([`ProgressMode::Lines`], or [`ProgressMode::Quiet`]
/// for none); `kernels download` draws them with its own progress through
/// [`retry_observer`].
///
/// # Errors
/// The HTTP client cannot be built (a bad CA bundle or proxy setting).
pub(super) fn client_showing_retries(
    settings: &Settings,
    printer: &Printer,
    mode: ProgressMode,
) -> miette::Result<HubClient> {
    let lines = Progress::new(printer, mode);
    Ok(HubClient::new(&settings.client_config(printer))
        .map_err(super::client_error)?
        .with_retry_observer(retry_observer(&lines, &settings.endpoint)))
}

/// Shows the Hub client's retries of metadata requests as status lines: one
/// per retry round (kernels are listed in parallel and fail together), naming
/// the endpoint.
pub(super) fn retry_observer(
    progress: &Progress,
    endpoint: &str,
) -> impl Fn(&kernels_hub::RetryNotice) + Send + Sync + 'static {
    let progress = progress.clone();
    let endpoint = kernels_types::text::redact(endpoint).into_owned();
    let shown = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    move |notice| {
        use std::sync::atomic::Ordering;
        if shown.fetch_max(notice.attempt, Ordering::Relaxed) >= notice.attempt {
            return;
        }
        progress.line(&super::progress::retry_line(&endpoint, notice));
    }
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
/// run placed, short whatever their number (a kernel with more than
/// [`NAMED_UNSIGNED`] is counted, `(52 variants)`; past that many kernels,
/// `and N more kernels`; `--format json` names each); `None` when there is
/// none.
fn unsigned_note(done: &[crate::install::KernelReport]) -> Option<String> {
    let kernels: Vec<String> = done
        .iter()
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

/// The `refs/<name>` each locked entry was resolved from, when the lock or
/// `pyproject.toml` says: a `KernelLocks` entry's `version = N` is branch `vN`
/// and its `revision` a branch or tag; for a variant-hash lock, the
/// `pyproject.toml` requirement (`N` → `vN`, a `revision` name as is). Commit
/// ids and version specifiers (whose tag the lock does not record) give none.
fn lock_refs(
    project_dir: &Path,
    lockfile: &Lockfile,
    kernels: &[LockedKernel],
    frozen: bool,
) -> Vec<crate::install::KernelRef> {
    use crate::install::KernelRef;
    use crate::lock::format::kernel_locks::KernelVersion;
    use crate::lock::requirement::Requirement;
    let is_commit = kernels_types::CommitId::is_commit_like;
    let mut out = Vec::new();
    if let Lockfile::KernelLocks(locks) = lockfile {
        for (dep, commit) in locks.iter() {
            let name = match &dep.version {
                KernelVersion::Version(n) => format!("v{n}"),
                KernelVersion::Revision(r) if !is_commit(r) => r.clone(),
                KernelVersion::Revision(_) => continue,
            };
            if let Ok(repo_id) = dep.repo_id.parse() {
                out.push(KernelRef {
                    repo_id,
                    commit: commit.clone(),
                    name,
                });
            }
        }
        return out;
    }
    // Under `--frozen` nothing checked that `pyproject.toml` still asks for
    // what was locked: a locked commit goes by the Hub's (or the cache's) refs
    // at that commit, never by an edited requirement.
    if frozen {
        return out;
    }
    let Ok(manifest) = crate::lock::manifest::Manifest::read(project_dir) else {
        return out;
    };
    for dep in &manifest.dependencies {
        let name = match &dep.requirement {
            Requirement::Branch(n) => format!("v{n}"),
            Requirement::Revision(r) if !is_commit(r) => r.clone(),
            _ => continue,
        };
        for kernel in kernels.iter().filter(|k| k.repo_id == dep.repo_id) {
            out.push(KernelRef {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                name: name.clone(),
            });
        }
    }
    out
}

/// A path as it can be pasted into a shell (quoted when it has special characters).
pub(super) fn shell_path(path: &Path) -> String {
    let text = path.display().to_string();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// `--dry-run`: prints the plan on stdout (text or JSON); exit 1 when any
/// kernel cannot be planned.
fn print_dry_run(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    format: Format,
    reporter: &Progress,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let results = super::runtime()?.block_on(dry_run(client, cache, kernels, options, reporter));
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
    super::causes::print_kernel_failures(printer, failed, client.endpoint(), "not planned");
    let code = if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    match format {
        Format::Text => {
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
        Format::Json => printer.json(&DryRunDoc {
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
