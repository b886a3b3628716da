//! `kernels to-wheel`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::cache::HubCache;
use crate::download::{Progress, ProgressMode};
use crate::hub::HubClient;
use crate::repo_id::RepoId;
use crate::settings::Settings;
use crate::wheel::{
    self, HubRevision, Kernel, Snapshot, TagVersion, WheelError, WheelOptions, ZIP_EPOCH,
};

use super::lock::RepoTypeArg;

/// Arguments of `kernels to-wheel`.
#[derive(Debug, clap::Args)]
pub struct ToWheelArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// Version the wheels carry (PEP 440, for example `0.0.3`). Unless
    /// `--revision` is given, the files come from tag or branch `v<VERSION>`.
    #[arg(value_name = "VERSION")]
    pub kernel_version: String,

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

    /// Directory to write the wheels to (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
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
}

/// Gets the snapshot (local directory, or downloaded into the Hub cache),
/// plans every wheel, then writes them one by one, printing each wheel's
/// path on stdout.
pub fn run(args: ToWheelArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let kernel = Kernel::new(args.repo_id.clone(), &args.kernel_version)?;
    let snapshot = match &args.from_dir {
        Some(dir) => Snapshot::from_dir(dir)?,
        None => hub_snapshot(&args, settings, quiet)?,
    };
    let options = WheelOptions {
        python: args.python_version,
        manylinux: args.manylinux_version,
        macos: args.macos_version,
        source_date_epoch: args.source_date_epoch,
    };
    let plan = wheel::plan_wheels(&kernel, &snapshot, &args.variants, &options)?;
    if !quiet {
        for variant in &plan.skipped {
            eprintln!("warning: skipping `{variant}`: not a build-variant name");
        }
    }
    fs_err::create_dir_all(&args.out_dir).map_err(WheelError::Io)?;
    for planned in &plan.wheels {
        let path = planned.build(&args.out_dir)?;
        if !quiet {
            eprintln!(
                "Built {} from {}",
                planned.spec.file_name(),
                planned.variant
            );
        }
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Downloads the snapshot into the Hub cache. Offline (`HF_HUB_OFFLINE`), or
/// when the revision cannot be resolved (Hub unreachable), a snapshot already
/// in the cache for the revision is used instead, with a warning naming the
/// failure. A download that fails after it started is an error: the cached
/// snapshot may be incomplete.
fn hub_snapshot(args: &ToWheelArgs, settings: &Settings, quiet: bool) -> miette::Result<Snapshot> {
    let revision = args.revision.clone().unwrap_or_else(|| {
        let version = &args.kernel_version;
        format!("v{}", version.strip_prefix('v').unwrap_or(version))
    });
    let cached = || Snapshot::from_cache(&settings.cache_dir, &args.repo_id, &revision);
    if settings.offline {
        return Ok(cached()?);
    }
    let at = HubRevision {
        repo_id: &args.repo_id,
        revision: &revision,
        repo_type: args.repo_type.into(),
    };
    let client = HubClient::new(settings).map_err(|err| super::InternalError(err.to_string()))?;
    let runtime = super::runtime()?;
    let commit = match runtime.block_on(Snapshot::resolve(&client, &at)) {
        Ok(commit) => commit,
        Err(err) => {
            let Ok(snapshot) = cached() else {
                return Err(err.into());
            };
            if !quiet {
                eprintln!(
                    "warning: using the cached snapshot of `{}` at `{revision}`: {err}",
                    args.repo_id
                );
            }
            return Ok(snapshot);
        }
    };
    let cache = HubCache::new(&settings.cache_dir);
    let progress = Progress::new(
        ProgressMode::detect(quiet),
        crate::settings::color_enabled(),
    );
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
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        crate::cli::Cli::command().debug_assert();
    }
}
