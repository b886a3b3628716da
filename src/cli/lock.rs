//! `kernels lock`: its flags, read into a [`LockRequest`] that
//! [`locking::run`] carries out.

use std::process::ExitCode;

use super::GlobalArgs;
use super::args::{
    CacheArgs, LockModeArgs, OutputFormat, ProgressArgs, ProjectArgs, RepoTypeArgs, TargetArgs,
    TargetRuntimeArgs,
};
use super::printer::Printer;
use super::project::locking::{self, LockRequest};
use crate::cli::settings::Settings;
use crate::lock::cooldown::ExcludeNewer;
use kernels_types::repo_id::RepoId;

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
    pub lock_mode: LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: CacheArgs,

    /// `--no-progress`.
    #[command(flatten)]
    pub progress: ProgressArgs,

    /// `--cuda-capability` / `--rocm-arch`: the declared targets every locked
    /// kernel must have a variant for (warned about; `--check` fails).
    #[command(flatten)]
    pub targets: TargetArgs,
}

/// `--exclude-newer`: an instant, a date or a span.
fn parse_exclude_newer(text: &str) -> Result<ExcludeNewer, String> {
    ExcludeNewer::parse(text)
}

impl LockArgs {
    /// The request these flags make.
    pub fn into_request(self) -> LockRequest {
        LockRequest {
            project_dir: self.project.project_dir,
            target_runtime: self.runtime.target_runtime,
            repo_type: self.repo.repo_type,
            trust: self.trust,
            allow_model_repos: self.allow_model_repos,
            check: self.check,
            offline: self.offline,
            upgrade: self.upgrade,
            upgrade_package: self.upgrade_package,
            breaking: self.breaking,
            dry_run: self.dry_run,
            exclude_newer: self.exclude_newer,
            force: self.force,
            format: self.format,
            locked_flag: self.lock_mode.locked,
            targets: self.targets.targets(),
        }
    }
}

/// `kernels lock`: see [`locking::run`].
pub fn run(
    args: LockArgs,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    locking::run(args.into_request(), settings, global, printer)
}
