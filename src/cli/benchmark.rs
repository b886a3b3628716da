//! `kernels benchmark`: run the benchmark scripts of the locked kernels
//! ([`crate::benchmark`]) through the project's Python, offline, from the
//! cache, and print per kernel a table (ours against the reference
//! implementation of each `verify_*`), or one JSON document.

use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

mod local;

use super::args::{EnvArgs, ProjectArgs, RepoTypeArgs, SelectArgs, TargetRuntimeArgs};
use super::printer::Printer;
use super::progress::Progress;
use super::progress::plural;
use super::project::read::{read_lock, shell_path};
use crate::benchmark::candidate::{Pick, resolve};
use crate::benchmark::stats::{SpeedUp, Timing, speed_up};
use crate::benchmark::{
    BenchRun, DEFAULT_ITERATIONS, DEFAULT_WARMUP, KernelRun, Machine, Measured, Options, Outcome,
    Target, Variant, Workload, scripts_in,
};
use crate::check::{ImportTarget, Located, locate};
use crate::cli::settings::Settings;
use crate::install::extras::fetch_extras;
use crate::install::{DownloadOptions, LockedKernel, download};
use crate::variant::ProjectPython;
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

/// `--time-limit`'s default: seconds one workload or one import may take.
const DEFAULT_TIME_LIMIT_S: u64 = 300;

/// `--budget`'s default: seconds of timing rounds per workload.
const DEFAULT_BUDGET_S: u64 = 10;

/// Arguments of `kernels benchmark`.
#[derive(Debug, clap::Args)]
pub struct BenchmarkArgs {
    /// Benchmark only these locked kernels (`owner/name`); default: every
    /// one. A value that starts with `.` or `/`, ends with `/`, or has
    /// more than one `/` is a local build instead (a kernel-builder output,
    /// its `build/`, or one variant directory; write `./dir` for a
    /// relative path): its `benchmarks/` run against the variant the
    /// runtime would load here, without a lock, offline.
    #[arg(id = "repos", value_name = "REPO|PATH", value_parser = parse_subject)]
    pub names: Vec<Named>,

    /// The repositories of `names` (filled by [`run_checked`]).
    #[arg(skip)]
    pub repos: Vec<RepoId>,

    /// Timed calls per workload.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_ITERATIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub iterations: usize,

    /// Untimed calls before timing, for the kernel and the reference each.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WARMUP)]
    pub warmup: usize,

    /// Longest one workload (setup, check, warm-up and timing) or one
    /// kernel's import may take, in seconds; the interpreter running it is
    /// ended and the others go on.
    #[arg(long, value_name = "S", default_value_t = DEFAULT_TIME_LIMIT_S,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub time_limit: u64,

    /// Seconds a workload's timing may go on to decide its speed-ups: rounds
    /// of `--iterations` interleaved calls are repeated until the 95%
    /// interval of each speed-up excludes 1 or lies within ±5%, or this
    /// budget has passed (at most half of `--time-limit`; 0: one round).
    #[arg(long, value_name = "S", default_value_t = DEFAULT_BUDGET_S)]
    pub budget: u64,

    /// Benchmark version N (branch `vN`) of the one REPO named instead of the
    /// locked one (it need not be locked); its variant and benchmarks are
    /// downloaded first.
    #[arg(long, value_name = "N", conflicts_with_all = ["revision", "against"], requires = "repos")]
    pub version: Option<u64>,

    /// Like `--version`, for a branch, tag or full commit id.
    #[arg(long, value_name = "R", conflicts_with = "against", requires = "repos")]
    pub revision: Option<String>,

    /// Also time another version of each kernel with the same workloads,
    /// alternating call by call in one run, and print the ratio with its
    /// interval: branch `vN`, or without N the newest compatible version (as
    /// `kernels outdated` shows it), else the newest. It is downloaded first.
    /// A value containing `/` or starting with `.` is a local build instead
    /// (a kernel-builder output, its `build/`, or one variant directory): the
    /// locked version timed against it, offline.
    #[arg(long, value_name = "N|PATH", num_args = 0..=1, value_parser = parse_against)]
    pub against: Option<Option<Against>>,

    /// `--target-runtime`: which runtime's ranking picks the variant among
    /// the cached ones and which cache folders are looked in.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Output format (on stdout): tables, or one JSON document.
    #[arg(long, value_enum, default_value_t = super::args::OutputFormat::Text)]
    pub format: super::args::OutputFormat,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::args::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,
}

/// What `--against` names: a version, or a local build (told by its form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    /// Branch `vN`.
    Version(u64),
    /// A local build's directory.
    Path(std::path::PathBuf),
}

/// A positional value of `kernels benchmark`: a repository or a local
/// build, told by its form ([`parse_subject`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// `owner/name`.
    Repo(RepoId),
    /// A local build's directory.
    Path(std::path::PathBuf),
}

/// A positional value: a path when it starts with `.` or `/`, ends
/// with `/`, or has more than one `/`; else a repository id.
fn parse_subject(value: &str) -> Result<Named, String> {
    let is_path =
        value.starts_with(['.', '/']) || value.ends_with('/') || value.matches('/').count() > 1;
    if is_path {
        return Ok(Named::Path(value.into()));
    }
    value.parse::<RepoId>().map(Named::Repo).map_err(|err| {
        format!("{err} (a local build's path starts with `./` or `/`: write `./{value}`)")
    })
}

