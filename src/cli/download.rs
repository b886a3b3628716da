//! `kernels download`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::lock::{RepoTypeArg, choose_profile};
use crate::cache::HubCache;
use crate::download::{
    DEFAULT_CONCURRENCY, DownloadError, DownloadOptions, Progress, ProgressMode, download,
};
use crate::hub::HubClient;
use crate::lockfile::{LOCK_FILE_NAME, Lockfile};
use crate::manifest::ToolSettings;
use crate::settings::Settings;
use crate::variant::{VariantRequest, VariantSelection, describe_preference, project_python};

/// Arguments of `kernels download`.
#[derive(Debug, clap::Args)]
pub struct DownloadArgs {
    /// Project directory holding `kernels.lock`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,

    /// Download this build variant (a directory under `build/`); repeatable.
    /// Without it, the variant is chosen for the project's torch.
    #[arg(long = "variant", value_name = "NAME", conflicts_with = "all_variants")]
    pub variants: Vec<String>,

    /// Download every build variant of every kernel.
    #[arg(long)]
    pub all_variants: bool,

    /// Maximum number of files downloaded at the same time.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONCURRENCY,
          value_parser = parse_concurrency)]
    pub concurrency: usize,

    /// Download for this `kernels` runtime version (for example `0.10.5`): it
    /// decides the repository type and cache folder prefix (`models--` up to
    /// 0.13, `kernels--` from 0.14) and the variant order. Default:
    /// `target-runtime` under `[tool.kernels]`, else the lock's format refined
    /// by the `kernels` installed in the project's Python environment.
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,

    /// Override the target runtime's Hub repository type, which is also the
    /// cache folder prefix (`kernels--` or `models--`).
    #[arg(long, value_enum)]
    pub repo_type: Option<RepoTypeArg>,
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
    #[error("no kernels.lock in {}: expected {}", dir.display(), path.display())]
    #[diagnostic(
        code(kernels::download::no_lock),
        help("create it with `kernels lock {}`", dir.display())
    )]
    NoLock { dir: PathBuf, path: PathBuf },

    #[error("{} of {} kernels failed to download: {}", failures.len(), total, failures.join("; "))]
    #[diagnostic(code(kernels::download::failed))]
    Failed {
        total: usize,
        failures: Vec<String>,
        #[help]
        help: String,
    },
}

/// Reads `<project>/kernels.lock`, selects variants and downloads every kernel.
/// Exit 0 when all kernels are in the cache and verified, 1 when any failed
/// (each is named on stderr), 2 on internal errors.
pub fn run(args: DownloadArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let lock_path = args.project_dir.join(LOCK_FILE_NAME);
    if !lock_path.is_file() {
        return Err(DownloadCliError::NoLock {
            dir: args.project_dir.clone(),
            path: lock_path,
        }
        .into());
    }
    let lockfile = Lockfile::read(&lock_path)?;
    let kernels = lockfile.locked_kernels(&lock_path)?;
    let tool = ToolSettings::read(&args.project_dir)?;
    let manifest_path = args.project_dir.join(crate::manifest::MANIFEST_FILE_NAME);
    let profile = choose_profile(
        &args.project_dir,
        args.target_runtime.as_deref(),
        tool.as_ref()
            .and_then(|t| t.target_runtime.as_deref())
            .map(|v| (v, manifest_path.as_path())),
        Some(lockfile.format()),
        args.repo_type,
        quiet,
    )?;

    let request = if args.all_variants {
        VariantRequest::All
    } else if !args.variants.is_empty() {
        VariantRequest::Named(args.variants.clone())
    } else {
        VariantRequest::Detect
    };
    let selection = if kernels.is_empty() {
        // Nothing to select from: do not require torch for an empty lock.
        VariantSelection::All
    } else {
        let python = project_python(&args.project_dir, crate::settings::virtual_env().as_deref());
        request.resolve(&python, profile.variant_preference)?
    };
    if let VariantSelection::Detected { env, preference } = &selection
        && !quiet
    {
        eprintln!(
            "Environment: {}; variants ranked by {}",
            env.describe(),
            describe_preference(*preference)
        );
    }

    let options = DownloadOptions {
        repo_type: profile.repo_type,
        selection,
        concurrency: args.concurrency,
    };
    let client = HubClient::new(settings)
        .map_err(|err| super::InternalError(format!("cannot build the HTTP client: {err}")))?;
    let cache = HubCache::new(&settings.cache_dir);
    let progress = Progress::new(ProgressMode::detect(quiet));
    let summary =
        super::runtime()?.block_on(download(&client, &cache, &kernels, &options, &progress));

    if summary.failed.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let mut failures = Vec::new();
    let mut internal = None;
    for failure in summary.failed {
        let label = failure.label();
        failures.push(format!("{label} ({})", failure.error));
        if let DownloadError::Internal(msg) = &failure.error {
            internal.get_or_insert_with(|| format!("{label}: {msg}"));
        }
        eprintln!("{label}: {:?}", miette::Report::new(failure.error));
    }
    if let Some(msg) = internal {
        return Err(super::InternalError(msg).into());
    }
    let done = kernels.len() - failures.len();
    let help = if done == 0 {
        "fix the causes above and run `kernels download` again".to_owned()
    } else {
        format!(
            "the other {done} kernel(s) are in the cache; fix the causes above and run `kernels download` again"
        )
    };
    Err(DownloadCliError::Failed {
        total: kernels.len(),
        failures,
        help,
    }
    .into())
}
