//! `kernels to-wheel`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::printer::Printer;
use super::progress::Progress;
use crate::cli::settings::Settings;
use crate::install::DownloadOptions;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::variant::VariantSelection;
use crate::wheel::locked::plan_locked;
use crate::wheel::{
    self, HubRevision, Kernel, PlannedWheel, Snapshot, TagVersion, WheelError, WheelOptions,
    ZIP_EPOCH,
};
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

use super::args::RepoTypeArg;

/// Arguments of `kernels to-wheel`.
#[derive(Debug, clap::Args)]
pub struct ToWheelArgs {
    /// Kernel repository, `owner/name`. With `--locked` or `--frozen`: the
    /// project directory whose `kernels.lock` to build (default: `--project`, else the nearest project upwards, else `.`).
    #[arg(value_name = "REPO_ID")]
    pub repo_id: Option<String>,

    /// Version the wheels carry (PEP 440, for example `0.0.3`). Unless
    /// `--revision` is given, the files come from tag or branch `v<VERSION>`.
    /// Not with `--locked` or `--frozen`.
    #[arg(value_name = "VERSION")]
    pub kernel_version: Option<String>,

    /// Lowest CPython version: compiled wheels are tagged `cp<XY>-abi3` and
    /// every wheel says `Requires-Python: >=X.Y`.
    #[arg(long, value_name = "X.Y", default_value = "3.9")]
    pub python_version: TagVersion,

    /// glibc version of the `manylinux_X_Y_<arch>` tag of Linux wheels.
    #[arg(long, value_name = "X.Y", default_value = "2.28")]
    pub manylinux_version: TagVersion,

    /// macOS version of the `macosx_X_Y_<arch>` tag of macOS wheels.
    #[arg(long, value_name = "X.Y", default_value = "11.0")]
    pub macos_version: TagVersion,

    /// Build only this variant (a directory name under `build/`); repeatable.
    /// Default: every variant, skipping directories that are not build variants.
    #[arg(long = "variant", value_name = "VARIANT")]
    pub variants: Vec<String>,

    /// Directory to write the wheels to (created if missing). (Old spelling:
    /// `--out-dir`.)
    #[arg(
        long = "output",
        short = 'o',
        alias = "out-dir",
        value_name = "DIR",
        default_value = "."
    )]
    pub out_dir: PathBuf,

    /// Branch, tag or commit to build instead of `v<VERSION>`.
    #[arg(long, conflicts_with = "from_dir")]
    pub revision: Option<String>,

    /// Hub repository type of the kernel; also the cache folder prefix
    /// (`kernels--` or `models--`).
    #[arg(long, value_enum, default_value_t = RepoTypeArg::Kernel, conflicts_with = "from_dir")]
    pub repo_type: RepoTypeArg,

    /// Read the variants from a local snapshot (a directory containing
    /// `build/`) instead of downloading them.
    #[arg(long, value_name = "SNAPSHOT_DIR")]
    pub from_dir: Option<PathBuf>,

    /// Timestamp of every zip entry, in seconds since the Unix epoch; fixed
    /// so that rebuilding gives byte-identical wheels.
    #[arg(long, env = "SOURCE_DATE_EPOCH", default_value_t = ZIP_EPOCH, hide_env_values = true)]
    pub source_date_epoch: u64,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::args::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,

    /// `--no-progress`.
    #[command(flatten)]
    pub progress: super::args::ProgressArgs,
}

/// Gets the snapshot (local directory, or downloaded into the Hub cache),
/// plans every wheel, then writes them one by one, printing each wheel's
/// path on stdout.
/// How `kernels to-wheel` uses a project's lock (the global `--locked` /
/// `--frozen` flags, given on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromLock {
    /// `--locked`: check the lock is up to date, then build every locked kernel.
    Locked,
    /// `--frozen`: build every locked kernel from the lock as it is.
    Frozen,
}