/// `--against`'s value: a path when it contains `/` or starts with `.`,
/// else a version number.
fn parse_against(value: &str) -> Result<Against, String> {
    if value.contains('/') || value.starts_with('.') {
        return Ok(Against::Path(value.into()));
    }
    value.parse::<u64>().map(Against::Version).map_err(|_| {
        format!(
            "`{value}` is neither a version number nor a path (a path contains `/` or starts with `.`: write `./{value}`)"
        )
    })
}

/// The workloads that did not pass.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{what}")]
#[diagnostic(code(kernels::benchmark::failed))]
struct BenchmarkFailed {
    what: String,
    #[help]
    help: String,
}

/// The benchmarks run in the project's Python and time the variant its
/// torch loads, so `kernels benchmark` cannot name the environment as
/// `download` can: torch not importable is its own error.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "kernels benchmark runs the kernels' benchmarks in the project's Python, which cannot import torch: {reason}"
)]
#[diagnostic(
    code(kernels::benchmark::no_torch),
    help(
        "install torch in the project's environment (or activate the one that has it); `kernels download --with-benchmarks --torch-version … --cuda-version …` can prefetch for another machine, but the benchmarks run only where torch and the kernel's device are"
    )
)]
struct NeedsTorch {
    reason: String,
}

/// [`NeedsTorch`] for the variant detection's "torch is not importable";
/// any other error as it is.
fn needs_torch(report: miette::Report) -> miette::Report {
    let no_torch = report
        .code()
        .is_some_and(|code| code.to_string() == "kernels::variant::no_torch");
    if no_torch {
        NeedsTorch {
            reason: report.to_string(),
        }
        .into()
    } else {
        report
    }
}

/// A named kernel that the lock does not pin.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{repo_id} is not in kernels.lock")]
#[diagnostic(
    code(kernels::benchmark::not_locked),
    help(
        "`kernels benchmark REPO` runs the benchmarks of a locked kernel: add it first (`kernels add {repo_id}`), or name a version of it (`--version N`, `--revision R`)"
    )
)]
struct NotLocked {
    repo_id: RepoId,
}

/// `kernels benchmark` as the command line runs it: the offline stale-lock
/// gate (as `kernels check`), then [`run`].
pub fn run_checked(
    mut args: BenchmarkArgs,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    args.lock_mode.frozen = global.frozen;
    let mut project = ProjectArgs::default();
    project.resolve(global)?;
    let mut paths = Vec::new();
    for named in std::mem::take(&mut args.names) {
        match named {
            Named::Repo(repo_id) => args.repos.push(repo_id),
            Named::Path(path) => paths.push(path),
        }
    }
    if let Some(path) = local::alone(&args, &paths)? {
        return local::run(&args, path, &project, settings, printer);
    }
    super::project::stale::ensure_current_offline(
        "benchmark",
        &project.project_dir,
        super::project::stale::LockTarget {
            runtime: args.runtime.version(),
            repo_type: args.repo.repo_type.map(Into::into),
        },
        settings,
        global,
        printer,
        |_| {},
    )?;
    run(args, &project, settings, printer)
}

/// `kernels outdated --benchmark`: the outdated kernels `repos` of the
/// project, each timed against the version it could move to (`--against`
/// without N), with `kernels benchmark`'s defaults. Exit codes as
/// [`run_checked`].
pub(super) fn run_against(
    repos: Vec<RepoId>,
    project: &ProjectArgs,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let args = BenchmarkArgs {
        names: Vec::new(),
        repos,
        iterations: DEFAULT_ITERATIONS,
        warmup: DEFAULT_WARMUP,
        time_limit: DEFAULT_TIME_LIMIT_S,
        budget: DEFAULT_BUDGET_S,
        version: None,
        revision: None,
        against: Some(None),
        runtime: TargetRuntimeArgs::default(),
        repo: RepoTypeArgs::default(),
        format: super::args::OutputFormat::Text,
        lock_mode: super::args::LockModeArgs {
            frozen: global.frozen,
            ..Default::default()
        },
        cache: super::args::CacheArgs::default(),
    };
    run(args, project, settings, printer)
}

/// Locates the kernels in the cache (fetching the other versions asked for
/// first), runs the benchmarks of those that have some and reports them.
/// Exit 0 when every workload ran and matched its reference; 1 otherwise.
fn run(
    args: BenchmarkArgs,
    project: &ProjectArgs,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let json = args.format == super::args::OutputFormat::Json;
    let printer = &printer.quiet_if(json);
    let project_dir = &project.project_dir;
    let python = ProjectPython::for_project(project_dir, super::settings::virtual_env().as_deref());
    let select = SelectArgs {
        variants: Vec::new(),
        all_variants: false,
        runtime: args.runtime.clone(),
        repo: args.repo,
        env: EnvArgs::default(),
        targets: super::args::TargetArgs::default(),
    };
    let read = read_lock(
        project_dir,
        &select,
        &python,
        printer,
        args.lock_mode.frozen,
    )
    .map_err(needs_torch)?;
    // A version outside the lock is downloaded under the project's trust settings.
    let trust = super::project::read::project_trust(project_dir, &Default::default())?;
    let (locked, _, options) = read.into_options(Some(trust.into()));
    let versions = Versions::choose(&args, project_dir, &locked, &options, settings, printer)?;
    let (entries, not_ready) = versions.locate(settings, &options);
    let hint = format!(
        "`kernels download --with-benchmarks {}` places missing kernels and scripts",
        shell_path(project_dir)
    );
    finish(&args, &entries, not_ready, &python, settings, printer)?.exit(&hint)
}

