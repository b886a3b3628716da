//! Printing the per-kernel variant explanation of `kernels download
//! --explain` and `kernels env` (text or JSON).

use std::path::Path;
use std::process::ExitCode;

use crate::cli::args::OutputFormat;
use crate::cli::json::{ExplainDoc, FailureDoc, TargetsDoc};
use crate::cli::printer::Printer;
use crate::install::explain::{FitRequest, KernelExplanation, NewerVersion, VersionRefs, explain};
use crate::install::variant_fit::{MetadataState, VariantFit};
use crate::install::{DownloadOptions, LockedKernel};
use crate::lock::format::LockFormat;
use crate::lock::manifest::Manifest;
use crate::lock::requirement::Requirement;
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

/// At most this many newer versions are printed per kernel in text (JSON has
/// every one looked up).
const NEWER_SHOWN: usize = 3;

/// The explanations of `kernels`, and the kernels whose variants could not be
/// listed (as failure objects).
pub struct Explained {
    /// One explanation per kernel that could be listed, in lock order.
    pub kernels: Vec<KernelExplanation>,
    /// One failure object per kernel that could not be.
    pub failed: Vec<FailureDoc>,
}

impl Explained {
    /// Whether every kernel was listed and has a chosen variant.
    pub fn all_chosen(&self) -> bool {
        self.failed.is_empty() && self.kernels.iter().all(|k| !k.chosen.is_empty())
    }
}

/// Which refs name the versions of each kernel of the project in
/// `project_dir`, whose lock is in `format`: `vN` branches for every entry of
/// a 0.17 lock (that runtime reads integer versions only); for a variant-hash
/// lock, what the `pyproject.toml` requirement selects (branches for an
/// integer, tags for a specifier, both for a revision or a kernel it does not
/// name).
fn version_refs(
    project_dir: &Path,
    format: LockFormat,
) -> impl Fn(&LockedKernel) -> VersionRefs + Sync {
    let kernel_locks = format == LockFormat::KernelLocks;
    let requirements: Vec<(RepoId, VersionRefs)> = Manifest::read(project_dir)
        .map(|m| {
            m.dependencies
                .into_iter()
                .map(|dep| {
                    let kind = match dep.requirement {
                        Requirement::Branch(_) => VersionRefs::Branches,
                        Requirement::Pep440(_) | Requirement::Semver(_) => VersionRefs::Tags,
                        Requirement::Revision(_) => VersionRefs::Any,
                    };
                    (dep.repo_id, kind)
                })
                .collect()
        })
        .unwrap_or_default();
    move |kernel: &LockedKernel| {
        if kernel_locks {
            return VersionRefs::Branches;
        }
        requirements
            .iter()
            .find(|(repo_id, _)| *repo_id == kernel.repo_id)
            .map_or(VersionRefs::Any, |(_, kind)| *kind)
    }
}

/// What an explanation is made from: the Hub, the cache, the project and its
/// locked kernels with the download options of the run.
pub struct ExplainRun<'a> {
    /// The Hub client that lists each kernel.
    pub client: &'a HubClient,
    /// The cache (listings at locked commits may be there).
    pub cache: &'a HubCache,
    /// The project directory (its `pyproject.toml` says which refs are versions).
    pub project_dir: &'a Path,
    /// The format of the project's lock.
    pub lock_format: LockFormat,
    /// The locked kernels, in lock order.
    pub kernels: &'a [LockedKernel],
    /// The variant selection and repository type.
    pub options: &'a DownloadOptions,
    /// Where the explanation and failures are printed.
    pub printer: &'a Printer,
    /// The fit of each variant, when shown.
    pub fit: Option<FitRequest<'a>>,
    /// The kernels with a local build, shown after the verdicts (`None` for
    /// `env`, which shows them itself).
    pub local: Option<&'a crate::cli::json::LocalSourcesDoc>,
}

impl ExplainRun<'_> {
    /// The targets of the fit (not asked without one).
    fn targets(&self) -> crate::variant::Targets {
        self.fit
            .map(|f| f.policy.targets.clone())
            .unwrap_or_else(crate::variant::Targets::not_asked)
    }
}

