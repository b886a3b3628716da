//! `kernels check`: import every locked kernel through the project's Python,
//! offline, from the cache ([`crate::check`]), and say per kernel whether it
//! loaded, from which variant, with which ops.

use std::path::Path;
use std::process::ExitCode;

use super::args::{EnvArgs, ProjectArgs, RepoTypeArgs, SelectArgs, TargetRuntimeArgs};
use super::json::problem_kind;
use super::json::{CheckImportDoc, CheckedKernelDoc, ErrorDoc, ImportErrorDoc, OpsDoc, ProblemDoc};
use super::printer::Printer;
use super::progress::plural;
use super::project::read::{LockRead, read_lock, shell_path};
use crate::check::abi::{StaticKernel, check_cached};
use crate::check::{
    ImportInputs, ImportOutcome, ImportRun, KernelImport, Located, Mechanism, NotReady,
    import_kernels, locate,
};
use crate::cli::settings::Settings;
use crate::lock::format::LOCK_FILE_NAME;
use crate::variant::ProjectPython;

mod local;

/// Arguments of `kernels check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// `--target-runtime`: which runtime's ranking picks the variant among
    /// the cached ones and which cache folders are looked in.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Output format (on stdout): a report per kernel, or one JSON document.
    #[arg(long, value_enum, default_value_t = super::args::OutputFormat::Text)]
    pub format: super::args::OutputFormat,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::args::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,

    /// Import nothing: run every check of the compiled files (ABI for the
    /// image, architecture, claimed abi3 / torch stable ABI) on each cached
    /// variant of each locked kernel. Needs no Python, torch or GPU, so any
    /// build stage can run it.
    #[arg(long = "static")]
    pub static_only: bool,

    /// With `--static`: the image the compiled files must load on,
    /// `manylinux_2_28` (or `2.28`) or `host` (this machine's glibc).
    /// Default: `manylinux` and `macos-min` under `[tool.kernels]` and its
    /// targets.
    #[arg(long, value_name = "TARGET", requires = "static_only")]
    pub manylinux: Option<String>,
}

impl CheckArgs {
    /// The variant selection of `download` without flags: the environment's
    /// variant, as the runtime chooses it.
    fn select(&self) -> SelectArgs {
        SelectArgs {
            variants: Vec::new(),
            // `--static` looks at every cached variant: no torch to ask.
            all_variants: self.static_only,
            runtime: self.runtime.clone(),
            repo: self.repo,
            env: EnvArgs::default(),
            targets: super::args::TargetArgs::default(),
        }
    }
}

/// Kernels that did not import, or are not in the cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} checked: {what}", plural(*total, "kernel"))]
#[diagnostic(code(kernels::check::failed))]
struct CheckFailed {
    total: usize,
    what: String,
    #[help]
    help: String,
}

/// `kernels check` imports the kernels with the project's own interpreter and
/// torch, so it has none of the flags that name another environment.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{reason}")]
#[diagnostic(code(kernels::check::no_torch), help("{help}"))]
struct CheckNeedsTorch {
    reason: String,
    help: String,
}

/// The variant detection's "no interpreter" or "no torch" error as `check`
/// can be helped: run it where torch is, or check the files for another
/// environment with `kernels verify` and its environment flags. Other errors
/// are returned as they are.
fn needs_torch(report: miette::Report, project_dir: &std::path::Path) -> miette::Report {
    use crate::variant::VariantError;
    if !matches!(
        report.downcast_ref::<VariantError>(),
        Some(VariantError::NoTorch { .. } | VariantError::PythonFailed { .. })
    ) {
        return report;
    }
    CheckNeedsTorch {
        reason: report.to_string(),
        help: format!(
            "`kernels check` imports the kernels with the project's Python and torch, so it runs where they are installed: install torch in the project's environment (or activate the one that has it); to check the cached files for another environment without torch, name it to `kernels verify`, e.g. `kernels verify {} --torch-version 2.10 --cuda-version 12.8` (also `--rocm-version`, `--xpu-version`, `--metal`, `--cpu`)",
            shell_path(project_dir)
        ),
    }
    .into()
}