/// Runs the benchmarks of `entries` and prints the report (tables, or one
/// JSON document with `--format json`); the report, for its exit code.
fn finish<'a>(
    args: &BenchmarkArgs,
    entries: &'a [Entry],
    not_ready: Vec<String>,
    python: &'a ProjectPython,
    settings: &'a Settings,
    printer: &Printer,
) -> miette::Result<Finished> {
    let options = Options {
        python: python.path(),
        cache_dir: &settings.cache_dir,
        iterations: args.iterations,
        warmup: args.warmup,
        time_limit: Duration::from_secs(args.time_limit),
        budget: Duration::from_secs(args.budget).min(Duration::from_secs(args.time_limit) / 2),
    };
    let targets: Vec<Target> = entries.iter().filter_map(Entry::target).collect();
    let run = if targets.is_empty() {
        None
    } else {
        Some(crate::benchmark::run(&options, &targets)?)
    };
    let report = Report {
        entries,
        run: run.as_ref(),
        not_ready,
        options: &options,
    };
    if args.format == super::args::OutputFormat::Json {
        printer.json(&report.doc());
    } else {
        report.print(printer);
    }
    Ok(Finished {
        tally: report.tally(),
        not_ready: report.not_ready,
    })
}

/// The kernels to benchmark and the candidates to time beside them.
struct Versions {
    /// Locked kernels (those named, or all), or the one version asked for.
    kernels: Vec<LockedKernel>,
    /// `--against`: the other version of each kernel that has one.
    candidates: Vec<LockedKernel>,
    /// The label of each candidate (`v2 (abcdef1)`).
    labels: Vec<String>,
    /// `--against PATH`: the local build timed beside each kernel, with its
    /// label.
    local: Vec<(RepoId, String, crate::local::LocalVariant)>,
}

impl Versions {
    /// Each kernel located in the cache (as `kernels check` does) with its
    /// scripts and located candidate; and `owner/name@commit` of every
    /// kernel or candidate not complete there.
    fn locate(&self, settings: &Settings, options: &DownloadOptions) -> (Vec<Entry>, Vec<String>) {
        let cache = settings.cache();
        let (repo_type, selection) = (options.repo_type, &options.selection);
        let Located { ready, not_ready } = locate(&cache, repo_type, &self.kernels, selection);
        let candidates = locate(&cache, repo_type, &self.candidates, selection);
        let entries = ready
            .into_iter()
            .map(|target| {
                let snapshot = cache
                    .repo(&target.repo_id, repo_type)
                    .snapshot_dir(target.commit.as_str());
                let local = self.local.iter().find(|(r, _, _)| *r == target.repo_id);
                let local = local.map(|(repo_id, label, variant)| {
                    let at = ImportTarget::local(
                        target.position,
                        repo_id.clone(),
                        target.commit.clone(),
                        variant,
                    );
                    (label.clone(), at)
                });
                let candidate_local = local.is_some();
                let candidate = local.or_else(|| {
                    self.candidate_of(&target.repo_id).and_then(|(label, k)| {
                        let at = candidates
                            .ready
                            .iter()
                            .find(|c| c.repo_id == k.repo_id && c.commit == k.commit)?;
                        Some((label.to_owned(), at.clone()))
                    })
                });
                Entry {
                    scripts: scripts_in(&snapshot),
                    subject: Subject::Locked(target),
                    candidate,
                    candidate_local,
                }
            })
            .collect();
        let mut missing: Vec<String> = not_ready
            .iter()
            .chain(&candidates.not_ready)
            .map(|k| format!("{}@{}", k.repo_id, k.commit.short()))
            .collect();
        missing.dedup();
        (entries, missing)
    }

    /// The candidate of `repo_id` and its label, if any.
    fn candidate_of(&self, repo_id: &RepoId) -> Option<(&str, &LockedKernel)> {
        self.labels
            .iter()
            .zip(&self.candidates)
            .find(|(_, k)| &k.repo_id == repo_id)
            .map(|(label, k)| (label.as_str(), k))
    }

    /// The kernels per the arguments; every version not locked is resolved
    /// on the Hub and downloaded (variant and benchmarks) first.
    fn choose(
        args: &BenchmarkArgs,
        project_dir: &std::path::Path,
        locked: &[LockedKernel],
        options: &DownloadOptions,
        settings: &Settings,
        printer: &Printer,
    ) -> miette::Result<Versions> {
        let outside = match (&args.version, &args.revision) {
            (Some(n), _) => Some(Pick::Version(*n)),
            (None, Some(r)) => Some(Pick::Revision(r.clone())),
            (None, None) => None,
        };
        if outside.is_none()
            && let Some(repo_id) = args
                .repos
                .iter()
                .find(|r| !locked.iter().any(|k| &k.repo_id == *r))
        {
            return Err(NotLocked {
                repo_id: repo_id.clone(),
            }
            .into());
        }
        if let Some(Some(Against::Path(dir))) = &args.against {
            return Versions::local(args, locked, options, dir);
        }
        if outside.is_none() && args.against.is_none() {
            let kernels: Vec<LockedKernel> = locked
                .iter()
                .filter(|k| args.repos.is_empty() || args.repos.contains(&k.repo_id))
                .cloned()
                .collect();
            let local = path_sources(project_dir, &kernels, options)?;
            return Ok(Versions {
                kernels,
                candidates: Vec::new(),
                labels: Vec::new(),
                local,
            });
        }
        let client = super::project::client::client_showing_retries(
            settings,
            printer,
            printer.lines_mode(),
        )?;
        let fetch = Fetch {
            client: &client,
            options,
            settings,
            printer,
        };
        if let Some(pick) = outside {
            let [repo_id] = args.repos.as_slice() else {
                return Err(miette::miette!(
                    code = "kernels::benchmark::one_repo",
                    help = "name one repository: `kernels benchmark REPO --version N`",
                    "--version and --revision benchmark one kernel, and {} were named",
                    args.repos.len()
                ));
            };
            let (_, kernel) = fetch.version(repo_id, &pick, None)?;
            return Ok(Versions {
                kernels: vec![kernel],
                candidates: Vec::new(),
                labels: Vec::new(),
                local: Vec::new(),
            });
        }
        Versions::against(args, project_dir, locked, &fetch)
    }