/// Explains every kernel of `run`; a kernel that cannot be listed is reported
/// on stderr and in [`Explained::failed`].
pub fn collect(run: &ExplainRun<'_>) -> miette::Result<Explained> {
    let kinds = version_refs(run.project_dir, run.lock_format);
    let (client, cache, options) = (run.client, run.cache, run.options);
    let results = crate::cli::project::client::runtime()?.block_on(explain(
        client,
        cache,
        run.kernels,
        options,
        &kinds,
        run.fit,
    ));
    let mut explained = Explained {
        kernels: Vec::new(),
        failed: Vec::new(),
    };
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(kernel) => explained.kernels.push(kernel),
            Err((kernel, error)) => {
                explained.failed.push(FailureDoc::new(
                    &kernel.repo_id,
                    Some(kernel.commit.to_string()),
                    &error,
                ));
                failures.push((
                    crate::install::plan::label(&kernel.repo_id, &kernel.commit),
                    error,
                ));
            }
        }
    }
    crate::cli::project::causes::print_kernel_failures(
        run.printer,
        failures,
        client.endpoint(),
        "not listed",
    );
    Ok(explained)
}

/// The requirement that selects `newer`, as `kernels add` takes it: `N` for
/// branch `vN`, `">=X.Y.Z"` for tag `vX.Y.Z`.
fn requirement_for(newer: &NewerVersion) -> String {
    let version = newer.name.trim_start_matches('v');
    match newer.kind {
        "branch" => version.to_owned(),
        _ => format!("\">={version}\""),
    }
}

/// Prints one kernel: the chosen variants, a line per rejected variant with
/// its reason, then the newer versions that have a build for the
/// environment (and, when none suits now, the command that moves to the
/// newest of them).
/// `rejected` caps the rejected-variant lines (`kernels env` shows a few,
/// `--explain` every one).
pub fn print_text(printer: &Printer, kernel: &KernelExplanation, rejected: Option<usize>) {
    let chosen = if kernel.chosen.is_empty() {
        "no variant suits this environment".to_owned()
    } else {
        kernel.chosen.join(", ")
    };
    printer.data(format_args!(
        "{}@{}: {chosen}",
        kernel.repo_id,
        kernel.commit.short()
    ));
    let others: Vec<_> = kernel.variants.iter().filter(|v| !v.chosen).collect();
    let shown = rejected.unwrap_or(others.len()).min(others.len());
    for v in &others[..shown] {
        printer.data(format_args!(
            "  - {}: {}",
            v.name,
            v.reason.as_deref().unwrap_or_default()
        ));
    }
    if shown < others.len() {
        printer.data(format_args!(
            "  - … and {} more (`kernels download --explain` gives every reason)",
            others.len() - shown
        ));
    }
    if let Some(fit) = &kernel.fit {
        print_fit(printer, fit);
    }
    print_newer(printer, kernel);
}

/// The fit lines of one kernel, for its chosen variants only: a variant not
/// chosen has its one verdict (why not) above, and a `fits` under it would
/// contradict that. Nothing is printed when no target is known and every
/// chosen variant fits without warnings or has no `metadata.json` (older
/// builds); when no chosen variant's `metadata.json` is in the cache, one
/// line says so instead of one per variant.
fn print_fit(printer: &Printer, fit: &[VariantFit]) {
    let plain = |f: &VariantFit| {
        f.targets.is_empty()
            && f.abi.is_none()
            && (f.metadata == MetadataState::None
                || (f.fits == Some(true) && f.warnings.is_empty()))
    };
    let chosen: Vec<&VariantFit> = fit.iter().filter(|f| f.chosen).collect();
    if chosen.iter().all(|f| plain(f)) {
        return;
    }
    if chosen
        .iter()
        .all(|f| f.metadata == MetadataState::NotInCache)
    {
        printer.data(format_args!(
            "  fit: not checked (metadata.json not in the cache; `kernels download` places it)"
        ));
        return;
    }
    printer.data(format_args!("  fit:"));
    for f in chosen {
        printer.data(format_args!(
            "    {} (chosen): {}",
            f.variant,
            fit_verdict(f)
        ));
    }
}

/// `fits`, `fits cuda:9.0; refused: … (archs)`, `metadata not in cache`, ….
fn fit_verdict(fit: &VariantFit) -> String {
    let mut text = match (fit.metadata, fit.fits) {
        (MetadataState::NotInCache, _) => "metadata not in cache (not checked)".to_owned(),
        (MetadataState::None, _) => "no metadata.json (not checked)".to_owned(),
        (MetadataState::Invalid, _) => format!(
            "not checked: {}",
            fit.error
                .as_deref()
                .unwrap_or("metadata.json cannot be read")
        ),
        (MetadataState::Read, Some(true)) | (MetadataState::Read, None) => "fits".to_owned(),
        (MetadataState::Read, Some(false)) => {
            let fitting: Vec<&str> = fit
                .targets
                .iter()
                .filter(|t| t.fits)
                .map(|t| t.name.as_str())
                .collect();
            let refused: Vec<String> = fit
                .refusals
                .iter()
                .map(|r| format!("{} ({})", r.message, r.rule))
                .collect();
            let only_arch = fit.refusals.iter().all(|r| r.rule == "archs");
            match fitting.is_empty() || !only_arch {
                true => format!("refused: {}", refused.join("; ")),
                false => format!(
                    "fits {}; refused: {}",
                    fitting.join(", "),
                    refused.join("; ")
                ),
            }
        }
    };
    for warning in &fit.warnings {
        text.push_str(&format!("; warning: {warning}"));
    }
    if let Some(abi) = &fit.abi {
        text.push_str(&abi_verdict(fit, abi));
    }
    text
}