/// `kernels check` as the command line runs it: the offline stale-lock gate
/// (as `kernels verify`), then [`run`]; with `--format json`, a failed gate
/// still prints one document.
pub fn run_checked(
    mut args: CheckArgs,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    // `KERNELS_FROZEN` counts as `--frozen` from here on.
    args.lock_mode.frozen = global.frozen;
    let json = args.format == super::args::OutputFormat::Json;
    super::project::stale::ensure_current_offline(
        "check",
        &args.project.project_dir,
        super::project::stale::LockTarget {
            runtime: args.runtime.version(),
            repo_type: args.repo.repo_type.map(Into::into),
        },
        settings,
        global,
        printer,
        |report| {
            if json {
                print_failure(settings, printer, report);
            }
        },
    )?;
    run(args, settings, printer)
}

/// Locates every locked kernel in the cache (verified as `kernels verify`
/// does), imports the ready ones in one run of the project's interpreter and
/// reports each. Exit 0 when every kernel imported, 1 otherwise.
pub fn run(args: CheckArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let json = args.format == super::args::OutputFormat::Json;
    let printer = &printer.quiet_if(json);
    let project_dir = &args.project.project_dir;
    settings.note_runtime_overrides(printer);
    let python = ProjectPython::for_project(project_dir, super::settings::virtual_env().as_deref());
    let frozen = args.lock_mode.frozen;
    let read = read_lock(project_dir, &args.select(), &python, printer, frozen)
        .map_err(|report| needs_torch(report, project_dir))
        .inspect_err(|report| {
            if json {
                print_failure(settings, printer, report);
            }
        })?;
    let LockRead {
        kernels,
        selection,
        repo_type,
        format,
        ..
    } = read;
    if args.static_only {
        let images = super::project::fit::images(project_dir, args.manylinux.as_deref())?;
        let found = check_cached(&settings.cache(), repo_type, &kernels, &images);
        return print_static(project_dir, printer, &images, &found);
    }
    let located = locate(&settings.cache(), repo_type, &kernels, &selection);
    let Located { ready, not_ready } = located;
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let inputs = ImportInputs {
        python: python.path(),
        cache_dir: &settings.cache_dir,
        lock_path: &lock_path,
        lock_format: format,
        local_kernels: None,
    };
    let run = if ready.is_empty() {
        None
    } else {
        match import_kernels(&inputs, ready) {
            Ok(run) => Some(run),
            Err(err) => {
                let report = miette::Report::new(err);
                if json {
                    print_failure(settings, printer, &report);
                }
                return Err(report);
            }
        }
    };
    let local = local::import_local(settings, project_dir, &kernels, &selection, &inputs)
        .inspect_err(|report| {
            if json {
                print_failure(settings, printer, report);
            }
        })?;
    let report = Report {
        run: run.as_ref(),
        local: local.as_ref(),
        not_ready: &not_ready,
        total: kernels.len(),
    };
    if json {
        return Ok(print_json(settings, printer, &report));
    }
    print_text(project_dir, printer, &report)
}

/// The text report of `--static`: the images line, then one line per cached
/// variant (fits, or each refused file) and each warning; an error when a
/// variant is refused or a kernel is not cached.
fn print_static(
    project_dir: &Path,
    printer: &Printer,
    images: &[crate::abi::ImageTarget],
    found: &[StaticKernel],
) -> miette::Result<ExitCode> {
    printer.status(format_args!("{}", super::project::fit::images_line(images)));
    let (mut refused, mut missing) = (0, 0);
    for kernel in found {
        let label = format!("{}@{}", kernel.repo_id, kernel.commit.short());
        if kernel.variants.is_empty() {
            missing += 1;
            printer.data(format_args!("{label}: not checked: not in the cache"));
        }
        for variant in &kernel.variants {
            for warning in &variant.warnings {
                printer.status(format_args!("warning: {warning}"));
            }
            if variant.refusals.is_empty() {
                printer.data(format_args!(
                    "{label} {}: fits ({})",
                    variant.variant,
                    plural(variant.files, "file")
                ));
                continue;
            }
            refused += 1;
            for refusal in &variant.refusals {
                printer.data(format_args!(
                    "{label} {}: {}: {refusal}",
                    variant.variant,
                    refusal.rule()
                ));
            }
        }
    }
    if refused + missing == 0 {
        printer.status(format_args!(
            "Checked {} statically: every cached variant fits",
            plural(found.len(), "kernel")
        ));
        return Ok(ExitCode::SUCCESS);
    }
    let mut parts = Vec::new();
    if refused > 0 {
        parts.push(format!("{} refused", plural(refused, "variant")));
    }
    if missing > 0 {
        parts.push(format!("{missing} not in the cache"));
    }
    let download = format!("kernels download {}", shell_path(project_dir));
    Err(CheckFailed {
        total: found.len(),
        what: parts.join(", "),
        help: format!(
            "each refused file is named above with what would fit: ship on that image, or lock a version built for this one; download what is missing with `{download}`"
        ),
    }
    .into())
}