    /// `--against PATH`: the one kernel named (or the lock's only one)
    /// timed against the variant of the local build the runtime would load
    /// for this environment.
    fn local(
        args: &BenchmarkArgs,
        locked: &[LockedKernel],
        options: &DownloadOptions,
        dir: &std::path::Path,
    ) -> miette::Result<Versions> {
        let chosen: Vec<&LockedKernel> = locked
            .iter()
            .filter(|k| args.repos.is_empty() || args.repos.contains(&k.repo_id))
            .collect();
        let [kernel] = chosen.as_slice() else {
            return Err(miette::miette!(
                code = "kernels::benchmark::one_repo",
                help = "name the kernel the build is of: `kernels benchmark REPO --against PATH`",
                "--against {} is one local build, and {} are selected",
                dir.display(),
                super::progress::plural(chosen.len(), "kernel")
            ));
        };
        let source = format!("--against {}", dir.display());
        let build = crate::local::LocalBuild::open(dir, &source)?;
        let variant = match &options.selection {
            crate::variant::VariantSelection::Detected { env, rules } => build.choose(env, *rules),
            _ => build.variants().into_iter().next(),
        };
        let Some(variant) = variant else {
            return Err(miette::miette!(
                code = "kernels::benchmark::no_local_variant",
                help = "build the kernel for this environment (kernel-builder writes `build/<variant>/`)",
                "{source}: {} holds no variant for this environment",
                dir.display()
            ));
        };
        let label = format!("local build {}", dir.display());
        Ok(Versions {
            kernels: vec![(*kernel).clone()],
            candidates: Vec::new(),
            labels: Vec::new(),
            local: vec![(kernel.repo_id.clone(), label, variant)],
        })
    }

    /// `--against`: each kernel (those named, or all) with its candidate,
    /// resolved on the Hub and downloaded.
    fn against(
        args: &BenchmarkArgs,
        project_dir: &std::path::Path,
        locked: &[LockedKernel],
        fetch: &Fetch<'_>,
    ) -> miette::Result<Versions> {
        let manifest = crate::lock::manifest::Manifest::read(project_dir)?;
        let mut versions = Versions {
            kernels: Vec::new(),
            candidates: Vec::new(),
            labels: Vec::new(),
            local: Vec::new(),
        };
        for kernel in locked
            .iter()
            .filter(|k| args.repos.is_empty() || args.repos.contains(&k.repo_id))
        {
            let requirement = manifest
                .dependencies
                .iter()
                .find(|d| d.repo_id == kernel.repo_id)
                .map(|d| d.requirement.clone());
            let pick = match (&args.against, requirement) {
                (Some(Some(Against::Version(n))), _) => Pick::Version(*n),
                (_, Some(requirement)) => Pick::Upgrade(requirement),
                (_, None) => Pick::Upgrade(crate::lock::requirement::Requirement::Revision(
                    "main".to_owned(),
                )),
            };
            let (label, candidate) = fetch.version(&kernel.repo_id, &pick, Some(&kernel.commit))?;
            versions.kernels.push(kernel.clone());
            versions.candidates.push(candidate);
            versions.labels.push(label);
        }
        Ok(versions)
    }
}

/// The `pyproject.toml` path sources of `kernels`, each with the variant of
/// its local build the runtime would load here: timed beside the locked
/// version as `--against PATH` would time it.
///
/// # Errors
/// A path that does not exist or holds no variant for this environment.
fn path_sources(
    project_dir: &std::path::Path,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
) -> miette::Result<Vec<(RepoId, String, crate::local::LocalVariant)>> {
    let Ok(manifest) = crate::lock::manifest::Manifest::read(project_dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for dep in &manifest.dependencies {
        let Some(path) = &dep.path else { continue };
        if !kernels.iter().any(|k| k.repo_id == dep.repo_id) {
            continue;
        }
        let source = format!(
            "pyproject.toml entry `{}` path `{}`",
            dep.repo_id,
            path.display()
        );
        let build = crate::local::LocalBuild::open(&project_dir.join(path), &source)?;
        let variant = match &options.selection {
            crate::variant::VariantSelection::Detected { env, rules } => build.choose(env, *rules),
            _ => build.variants().into_iter().next(),
        };
        let Some(variant) = variant else {
            return Err(miette::miette!(
                code = "kernels::benchmark::no_local_variant",
                help = "build the kernel for this environment (kernel-builder writes `build/<variant>/`)",
                "{source}: no variant for this environment"
            ));
        };
        let label = format!("local build {} (pyproject.toml path)", path.display());
        out.push((dep.repo_id.clone(), label, variant));
    }
    Ok(out)
}

/// Resolving and downloading versions that are not locked.
struct Fetch<'a> {
    client: &'a HubClient,
    options: &'a DownloadOptions,
    settings: &'a Settings,
    printer: &'a Printer,
}