/// The ABI part of a variant's verdict: not checked (files not cached),
/// the refused files when its metadata did not already list them, or that
/// it fits the images; then the claimed-ABI warnings.
fn abi_verdict(fit: &VariantFit, abi: &crate::install::variant_fit::AbiFit) -> String {
    let images = abi.images.join(", ");
    let refused: Vec<String> = fit
        .refusals
        .iter()
        .filter(|r| r.rule == "abi")
        .map(|r| format!("{} (abi)", r.message))
        .collect();
    let mut text = if !abi.checked {
        format!("; ABI for {images}: not checked (compiled files not in the cache)")
    } else if refused.is_empty() {
        format!("; ABI fits {images}")
    } else if fit.metadata == MetadataState::Read {
        String::new()
    } else {
        format!("; refused: {}", refused.join("; "))
    };
    for warning in &abi.warnings {
        text.push_str(&format!("; warning: {warning}"));
    }
    text
}

/// The newer versions of `kernel` with a build for the environment.
fn print_newer(printer: &Printer, kernel: &KernelExplanation) {
    match (&kernel.newer, &kernel.newer_error) {
        (Some(newer), _) if !newer.is_empty() => {
            printer.data(format_args!(
                "  newer versions with a build for this environment:"
            ));
            for n in newer.iter().take(NEWER_SHOWN) {
                printer.data(format_args!(
                    "    {} ({}): {}",
                    n.name,
                    n.commit.short(),
                    n.variants.join(", ")
                ));
            }
            if newer.len() > NEWER_SHOWN {
                printer.data(format_args!(
                    "    … and {} more (`--format json` lists them)",
                    newer.len() - NEWER_SHOWN
                ));
            }
            if kernel.chosen.is_empty() {
                printer.data(format_args!(
                    "  hint: to move to {}, require it and lock again:\n\n      kernels add {} {}\n",
                    newer[0].name,
                    kernel.repo_id,
                    requirement_for(&newer[0])
                ));
            }
        }
        (Some(_), _) if kernel.chosen.is_empty() => {
            printer.data(format_args!(
                "  no newer version has a build for this environment either"
            ));
        }
        (None, Some(err)) => printer.data(format_args!(
            "  newer versions could not be looked up: {err}"
        )),
        (None, None) if kernel.chosen.is_empty() => {
            printer.data(format_args!(
                "  newer versions were not looked up (offline)"
            ));
        }
        _ => {}
    }
}

/// `kernels download --explain` ([`print`]) with the fit of every variant
/// for the download's own policy (`run.options.fit`: the same targets,
/// runtime and modules the download checks), fetching the metadata the
/// cache lacks; `run.fit` is replaced.
pub fn print_download(run: &ExplainRun<'_>, format: OutputFormat) -> miette::Result<ExitCode> {
    let fit = Some(FitRequest {
        policy: &run.options.fit,
        fetch: true,
    });
    print(&ExplainRun { fit, ..*run }, format)
}

/// `kernels download --explain`: per kernel the chosen variant, then every
/// other with its reason and the newer versions that would suit. Exit 1 when
/// a kernel could not be listed or has no variant for the environment.
pub fn print(run: &ExplainRun<'_>, format: OutputFormat) -> miette::Result<ExitCode> {
    let explained = collect(run)?;
    match format {
        OutputFormat::Json => {
            let environment = match &run.options.selection {
                crate::variant::VariantSelection::Detected { env, .. } => Some(env.describe()),
                _ => None,
            };
            run.printer.json(&ExplainDoc {
                schema: ExplainDoc::SCHEMA,
                command: "download --explain",
                environment,
                targets: TargetsDoc::new(&run.targets()),
                kernels: &explained.kernels,
                failed: &explained.failed,
                local_sources: run.local,
            });
        }
        OutputFormat::Text => {
            if run.fit.is_some() {
                run.printer
                    .data(format_args!("Target GPUs: {}", run.targets()));
            }
            explained
                .kernels
                .iter()
                .for_each(|kernel| print_text(run.printer, kernel, None));
            if let Some(local) = run.local {
                super::local::print_text(run.printer, local);
            }
        }
    }
    Ok(if explained.all_chosen() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