pub fn run(
    args: ToWheelArgs,
    from_lock: Option<FromLock>,
    settings: &Settings,
    global: &super::GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let options = WheelOptions {
        python: args.python_version,
        manylinux: args.manylinux_version,
        macos: args.macos_version,
        source_date_epoch: args.source_date_epoch,
    };
    if let Some(mode) = from_lock {
        if args.kernel_version.is_some()
            || args.revision.is_some()
            || args.from_dir.is_some()
            || !args.variants.is_empty()
        {
            subcommand()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "`kernels to-wheel --locked/--frozen [PROJECT_DIR]` builds every locked \
                     kernel and variant: VERSION, --revision, --from-dir and --variant do not apply",
                )
                .exit();
        }
        let project_dir =
            super::args::project_dir(args.repo_id.as_deref().map(PathBuf::from), global)?;
        if mode == FromLock::Locked {
            super::project::locking::ensure_locked(
                &project_dir,
                Some(args.repo_type.into()),
                settings,
                global,
                printer,
            )?;
        }
        return run_locked(&project_dir, &args, &options, settings, printer);
    }
    let (Some(repo_id), Some(version)) = (&args.repo_id, &args.kernel_version) else {
        subcommand()
            .error(
                clap::error::ErrorKind::MissingRequiredArgument,
                "`kernels to-wheel` needs REPO_ID and VERSION, or `--locked [PROJECT_DIR]` / \
                 `--frozen [PROJECT_DIR]` to build from a project's kernels.lock",
            )
            .exit();
    };
    let repo_id: RepoId = repo_id
        .parse()
        .map_err(|err: kernels_types::repo_id::RepoIdError| miette::miette!("{err}"))?;
    let repo_id = &repo_id;
    let kernel = Kernel::new(repo_id.clone(), version)?;
    let snapshot = match &args.from_dir {
        Some(dir) => Snapshot::from_dir(dir)?,
        None => hub_snapshot(repo_id, version, &args, settings, printer)?,
    };
    let plan = wheel::plan_wheels(&kernel, &snapshot, &args.variants, &options)?;
    for variant in &plan.skipped {
        printer.status(format_args!(
            "warning: skipping `{variant}`: not a build-variant name"
        ));
    }
    print_notes(printer, &plan.notes, None);
    write_wheels(plan.wheels.iter(), &args.out_dir, printer)?;
    Ok(ExitCode::SUCCESS)
}

/// The `to-wheel` subcommand, built so that usage errors show its own usage
/// line (`kernels to-wheel [OPTIONS] [REPO_ID] [VERSION]`), not the top-level one.
fn subcommand() -> clap::Command {
    let mut command = super::command();
    command.build();
    command
        .find_subcommand("to-wheel")
        .cloned()
        .expect("to-wheel is a subcommand")
}

/// Prints the planner's notes on stderr, one line per distinct note naming
/// the variants it applies to (`of <label>` for `--locked` builds).
fn print_notes(printer: &Printer, notes: &[wheel::WheelNote], label: Option<&str>) {
    let mut grouped: Vec<(String, Vec<&str>)> = Vec::new();
    for note in notes {
        let message = note.message();
        match grouped.iter_mut().find(|(m, _)| *m == message) {
            Some((_, variants)) => variants.push(note.variant()),
            None => grouped.push((message, vec![note.variant()])),
        }
    }
    for (message, variants) in grouped {
        let of = label.map(|l| format!(" of {l}")).unwrap_or_default();
        let which = match variants.as_slice() {
            [one] => format!("`{one}`"),
            many => format!("{} variants", many.len()),
        };
        printer.status(format_args!("note: {which}{of}: {message}"));
    }
}