impl Fetch<'_> {
    /// Resolves `pick` for `repo_id` and downloads that version's variant and
    /// benchmarks; its label (`v2 (abcdef1)`) and lock entry.
    fn version(
        &self,
        repo_id: &RepoId,
        pick: &Pick,
        locked: Option<&CommitId>,
    ) -> miette::Result<(String, LockedKernel)> {
        let runtime = super::project::client::runtime()?;
        let repo_type = self.options.repo_type;
        let at = runtime.block_on(resolve(self.client, repo_type, repo_id, pick, locked))?;
        let kernel = LockedKernel {
            repo_id: repo_id.clone(),
            commit: at.commit.clone(),
            variants: None,
        };
        let cache = self.settings.cache();
        let progress = Progress::new(self.printer, self.printer.lines_mode());
        let summary = runtime.block_on(download(
            self.client,
            &cache,
            std::slice::from_ref(&kernel),
            self.options,
            &progress,
        ));
        if let Some(failure) = summary.failed.into_iter().next() {
            return Err(miette::Report::new(failure.error));
        }
        runtime.block_on(fetch_extras(self.client, &cache, repo_type, &kernel))?;
        self.printer
            .status(format_args!("Fetched {repo_id} {at} with its benchmarks"));
        Ok((at.to_string(), kernel))
    }
}

/// What an entry benchmarks: a locked kernel located in the cache, or a
/// local build (`kernels benchmark PATH`).
enum Subject {
    /// A locked (or fetched) kernel's variant in the cache.
    Locked(ImportTarget),
    /// A local build's variant.
    Local {
        /// The build's path as given.
        path: std::path::PathBuf,
        /// The variant the runtime would load here.
        variant: crate::local::LocalVariant,
        /// Its Python package.
        package: String,
    },
}

/// A kernel, its scripts and the candidate timed beside it.
struct Entry {
    subject: Subject,
    scripts: Vec<std::path::PathBuf>,
    /// `--against`: the candidate's label and where it is.
    candidate: Option<(String, ImportTarget)>,
    /// Whether the candidate is a local build (timed in an interpreter of
    /// its own).
    candidate_local: bool,
}

impl Entry {
    /// `owner/name@abcdef1`, or the local build's path.
    fn label(&self) -> String {
        match &self.subject {
            Subject::Locked(t) => format!("{}@{}", t.repo_id, t.commit.short()),
            Subject::Local { path, .. } => path.display().to_string(),
        }
    }

    /// The variant's name.
    fn variant(&self) -> &str {
        match &self.subject {
            Subject::Locked(t) => &t.variant,
            Subject::Local { variant, .. } => &variant.name,
        }
    }

    /// What the driver runs for this entry; `None` without scripts. A local
    /// build candidate runs in an interpreter of its own (its op namespace
    /// may be the locked build's: one process cannot load both).
    fn target(&self) -> Option<Target> {
        let variant = |t: &ImportTarget| Variant {
            variant_dir: t.variant_dir.clone(),
            package: t.package.clone(),
        };
        let kernel = match &self.subject {
            Subject::Locked(t) => variant(t),
            Subject::Local {
                variant, package, ..
            } => Variant {
                variant_dir: variant.dir.clone(),
                package: package.clone(),
            },
        };
        (!self.scripts.is_empty()).then(|| Target {
            kernel,
            scripts: self.scripts.clone(),
            candidate: self.candidate.as_ref().map(|(_, c)| variant(c)),
            candidate_apart: self.candidate_local,
        })
    }
}

/// What one `kernels benchmark` found.
struct Report<'a> {
    entries: &'a [Entry],
    run: Option<&'a BenchRun>,
    /// `owner/name@commit` of the kernels not complete in the cache.
    not_ready: Vec<String>,
    options: &'a Options<'a>,
}

impl Report<'_> {
    /// Each entry with its run (`None` without scripts), in lock order.
    fn kernels(&self) -> Vec<(&Entry, Option<&KernelRun>)> {
        let mut runs = self.run.map(|r| r.kernels.iter());
        self.entries
            .iter()
            .map(|entry| {
                let run = if entry.scripts.is_empty() {
                    None
                } else {
                    runs.as_mut().and_then(Iterator::next)
                };
                (entry, run)
            })
            .collect()
    }

    /// The workloads and kernels by outcome.
    fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        for (entry, run) in self.kernels() {
            let Some(run) = run else { continue };
            let label = entry.label();
            if run.load_error.is_some() || !run.script_errors.is_empty() {
                tally.broken.push(label);
            }
            for workload in &run.workloads {
                let name = format!("{}.{}", workload.class, workload.method);
                match &workload.outcome {
                    Outcome::Timed(m) => match matches_of(m) {
                        Some(true) => tally.matched += 1,
                        Some(false) => tally.mismatched.push(name),
                        None => tally.unverified += 1,
                    },
                    _ => tally.failed.push(name),
                }
            }
        }
        tally
    }

    fn print(&self, printer: &Printer) {
        if let Some(run) = self.run {
            printer.status(format_args!(
                "Benchmarking with {} on {} (timing: {}, rounds of {} after {} warm-up, {})",
                shell_path(self.options.python),
                machine_line(&run.machine),
                run.timing,
                plural(self.options.iterations, "iteration"),
                self.options.warmup,
                budget_text(self.options.budget),
            ));
        }
        for (entry, run) in self.kernels() {
            print_kernel(printer, entry, run);
        }
        for label in &self.not_ready {
            printer.data(format_args!(
                "{label}: not benchmarked: not complete in the cache"
            ));
        }
        let tally = self.tally();
        let count = tally.matched + tally.unverified + tally.mismatched.len() + tally.failed.len();
        printer.status(format_args!(
            "Benchmarked {} of {}: {} match, {} mismatch, {} failed, {} without verify",
            plural(count, "workload"),
            plural(self.entries.len() + self.not_ready.len(), "kernel"),
            tally.matched,
            tally.mismatched.len(),
            tally.failed.len(),
            tally.unverified,
        ));
    }
}