/// What one `kernels check` found.
struct Report<'a> {
    run: Option<&'a ImportRun>,
    /// The imports of the local builds, when any kernel has one.
    local: Option<&'a local::LocalCheck>,
    not_ready: &'a [NotReady],
    total: usize,
}

/// One kernel of a [`Report`]: imported (or tried), or not ready in the cache.
enum Entry<'a> {
    Import(&'a KernelImport),
    Missing(&'a NotReady),
}

impl Report<'_> {
    /// Every kernel, in lock order.
    fn entries(&self) -> Vec<Entry<'_>> {
        let mut entries: Vec<(usize, Entry<'_>)> = self
            .imports()
            .iter()
            .map(|k| (k.target.position, Entry::Import(k)))
            .chain(
                self.not_ready
                    .iter()
                    .map(|k| (k.position, Entry::Missing(k))),
            )
            .collect();
        entries.sort_by_key(|(position, _)| *position);
        entries.into_iter().map(|(_, entry)| entry).collect()
    }

    fn imports(&self) -> &[KernelImport] {
        self.run.map(|r| r.kernels.as_slice()).unwrap_or_default()
    }

    /// Kernels whose import raised (or killed the interpreter).
    fn failed(&self) -> usize {
        self.imports()
            .iter()
            .filter(|k| matches!(k.outcome, ImportOutcome::Failed { .. }))
            .count()
    }

    /// Kernels not tried because the interpreter died before them.
    fn not_run(&self) -> usize {
        self.imports()
            .iter()
            .filter(|k| matches!(k.outcome, ImportOutcome::NotRun))
            .count()
    }

    /// The installed runtime that cannot read the lock, if so.
    fn unreadable_by(&self) -> Option<&str> {
        self.run.and_then(ImportRun::runtime_cannot_read_lock)
    }

    /// Local builds that did not import (raised, or not tried).
    fn local_failed(&self) -> usize {
        self.local.map_or(0, |l| {
            l.run
                .kernels
                .iter()
                .filter(|k| !matches!(k.outcome, ImportOutcome::Loaded(_)))
                .count()
        })
    }

    fn ok(&self) -> bool {
        self.local_failed() == 0
            && self.not_ready.is_empty()
            && self.failed() == 0
            && self.not_run() == 0
            && self.unreadable_by().is_none()
    }
}

/// The mechanism in words, for the status line.
fn mechanism_line(run: &ImportRun) -> String {
    match (&run.mechanism, &run.runtime) {
        (Mechanism::GetKernel, Some(version)) => format!(
            "through kernels {version} (`kernels.get_kernel(repo_id, version=…)` with LOCAL_KERNELS set)"
        ),
        (Mechanism::LoadKernel, Some(version)) => {
            format!("through kernels {version} (`kernels.load_kernel(repo_id, lockfile=…)`)")
        }
        (_, Some(version)) => format!(
            "directly from the cache (the installed kernels {version} cannot read this lock's format)"
        ),
        (_, None) => {
            "directly from the cache (no kernels runtime is installed for this Python)".to_owned()
        }
    }
}

/// The text report: one block per kernel on stdout, the summary on stderr;
/// an error naming the failures and the fix when any kernel did not import.
fn print_text(
    project_dir: &Path,
    printer: &Printer,
    report: &Report<'_>,
) -> miette::Result<ExitCode> {
    if let Some(run) = report.run {
        printer.status(format_args!(
            "Imported with {} {}",
            shell_path(&run.python),
            mechanism_line(run)
        ));
    }
    for entry in report.entries() {
        match entry {
            Entry::Import(kernel) => print_import(printer, kernel),
            Entry::Missing(kernel) => {
                let label = format!("{}@{}", kernel.repo_id, kernel.commit.short());
                for problem in &kernel.problems {
                    printer.data(format_args!("{label}: not checked: {problem}"));
                }
            }
        }
    }
    if let Some(local) = report.local {
        print_local(printer, local);
    }
    if report.ok() {
        printer.status(format_args!(
            "Checked {}: every one imports",
            plural(report.total, "kernel")
        ));
        return Ok(ExitCode::SUCCESS);
    }
    Err(failure(project_dir, report).into())
}

