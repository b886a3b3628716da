//! `kernels export`: the SBOM of what `kernels.lock` pins ([`crate::export`]).

use std::path::PathBuf;
use std::process::ExitCode;

use kernels_types::wire::RepoType;

use super::args::RepoTypeArgs;
use super::printer::Printer;
use super::settings::Settings;
use crate::export::{self, ExportError, InventoryOptions};
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};

/// Arguments of `kernels export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: super::args::ProjectArgs,

    /// The document to write.
    #[arg(long, value_enum, default_value_t = ExportFormat::Cyclonedx)]
    pub format: ExportFormat,

    /// Write the document to FILE (replaced atomically) instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Read every kernel's variants and `metadata.json` from the Hub, even
    /// when the cache holds its commit. Without it the Hub is asked only for
    /// kernels the cache does not hold. (Old spelling: `--online`.)
    #[arg(long = "refresh", alias = "online", conflicts_with = "offline")]
    pub online: bool,

    /// Make no network request: read only the Hub cache. Same as
    /// `HF_HUB_OFFLINE=1`.
    #[arg(long)]
    pub offline: bool,

    /// Creation time written into the document, in seconds since the Unix
    /// epoch. Without it CycloneDX has no timestamp and SPDX (which requires
    /// one) gets the epoch itself, so that reruns are identical.
    #[arg(
        long,
        env = "SOURCE_DATE_EPOCH",
        value_name = "SECONDS",
        hide_env_values = true
    )]
    pub source_date_epoch: Option<i64>,

    /// `--repo-type` (default `kernel`): the repository type asked of the
    /// Hub, and the cache folder looked at first.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,
}

/// `--format` values of `kernels export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// CycloneDX 1.5 JSON.
    Cyclonedx,
    /// SPDX 2.3 JSON.
    Spdx,
    /// The resolved set as kernels' own JSON document.
    Json,
}

/// Usage errors of `kernels export`.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
enum ExportCliError {
    #[error("--refresh asks the Hub, and HF_HUB_OFFLINE (or KERNELS_OFFLINE) forbids requests")]
    #[diagnostic(
        code(kernels::export::online_offline),
        help("unset the offline variable, or drop `--refresh` to read the cache alone")
    )]
    OnlineOffline,

    #[error("SOURCE_DATE_EPOCH (or --source-date-epoch) {0} is no time kernels can write")]
    #[diagnostic(
        code(kernels::export::bad_epoch),
        help("give seconds since 1970-01-01T00:00:00Z, such as 1700000000")
    )]
    BadEpoch(i64),

    #[error("cannot write {}", path.display())]
    #[diagnostic(
        code(kernels::export::write),
        help("check that the directory exists and is writable, or write to stdout (no --output)")
    )]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads the lock, gathers the inventory (cache first, the Hub as
/// [`ExportArgs::online`] and the offline settings allow) and writes the
/// document on stdout or to `--output`. Warnings go to stderr.
pub fn run(args: ExportArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let offline = settings.offline || args.offline;
    if args.online && settings.offline {
        return Err(ExportCliError::OnlineOffline.into());
    }
    let dir = &args.project.project_dir;
    let lock_path = dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(super::project::read::no_lock_error(dir));
    }
    let text = fs_err::read_to_string(&lock_path).map_err(|source| {
        crate::lock::format::LockfileError::Io {
            path: lock_path.clone(),
            source,
        }
    })?;
    let lock = Lockfile::parse(&text, &lock_path)?;
    let created = args
        .source_date_epoch
        .map(|s| jiff::Timestamp::from_second(s).map_err(|_| ExportCliError::BadEpoch(s)))
        .transpose()?;
    let options = InventoryOptions {
        online: args.online,
        repo_type: args.repo.repo_type.map_or(RepoType::Kernel, Into::into),
        created,
    };
    let cache = settings.cache();
    let client = if offline {
        None
    } else {
        Some(super::project::client::client_showing_retries(
            settings,
            printer,
            printer.lines_mode(),
        )?)
    };
    let (inventory, warnings) = super::project::client::runtime()?
        .block_on(export::inventory(
            &lock,
            &lock_path,
            &text,
            &cache,
            client.as_ref(),
            &options,
        ))
        .map_err(|err| hub_failure(err, settings))?;
    for warning in &warnings {
        printer.status(format_args!("warning: {warning}"));
    }
    let document = match args.format {
        ExportFormat::Cyclonedx => export::cyclonedx::document(&inventory),
        ExportFormat::Spdx => export::spdx::document(&inventory),
        ExportFormat::Json => export::json::document(&inventory),
    };
    let mut body = serde_json::to_string_pretty(&document).map_err(|err| {
        super::project::client::InternalError(format!("cannot serialize the document: {err}"))
    })?;
    body.push('\n');
    match &args.output {
        None => printer.data_raw(&body),
        Some(path) => {
            kernels_cache::atomic::write_atomic(path, body.as_bytes()).map_err(|source| {
                ExportCliError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
            printer.status(format_args!(
                "Wrote {} components to {}",
                inventory.components.len(),
                path.display()
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A Hub failure reads as the other network commands say it (one line for
/// an unreachable endpoint), naming the kernel.
fn hub_failure(err: ExportError, settings: &Settings) -> miette::Report {
    use crate::lock::project::LockError;
    use crate::lock::resolver::ResolveError;
    match err {
        ExportError::Hub {
            repo_id,
            commit,
            source,
        } => match *source {
            LockError::Resolve(ResolveError::Hub(hub)) => {
                super::project::causes::hub_failure(hub, settings).wrap_err(format!(
                    "cannot read {repo_id}@{} from the Hub",
                    commit.short()
                ))
            }
            source => ExportError::Hub {
                repo_id,
                commit,
                source: Box::new(source),
            }
            .into(),
        },
        other => other.into(),
    }
}