/// What a run found, for the exit code.
struct Finished {
    tally: Tally,
    not_ready: Vec<String>,
}

impl Finished {
    /// Exit 0 when every workload ran and matched its reference; else the
    /// error naming what did not. `fetch_hint` is the command that places
    /// missing kernels and scripts.
    fn exit(&self, fetch_hint: &str) -> miette::Result<ExitCode> {
        let tally = &self.tally;
        let mut parts = Vec::new();
        let (mismatched, failed) = (&tally.mismatched, &tally.failed);
        if !mismatched.is_empty() {
            parts.push(format!(
                "{} not matching its verify_*: {}",
                plural(mismatched.len(), "workload"),
                mismatched.join(", ")
            ));
        }
        if !failed.is_empty() {
            parts.push(format!(
                "{} failed: {}",
                plural(failed.len(), "workload"),
                failed.join(", ")
            ));
        }
        if !tally.broken.is_empty() {
            parts.push(format!(
                "kernel or script errors in {}",
                tally.broken.join(", ")
            ));
        }
        if !self.not_ready.is_empty() {
            parts.push(format!(
                "not complete in the cache: {}",
                self.not_ready.join(", ")
            ));
        }
        if parts.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        Err(BenchmarkFailed {
            what: parts.join("; "),
            help: format!(
                "a mismatch means the kernel's output differs from its verify_* result by more than atol=1e-2 on this machine; the errors are above; {fetch_hint}"
            ),
        }
        .into())
    }
}

/// Workloads by outcome (`Class.method`) and kernels with import or script errors.
#[derive(Default)]
struct Tally {
    matched: usize,
    unverified: usize,
    mismatched: Vec<String>,
    failed: Vec<String>,
    broken: Vec<String>,
}

/// Whether every timed kernel matched (`None` without a `verify_*`).
fn matches_of(measured: &Measured) -> Option<bool> {
    measured.matches.as_ref().map(|m| m.iter().all(|ok| *ok))
}

/// `GPU (capability X, driver D), torch T, CUDA C` or `cpu, torch T`.
fn machine_line(machine: &Machine) -> String {
    let mut parts = Vec::new();
    match &machine.gpu {
        Some(gpu) => {
            let mut text = gpu.clone();
            if let Some(cap) = &machine.capability {
                text.push_str(&format!(" (capability {cap}"));
                if let Some(driver) = &machine.driver {
                    text.push_str(&format!(", driver {driver}"));
                }
                text.push(')');
            }
            parts.push(text);
        }
        None => parts.push(machine.device.clone()),
    }
    if let Some(torch) = &machine.torch {
        parts.push(format!("torch {torch}"));
    }
    if let Some(cuda) = &machine.cuda {
        parts.push(format!("CUDA {cuda}"));
    }
    parts.join(", ")
}

/// `1.23x (1.20-1.26)`.
fn speed_up_text(s: &SpeedUp) -> String {
    format!("{:.2}x ({:.2}-{:.2})", s.ratio, s.low, s.high)
}

/// One kernel's block: its label and variant, then the table, or one line.
fn print_kernel(printer: &Printer, entry: &Entry, run: Option<&KernelRun>) {
    let label = format!("{} ({})", entry.label(), entry.variant());
    let Some(run) = run else {
        printer.data(format_args!(
            "{label}: no benchmarks (no benchmarks/benchmark*.py in the cached snapshot; `kernels download --with-benchmarks` fetches them when the repository has some)"
        ));
        return;
    };
    printer.data(format_args!("{label}"));
    if let Some(error) = &run.load_error {
        printer.data(format_args!("  did not import: {}", error.join(" | ")));
    }
    for (script, error) in &run.script_errors {
        printer.data(format_args!("  {script}: {}", error.join(" | ")));
    }
    if run.workloads.is_empty() {
        return;
    }
    let rows: Vec<[String; COLUMNS]> = run.workloads.iter().map(row).collect();
    let header = [
        "method",
        "shape",
        "dtype",
        "ours ms",
        "± ms",
        "n",
        "reference ms",
        "speed-up",
        "verdict",
        "match",
    ]
    .map(str::to_owned);
    let mut widths = [0usize; COLUMNS];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for r in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        printer.data(format_args!("  {}", cells.join("  ").trim_end()));
    }
    if let Some((label, candidate)) = &entry.candidate {
        printer.data(format_args!(
            "  against {label} ({}): its speed over the locked version's, same run, interleaved",
            candidate.variant
        ));
    }
    for workload in &run.workloads {
        if let Some(detail) = detail(workload) {
            printer.data(format_args!(
                "  {}.{}: {detail}",
                workload.class, workload.method
            ));
        }
        if let Outcome::Timed(m) = &workload.outcome
            && let Some(peak) = m.peak.as_ref().and_then(peak_text)
        {
            printer.data(format_args!(
                "  {}.{}: peak CUDA memory per call: {peak}",
                workload.class, workload.method
            ));
        }
    }
}