/// The error of a check that did not pass: what went wrong, counted, and the fix.
fn failure(project_dir: &Path, report: &Report<'_>) -> CheckFailed {
    let (failed, missing, not_run) = (report.failed(), report.not_ready.len(), report.not_run());
    let download = format!("kernels download {}", shell_path(project_dir));
    let mut parts = Vec::new();
    if failed > 0 {
        parts.push(format!("{failed} failed to import"));
    }
    let local_failed = report.local_failed();
    if local_failed > 0 {
        parts.push(format!(
            "{} failed to import from its local build",
            plural(local_failed, "kernel")
        ));
    }
    if not_run > 0 {
        parts.push(format!(
            "{not_run} not tried (the interpreter exited before them)"
        ));
    }
    if missing > 0 {
        parts.push(format!("{missing} not in the cache, or not complete"));
    }
    if let Some(runtime) = report.unreadable_by() {
        parts.push(format!(
            "and the installed kernels {runtime} cannot read kernels.lock (its `load_kernel(repo_id, lockfile=…)` fails on this format)"
        ));
        if failed + not_run + missing == 0 {
            return CheckFailed {
                total: report.total,
                what: format!("every one imports directly, {}", parts.join(", ")),
                help: format!(
                    "lock for the installed runtime: `kernels lock --target-runtime {runtime}`, then `{download}`"
                ),
            };
        }
    }
    let help = if failed + not_run + local_failed == 0 {
        format!("download them first:\n\n    {download}")
    } else {
        let mut help = "the Python error of each failed import is above; fix the environment (a missing package, another torch build) or lock another version of the kernel (`kernels variants REPO --all-versions` lists them)".to_owned();
        if missing > 0 {
            help.push_str(&format!("; download the missing ones with `{download}`"));
        }
        help
    };
    CheckFailed {
        total: report.total,
        what: parts.join(", "),
        help,
    }
}

/// One kernel's block: `label: loaded VARIANT`, its path and ops; or the
/// Python error and traceback tail.
fn print_import(printer: &Printer, kernel: &KernelImport) {
    let target = &kernel.target;
    let label = format!("{}@{}", target.repo_id, target.commit.short());
    match &kernel.outcome {
        ImportOutcome::Loaded(loaded) => {
            printer.data(format_args!(
                "{label}: loaded {} (module {})",
                loaded.variant, loaded.module
            ));
            printer.data(format_args!("  path: {}", loaded.variant_dir.display()));
            let ops = &loaded.ops;
            let mut names = ops.names.join(", ");
            if ops.total > ops.names.len() {
                names.push_str(&format!(", and {} more", ops.total - ops.names.len()));
            }
            if names.is_empty() {
                names.push_str("none");
            }
            match &ops.namespace {
                Some(ns) => printer.data(format_args!("  ops (torch.ops.{ns}): {names}")),
                None => printer.data(format_args!("  functions: {names}")),
            }
            if loaded.variant != target.variant {
                printer.status(format_args!(
                    "warning: {label}: the runtime loaded `{}`, but `{}` ranks first for this environment among the cached variants",
                    loaded.variant, target.variant
                ));
            }
            print_warnings(printer, &label, &loaded.warnings);
        }
        ImportOutcome::Failed {
            error,
            traceback,
            warnings,
        } => {
            print_warnings(printer, &label, warnings);
            printer.data(format_args!(
                "{label}: failed to import `{}`",
                target.variant
            ));
            for line in error {
                printer.data(format_args!("  {line}"));
            }
            if !traceback.is_empty() {
                printer.data("  traceback (innermost last):");
                for line in traceback {
                    printer.data(format_args!("    {line}"));
                }
            }
        }
        ImportOutcome::NotRun => printer.data(format_args!(
            "{label}: not imported (the interpreter exited before it)"
        )),
    }
}

/// The local builds' imports: how they were imported, the `LOCAL_KERNELS`
/// value, then one block per kernel as for the locked ones.
fn print_local(printer: &Printer, local: &local::LocalCheck) {
    printer.status(format_args!(
        "Imported the local builds with {} {}",
        shell_path(&local.run.python),
        mechanism_line(&local.run)
    ));
    printer.data(format_args!(
        "Local builds (what get_kernel loads with LOCAL_KERNELS={}; load_kernel and get_locked_kernel load the locked commits above):",
        local.value
    ));
    for kernel in &local.run.kernels {
        print_import(printer, kernel);
    }
}