/// Writes planned wheels into `out_dir` (created if missing), several at a
/// time (one per CPU), printing each path on stdout in plan order. The first
/// error (in plan order) is returned after every wheel was attempted.
fn write_wheels<'a>(
    wheels: impl Iterator<Item = &'a PlannedWheel>,
    out_dir: &Path,
    printer: &Printer,
) -> Result<(), WheelError> {
    fs_err::create_dir_all(out_dir)?;
    let wheels: Vec<&PlannedWheel> = wheels.collect();
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    let mut first_error = None;
    for (planned, result) in wheels
        .iter()
        .zip(wheel::build_wheels(&wheels, out_dir, jobs))
    {
        match result {
            Ok(path) => {
                printer.status(format_args!(
                    "Built {} from {}",
                    planned.spec.file_name(),
                    planned.variant
                ));
                printer.data(path.display());
            }
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// `--locked`/`--frozen`: every kernel of the lock is downloaded (or verified in the
/// cache) and planned first; wheels are written only when all succeeded.
fn run_locked(
    project_dir: &Path,
    args: &ToWheelArgs,
    options: &WheelOptions,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(ToWheelCliError::NoLock {
            dir: project_dir.to_path_buf(),
            path: lock_path,
            help: super::project::read::no_lock_help(project_dir),
        }
        .into());
    }
    let lock = Lockfile::read(&lock_path)?;
    let client = HubClient::new(&settings.client_config(printer))
        .map_err(super::project::client::client_error)?;
    let cache = HubCache::new(&settings.cache_dir);
    let download_options = DownloadOptions::new(args.repo_type.into(), VariantSelection::All);
    let builds = super::project::client::runtime()?.block_on(plan_locked(
        &client,
        &cache,
        &lock,
        &lock_path,
        &download_options,
        options,
        || Box::new(Progress::new(printer, printer.progress_mode())),
    ))?;
    for build in &builds {
        let label = crate::install::plan::label(&build.locked.repo_id, &build.locked.commit);
        let skipped = build.plan.skipped.iter().map(ToString::to_string);
        for variant in build.skipped_locked.iter().cloned().chain(skipped) {
            printer.status(format_args!(
                "warning: skipping `{variant}` of {label}: not a build-variant name"
            ));
        }
        print_notes(printer, &build.plan.notes, Some(&label));
        if !build.plan.wheels.is_empty() {
            printer.status(format_args!(
                "{label}: {} wheel(s), version {} ({})",
                build.plan.wheels.len(),
                build.version,
                build.version_source
            ));
        }
    }
    write_wheels(
        builds.iter().flat_map(|build| &build.plan.wheels),
        &args.out_dir,
        printer,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `kernels to-wheel --locked`/`--frozen` failures that are not about one kernel.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum ToWheelCliError {
    #[error("no kernels.lock in {}: expected {}", dir.display(), path.display())]
    #[diagnostic(code(kernels::wheel::no_lock))]
    NoLock {
        dir: PathBuf,
        path: PathBuf,
        #[help]
        help: String,
    },
}

/// Downloads the snapshot into the Hub cache. Offline (`HF_HUB_OFFLINE`), or
/// when the revision cannot be resolved (Hub unreachable), a snapshot already
/// in the cache for the revision is used instead, with a warning naming the
/// failure. A download that fails after it started is an error: the cached
/// snapshot may be incomplete.
fn hub_snapshot(
    repo_id: &RepoId,
    version: &str,
    args: &ToWheelArgs,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<Snapshot> {
    let revision = args
        .revision
        .clone()
        .unwrap_or_else(|| format!("v{}", version.strip_prefix('v').unwrap_or(version)));
    let cached = || Snapshot::from_cache(&settings.cache_dir, repo_id, &revision);
    if settings.offline {
        return Ok(cached()?);
    }
    let at = HubRevision {
        repo_id,
        revision: &revision,
        repo_type: args.repo_type.into(),
    };
    let client = HubClient::new(&settings.client_config(printer))
        .map_err(super::project::client::client_error)?;
    let runtime = super::project::client::runtime()?;
    let commit = match runtime.block_on(Snapshot::resolve(&client, &at)) {
        Ok(commit) => commit,
        Err(err) => {
            let Ok(snapshot) = cached() else {
                return Err(err.into());
            };
            printer.status(format_args!(
                "warning: using the cached snapshot of `{repo_id}` at `{revision}`: {err}"
            ));
            return Ok(snapshot);
        }
    };
    let cache = HubCache::new(&settings.cache_dir);
    let progress = Progress::new(printer, printer.progress_mode());
    Ok(runtime.block_on(Snapshot::fetch(
        &client,
        &cache,
        &at,
        &commit,
        &args.variants,
        &progress,
    ))?)
}

#[cfg(test)]
mod tests {

    #[test]
    fn clap_definition_is_consistent() {
        crate::cli::command().debug_assert();
    }
}