/// `ours 4.00 MiB, reference 8.00 MiB, candidate 2.00 MiB (-2.00 MiB)`:
/// the peak of each implementation measured, the candidate's difference
/// from ours; `None` when none was measured.
fn peak_text(peak: &crate::benchmark::PeakMemory) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(ours) = peak.ours {
        parts.push(format!("ours {}", super::progress::human_bytes(ours)));
    }
    if let Some(reference) = peak.reference {
        parts.push(format!(
            "reference {}",
            super::progress::human_bytes(reference)
        ));
    }
    if let Some(candidate) = peak.candidate {
        let diff =
            peak_difference(peak).map_or_else(String::new, |d| format!(" ({})", signed_bytes(d)));
        parts.push(format!(
            "candidate {}{diff}",
            super::progress::human_bytes(candidate)
        ));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The candidate's peak minus ours, bytes; `None` unless both were measured.
fn peak_difference(peak: &crate::benchmark::PeakMemory) -> Option<i64> {
    let (ours, candidate) = (peak.ours?, peak.candidate?);
    Some(i64::try_from(candidate).ok()? - i64::try_from(ours).ok()?)
}

/// `+2.00 KiB`, `-1.00 MiB`, `+0 B`.
fn signed_bytes(diff: i64) -> String {
    let sign = if diff < 0 { '-' } else { '+' };
    format!(
        "{sign}{}",
        super::progress::human_bytes(diff.unsigned_abs())
    )
}

/// `one round` or `repeated until each speed-up is decided, for up to 10s`.
fn budget_text(budget: Duration) -> String {
    if budget.is_zero() {
        "one round".to_owned()
    } else {
        format!(
            "repeated until each speed-up is decided, for up to {}s",
            budget.as_secs_f64()
        )
    }
}

/// Columns of the text table: the method, shape, dtype, our mean with its
/// spread (population standard deviation) and sample count, the
/// reference's mean, the speed-up, its stability verdict and the match.
const COLUMNS: usize = 10;

/// The table row of one workload.
fn row(workload: &Workload) -> [String; COLUMNS] {
    let name = format!("{}.{}", workload.class, workload.method);
    let dash = || "-".to_owned();
    match &workload.outcome {
        Outcome::Timed(m) => {
            let reference = m.reference.as_ref();
            let speed = reference.and_then(|r| speed_up(r.mean_ms, &m.ours));
            [
                name,
                m.shape.clone().unwrap_or_else(dash),
                m.dtype.clone().unwrap_or_else(dash),
                format!("{:.4}", m.ours.mean_ms),
                format!("±{:.4}", m.ours.std_ms),
                m.ours.iterations.to_string(),
                reference.map_or_else(dash, |r| format!("{:.4}", r.mean_ms)),
                speed.map_or_else(dash, |s| speed_up_text(&s)),
                speed.map_or_else(dash, |s| s.verdict.text().to_owned()),
                match matches_of(m) {
                    Some(true) => "match".to_owned(),
                    Some(false) => "MISMATCH".to_owned(),
                    None => "no verify".to_owned(),
                },
            ]
        }
        Outcome::Failed(_) => untimed(name, "error"),
        Outcome::TimedOut(_) => untimed(name, "timed out"),
        Outcome::Died(..) => untimed(name, "died"),
    }
}

/// The row of a workload that gave no timing: its name, dashes and `status`.
fn untimed(name: String, status: &str) -> [String; COLUMNS] {
    let mut row = [(); COLUMNS].map(|()| "-".to_owned());
    row[0] = name;
    row[COLUMNS - 1] = status.to_owned();
    row
}

/// What follows the table for one workload: the error, or the candidate.
fn detail(workload: &Workload) -> Option<String> {
    match &workload.outcome {
        Outcome::Timed(m) => m.candidate.as_ref().map(|c| {
            let ratio = speed_up(m.ours.mean_ms, c).map_or_else(
                || "-".to_owned(),
                |s| format!("{} {}", speed_up_text(&s), s.verdict.text()),
            );
            let matched = match m.matches.as_deref() {
                Some([_, ok]) if *ok => ", match",
                Some([_, _]) => ", MISMATCH",
                _ => "",
            };
            let memory = m
                .peak
                .and_then(|p| peak_difference(&p))
                .map_or_else(String::new, |d| {
                    format!(", peak memory {}", signed_bytes(d))
                });
            format!(
                "locked {:.4} ms, candidate {:.4} ms: {ratio}{matched}{memory}",
                m.ours.mean_ms, c.mean_ms
            )
        }),
        Outcome::Failed(error) => Some(format!("raised: {}", error.join(" | "))),
        Outcome::TimedOut(limit) => Some(format!(
            "took longer than {}s (--time-limit); the interpreter was ended",
            limit.as_secs()
        )),
        Outcome::Died(status, tail) => Some(format!(
            "the interpreter exited ({status}): {}",
            tail.last().map_or("no output", String::as_str)
        )),
    }
}

/// The JSON document (`--format json`).
#[derive(Serialize)]
struct BenchmarkDoc<'a> {
    schema: u32,
    command: &'static str,
    timing: Option<&'a str>,
    iterations: usize,
    warmup: usize,
    /// The round budget per workload, seconds (after the `--time-limit` cap).
    budget_s: f64,
    machine: Option<&'a Machine>,
    kernels: Vec<KernelDoc<'a>>,
    not_ready: &'a [String],
}