/// What Python warned while importing one kernel, on stderr.
fn print_warnings(printer: &Printer, label: &str, warnings: &[String]) {
    for warning in warnings {
        printer.status(format_args!("warning: {label}: {warning}"));
    }
}

/// The `--format json` document; exit 1 unless every kernel imported.
fn print_json(settings: &Settings, printer: &Printer, report: &Report<'_>) -> ExitCode {
    let kernels = report
        .entries()
        .into_iter()
        .map(|entry| match entry {
            Entry::Import(kernel) => import_doc(kernel),
            Entry::Missing(kernel) => missing_doc(kernel),
        })
        .collect();
    let ok = report.ok();
    printer.json(&CheckImportDoc {
        schema: CheckImportDoc::SCHEMA,
        command: "check",
        ok,
        python: report.run.map(|r| r.python.as_path()),
        runtime: report.run.and_then(|r| r.runtime.as_deref()),
        mechanism: report.run.map(|r| &r.mechanism),
        runtime_reads_lock: report.run.and_then(|r| {
            r.runtime
                .as_ref()
                .map(|_| r.runtime_cannot_read_lock().is_none())
        }),
        cache_dir: &settings.cache_dir,
        runtime_overrides: &settings.runtime_overrides,
        kernels,
        error: None,
        local: report.local.map(|l| super::json::LocalCheckDoc {
            local_kernels: &l.value,
            mechanism: &l.run.mechanism,
            sources: &l.sources,
            kernels: l.run.kernels.iter().map(import_doc).collect(),
        }),
    });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A kernel not ready in the cache as typed JSON.
fn missing_doc(kernel: &NotReady) -> CheckedKernelDoc<'_> {
    CheckedKernelDoc {
        repo_id: kernel.repo_id.to_string(),
        commit: &kernel.commit,
        status: "not_cached",
        loaded: false,
        variant: None,
        variant_path: None,
        module: None,
        ops: None,
        error: None,
        problems: kernel
            .problems
            .iter()
            .map(|p| ProblemDoc {
                problem: problem_kind(p),
                message: p.to_string(),
            })
            .collect(),
        warnings: &[],
    }
}

/// One imported (or attempted) kernel as typed JSON.
fn import_doc(kernel: &KernelImport) -> CheckedKernelDoc<'_> {
    let target = &kernel.target;
    let mut doc = CheckedKernelDoc {
        repo_id: target.repo_id.to_string(),
        commit: &target.commit,
        status: "not_run",
        loaded: false,
        variant: Some(target.variant.clone()),
        variant_path: Some(&target.variant_dir),
        module: None,
        ops: None,
        error: None,
        problems: Vec::new(),
        warnings: &[],
    };
    match &kernel.outcome {
        ImportOutcome::Loaded(loaded) => {
            doc.status = "loaded";
            doc.loaded = true;
            doc.variant = Some(loaded.variant.clone());
            doc.variant_path = Some(&loaded.variant_dir);
            doc.module = Some(&loaded.module);
            doc.ops = Some(OpsDoc {
                kind: &loaded.ops.kind,
                namespace: loaded.ops.namespace.as_deref(),
                names: &loaded.ops.names,
                total: loaded.ops.total,
            });
            doc.warnings = &loaded.warnings;
        }
        ImportOutcome::Failed {
            error,
            traceback,
            warnings,
        } => {
            doc.status = "failed";
            doc.warnings = warnings;
            doc.error = Some(ImportErrorDoc {
                message: error,
                traceback,
            });
        }
        ImportOutcome::NotRun => {}
    }
    doc
}

/// The `--format json` document of a check that could not start (the lock
/// stale or missing, torch not found, no interpreter).
fn print_failure(settings: &Settings, printer: &Printer, report: &miette::Report) {
    printer.json(&CheckImportDoc {
        schema: CheckImportDoc::SCHEMA,
        command: "check",
        ok: false,
        python: None,
        runtime: None,
        mechanism: None,
        runtime_reads_lock: None,
        cache_dir: &settings.cache_dir,
        runtime_overrides: &settings.runtime_overrides,
        kernels: Vec::new(),
        error: Some(ErrorDoc::of(report)),
        local: None,
    });
}
