//! `kernels verify`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::progress::human_bytes;
use crate::cli::settings::Settings;
use crate::install::verify::verify_kernels;
use kernels_cache::HubCache;

use super::download::{SelectArgs, read_lock, shell_path};

/// Arguments of `kernels verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Project directory holding `kernels.lock`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,

    /// Which variants to check (the same selection as `kernels download`).
    #[command(flatten)]
    pub select: SelectArgs,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::CacheArgs,
}

/// `kernels verify` found differences between the lock and the cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "{problems} problem(s) in {kernels} of {total} kernel(s): the cache does not match kernels.lock"
)]
#[diagnostic(code(kernels::verify::failed))]
struct VerifyFailed {
    problems: usize,
    kernels: usize,
    total: usize,
    #[help]
    help: String,
}

/// Re-hashes what the lock selects in the cache without any request. Every
/// problem is printed on stdout as `owner/name@abcdef1: <problem>`; a summary
/// line per verified kernel goes to stderr. Exit 0 when everything verifies,
/// 1 on any difference.
pub fn run(args: VerifyArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let (kernels, selection, repo_type) = read_lock(&args.project_dir, &args.select, quiet)?;
    let cache = HubCache::new(&settings.cache_dir);
    let checks = verify_kernels(&cache, repo_type, &kernels, &selection);
    let mut problems = 0;
    let mut failed = 0;
    let mut needs_lock = false;
    if !quiet {
        for warning in checks.iter().flat_map(|check| &check.warnings) {
            eprintln!("warning: {warning}");
        }
    }
    for check in &checks {
        if check.is_ok() {
            if !quiet {
                eprintln!(
                    "Verified {}: {} variant(s), {} file(s), {}",
                    check.label(),
                    check.variants.len(),
                    check.file_count(),
                    human_bytes(check.total_bytes())
                );
            }
            continue;
        }
        failed += 1;
        for problem in &check.problems {
            problems += 1;
            needs_lock |= !problem.fixed_by_download();
            println!("{}: {problem}", check.label());
        }
    }
    if failed == 0 {
        if !quiet {
            let files: usize = checks.iter().map(|c| c.file_count()).sum();
            let bytes: u64 = checks.iter().map(|c| c.total_bytes()).sum();
            eprintln!(
                "All {} kernel(s) verified: {files} file(s), {}",
                checks.len(),
                human_bytes(bytes)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut help = format!(
        "repair the cache with `kernels download {}{}`",
        shell_path(&args.project_dir),
        args.select.flags()
    );
    if needs_lock {
        help.push_str("; variants without a hash need `kernels lock` first");
    }
    Err(VerifyFailed {
        problems,
        kernels: failed,
        total: checks.len(),
        help,
    }
    .into())
}