#[derive(Serialize)]
struct KernelDoc<'a> {
    /// `null` for a local build (`kernels benchmark PATH`).
    repo_id: Option<String>,
    commit: Option<&'a str>,
    /// `kernels benchmark PATH`: the local build's path (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    variant: &'a str,
    benchmarks: bool,
    /// `--against`: the other version timed beside this one.
    candidate: Option<CandidateDoc<'a>>,
    load_error: Option<&'a [String]>,
    script_errors: Vec<ScriptErrorDoc<'a>>,
    workloads: Vec<WorkloadDoc<'a>>,
}

#[derive(Serialize)]
struct CandidateDoc<'a> {
    label: &'a str,
    commit: &'a str,
    variant: &'a str,
}

#[derive(Serialize)]
struct ScriptErrorDoc<'a> {
    script: &'a str,
    error: &'a [String],
}

#[derive(Serialize)]
struct WorkloadDoc<'a> {
    script: &'a str,
    class: &'a str,
    method: &'a str,
    /// `timed`, `failed`, `timed_out` or `died`.
    status: &'static str,
    shape: Option<&'a str>,
    dtype: Option<&'a str>,
    /// `true`/`false` per kernel timed; absent without `verify_*`.
    r#match: Option<&'a [bool]>,
    max_abs_diff: Option<&'a [Option<f64>]>,
    ours: Option<&'a Timing>,
    reference: Option<&'a Timing>,
    speed_up: Option<SpeedUp>,
    candidate: Option<&'a Timing>,
    candidate_speed_up: Option<SpeedUp>,
    /// Timing rounds that ran.
    rounds: Option<usize>,
    leaked_bytes: Option<u64>,
    /// Peak CUDA memory of one call: `ours`, `reference`, `candidate`.
    peak_bytes: Option<crate::benchmark::PeakMemory>,
    /// The candidate's peak minus ours, bytes (negative: it needs less).
    candidate_peak_diff_bytes: Option<i64>,
    error: Option<Vec<String>>,
}

impl Report<'_> {
    fn doc(&self) -> BenchmarkDoc<'_> {
        BenchmarkDoc {
            schema: 1,
            command: "benchmark",
            timing: self.run.map(|r| r.timing.as_str()),
            iterations: self.options.iterations,
            warmup: self.options.warmup,
            budget_s: self.options.budget.as_secs_f64(),
            machine: self.run.map(|r| &r.machine),
            kernels: self
                .kernels()
                .into_iter()
                .map(|(entry, run)| kernel_doc(entry, run))
                .collect(),
            not_ready: &self.not_ready,
        }
    }
}

fn kernel_doc<'a>(entry: &'a Entry, run: Option<&'a KernelRun>) -> KernelDoc<'a> {
    KernelDoc {
        repo_id: match &entry.subject {
            Subject::Locked(t) => Some(t.repo_id.to_string()),
            Subject::Local { .. } => None,
        },
        commit: match &entry.subject {
            Subject::Locked(t) => Some(t.commit.as_str()),
            Subject::Local { .. } => None,
        },
        path: match &entry.subject {
            Subject::Locked(_) => None,
            Subject::Local { path, .. } => Some(path.display().to_string()),
        },
        variant: entry.variant(),
        benchmarks: run.is_some(),
        candidate: entry.candidate.as_ref().map(|(label, c)| CandidateDoc {
            label,
            commit: c.commit.as_str(),
            variant: &c.variant,
        }),
        load_error: run.and_then(|r| r.load_error.as_deref()),
        script_errors: run
            .map(|r| {
                r.script_errors
                    .iter()
                    .map(|(script, error)| ScriptErrorDoc { script, error })
                    .collect()
            })
            .unwrap_or_default(),
        workloads: run
            .map(|r| r.workloads.iter().map(workload_doc).collect())
            .unwrap_or_default(),
    }
}

fn workload_doc(workload: &Workload) -> WorkloadDoc<'_> {
    let mut doc = WorkloadDoc {
        script: &workload.script,
        class: &workload.class,
        method: &workload.method,
        status: "timed",
        shape: None,
        dtype: None,
        r#match: None,
        max_abs_diff: None,
        ours: None,
        reference: None,
        speed_up: None,
        candidate: None,
        candidate_speed_up: None,
        rounds: None,
        leaked_bytes: None,
        peak_bytes: None,
        candidate_peak_diff_bytes: None,
        error: None,
    };
    match &workload.outcome {
        Outcome::Timed(m) => {
            doc.shape = m.shape.as_deref();
            doc.dtype = m.dtype.as_deref();
            doc.r#match = m.matches.as_deref();
            doc.max_abs_diff = m.max_abs_diff.as_deref();
            doc.ours = Some(&m.ours);
            doc.reference = m.reference.as_ref();
            doc.speed_up = m.reference.and_then(|r| speed_up(r.mean_ms, &m.ours));
            doc.candidate = m.candidate.as_ref();
            doc.candidate_speed_up = m.candidate.and_then(|c| speed_up(m.ours.mean_ms, &c));
            doc.rounds = Some(m.rounds);
            doc.leaked_bytes = m.leaked_bytes;
            doc.peak_bytes = m.peak;
            doc.candidate_peak_diff_bytes = m.peak.and_then(|p| peak_difference(&p));
        }
        Outcome::Failed(error) => {
            doc.status = "failed";
            doc.error = Some(error.clone());
        }
        Outcome::TimedOut(_) | Outcome::Died(..) => {
            doc.status = if matches!(workload.outcome, Outcome::TimedOut(_)) {
                "timed_out"
            } else {
                "died"
            };
            doc.error = detail(workload).map(|d| vec![d]);
        }
    }
    doc
}
