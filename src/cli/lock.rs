//! `kernels lock`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::fs::write_atomic;
use crate::hub::HubClient;
use crate::hub::types::RepoType;
use crate::lockfile::variant_hash::{self, KernelHashLock, VariantHash};
use crate::lockfile::{LOCK_FILE_NAME, LockFormat, Lockfile};
use crate::manifest::Manifest;
use crate::resolver::{ResolveError, Resolver};
use crate::settings::Settings;

/// Arguments of `kernels lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Project directory holding `pyproject.toml`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,

    /// Hub repository type the kernels are published as (`/api/kernels/…` or
    /// `/api/models/…`).
    #[arg(long, value_enum, default_value_t = RepoTypeArg::Kernel)]
    pub repo_type: RepoTypeArg,
}

/// `--repo-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RepoTypeArg {
    /// Kernel repositories (reference 0.14+).
    Kernel,
    /// Model repositories (reference ≤0.13).
    Model,
}

impl From<RepoTypeArg> for RepoType {
    fn from(arg: RepoTypeArg) -> Self {
        match arg {
            RepoTypeArg::Kernel => RepoType::Kernel,
            RepoTypeArg::Model => RepoType::Model,
        }
    }
}

/// Several dependencies failed to resolve.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} of the kernels in {} could not be resolved; kernels.lock was not changed", errors.len(), manifest.display())]
#[diagnostic(code(kernels::lock::unresolved))]
struct Unresolved {
    manifest: PathBuf,
    #[related]
    errors: Vec<ResolveError>,
}

/// Resolves `[tool.kernels.dependencies]` and writes `kernels.lock` in the
/// variant-hash format, atomically and only when its bytes change. Nothing is
/// written unless every dependency resolved. Status goes to stderr.
pub fn run(args: LockArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let manifest = Manifest::read(&args.project_dir)?;
    let client = HubClient::new(settings)?;
    let resolver = Resolver::new(client, args.repo_type.into());
    let results = super::runtime()?.block_on(resolver.resolve_all(&manifest.dependencies));

    let mut resolved = Vec::with_capacity(results.len());
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(kernel) => resolved.push(kernel),
            Err(err) => errors.push(err),
        }
    }
    if errors.len() == 1 {
        return Err(errors.remove(0).into());
    }
    if !errors.is_empty() {
        return Err(Unresolved {
            manifest: manifest.path.clone(),
            errors,
        }
        .into());
    }

    let locks: Vec<KernelHashLock> = resolved
        .iter()
        .map(|kernel| KernelHashLock {
            repo_id: kernel.repo_id.to_string(),
            sha: kernel.commit.clone(),
            variants: kernel
                .variants
                .iter()
                .map(|(name, hash)| (name.clone(), VariantHash::git_lfs_concat(hash.clone())))
                .collect(),
        })
        .collect();
    let json = variant_hash::to_json(&locks);

    if !quiet {
        for kernel in &resolved {
            for warning in &kernel.warnings {
                eprintln!("warning: {warning}");
            }
            eprintln!(
                "Locked {} {} ({}) with {} variant{}",
                kernel.repo_id,
                kernel.chosen,
                &kernel.commit[..7.min(kernel.commit.len())],
                kernel.variants.len(),
                if kernel.variants.len() == 1 { "" } else { "s" }
            );
        }
    }

    let lock_path = args.project_dir.join(LOCK_FILE_NAME);
    let old = std::fs::read(&lock_path).ok();
    let unchanged = old.as_deref() == Some(json.as_bytes());
    let was_kernel_locks = old
        .as_deref()
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| Lockfile::parse(text, &lock_path).ok())
        .is_some_and(|lock| lock.format() == LockFormat::KernelLocks);
    if was_kernel_locks && !quiet {
        eprintln!(
            "warning: {} was in the KernelLocks format of kernels 0.17; it is rewritten in the variant-hash format that kernels 0.1.7–0.16 read",
            lock_path.display()
        );
    }
    if unchanged {
        if !quiet {
            eprintln!("{} is up to date", lock_path.display());
        }
    } else {
        write_atomic(&lock_path, json.as_bytes()).map_err(|err| {
            miette::miette!(
                code = "kernels::lock::write",
                help = "check that the project directory is writable",
                "cannot write {}: {err}",
                lock_path.display()
            )
        })?;
        if !quiet {
            eprintln!("Wrote {}", lock_path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
