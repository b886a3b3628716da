//! `kernels to-wheel`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::repo_id::RepoId;
use crate::settings::Settings;
use crate::wheel::{self, Kernel, Snapshot, TagVersion, WheelOptions, ZIP_EPOCH};

/// Arguments of `kernels to-wheel`.
#[derive(Debug, clap::Args)]
pub struct ToWheelArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// Version the wheels carry (PEP 440, for example `0.0.3`). Unless
    /// `--revision` is given, the snapshot is the one of tag or branch `v<VERSION>`.
    #[arg(value_name = "VERSION")]
    pub kernel_version: String,

    /// Lowest CPython version: compiled wheels are tagged `cp<XY>-abi3` and
    /// every wheel says `Requires-Python: >=<VERSION>`.
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

    /// Branch, tag or commit to read from the Hub cache instead of `v<VERSION>`.
    #[arg(long, conflicts_with = "from_dir")]
    pub revision: Option<String>,

    /// Read the variants from a local snapshot (a directory containing
    /// `build/`) instead of the Hub cache.
    #[arg(long, value_name = "SNAPSHOT_DIR")]
    pub from_dir: Option<PathBuf>,

    /// Timestamp of every zip entry, in seconds since the Unix epoch; fixed
    /// so that rebuilding gives byte-identical wheels.
    #[arg(long, env = "SOURCE_DATE_EPOCH", default_value_t = ZIP_EPOCH, hide_env_values = true)]
    pub source_date_epoch: u64,
}

/// Plans every wheel, then writes them one by one, printing each wheel's
/// path on stdout.
pub fn run(args: ToWheelArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let kernel = Kernel::new(args.repo_id.clone(), &args.kernel_version)?;
    let snapshot = match &args.from_dir {
        Some(dir) => Snapshot::from_dir(dir)?,
        None => {
            let revision = args.revision.clone().unwrap_or_else(|| {
                format!(
                    "v{}",
                    args.kernel_version
                        .strip_prefix('v')
                        .unwrap_or(&args.kernel_version)
                )
            });
            Snapshot::from_cache(&settings.cache_dir, &args.repo_id, &revision)?
        }
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
    fs_err::create_dir_all(&args.out_dir).map_err(wheel::WheelError::Io)?;
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        crate::cli::Cli::command().debug_assert();
    }
}
