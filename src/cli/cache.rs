//! `kernels cache`: where the cache is, what it holds, and removing leftovers.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use super::OutputFormat;
use super::progress::human_bytes;
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use kernels_cache::inventory::{self, PruneOptions};

/// Arguments of `kernels cache`.
#[derive(Debug, clap::Args)]
pub struct CacheCmdArgs {
    #[command(subcommand)]
    command: CacheCommand,

    /// `--cache-dir` (before or after the subcommand).
    #[command(flatten)]
    pub cache: super::CacheArgs,
}

#[derive(Debug, clap::Subcommand)]
enum CacheCommand {
    /// Print the cache directory, and on stderr which variable chose it.
    Dir,
    /// List the cached repositories with their revisions, refs and sizes.
    Ls {
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Remove partial downloads (`.incomplete`) and blobs no snapshot links to.
    ///
    /// A file whose blob lock another process holds is left alone.
    Prune {
        /// Also remove the snapshots of the kernels locked by the project in
        /// PROJECT that its `kernels.lock` does not pin (other repositories
        /// are left alone), with their refs and blobs.
        #[arg(long, value_name = "PROJECT")]
        keep_locked: Option<PathBuf>,
        /// Only print what would be removed.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("no kernels.lock in {}", .0.display())]
#[diagnostic(
    code(kernels::cache::no_lock),
    help("`--keep-locked` needs a project directory with a kernels.lock")
)]
struct NoLock(PathBuf);

/// Runs `kernels cache …`.
pub fn run(args: CacheCmdArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let cache = settings.cache();
    match args.command {
        CacheCommand::Dir => {
            println!("{}", cache.root().display());
            if !quiet {
                eprintln!("(chosen by {})", settings.cache_dir_source);
            }
        }
        CacheCommand::Ls { format } => {
            let repos = inventory::list(&cache)?;
            match format {
                OutputFormat::Json => {
                    let doc = serde_json::json!({
                        "schema": 1,
                        "command": "cache ls",
                        "cache_dir": cache.root(),
                        "repos": repos,
                    });
                    println!("{doc:#}");
                }
                OutputFormat::Text => {
                    for repo in &repos {
                        let partial = if repo.incomplete > 0 {
                            format!(", {} partial", human_bytes(repo.incomplete))
                        } else {
                            String::new()
                        };
                        println!(
                            "{} ({}): {}{partial}",
                            repo.repo_id,
                            repo.repo_type,
                            human_bytes(repo.size)
                        );
                        for rev in &repo.revisions {
                            let refs = if rev.refs.is_empty() {
                                String::new()
                            } else {
                                format!(" [{}]", rev.refs.join(", "))
                            };
                            println!(
                                "  {}{refs}: {}, {}",
                                rev.commit,
                                super::progress::plural(rev.files, "file"),
                                human_bytes(rev.size)
                            );
                        }
                    }
                    if repos.is_empty() && !quiet {
                        eprintln!("The cache {} holds no repository", cache.root().display());
                    }
                }
            }
        }
        CacheCommand::Prune {
            keep_locked,
            dry_run,
        } => {
            let keep_only = match keep_locked {
                None => None,
                Some(project) => {
                    let path = project.join(LOCK_FILE_NAME);
                    if !path.is_file() {
                        return Err(NoLock(project).into());
                    }
                    let lock = Lockfile::read(&path)?;
                    let mut keep = BTreeSet::new();
                    for kernel in lock.locked_kernels(&path)? {
                        // Either folder prefix may hold the kernel (runtime era).
                        for kind in ["kernel", "model"] {
                            keep.insert((kernel.repo_id.folder_name(kind), kernel.commit.clone()));
                        }
                    }
                    Some(keep)
                }
            };
            let report = inventory::prune(&cache, &PruneOptions { keep_only, dry_run })?;
            let verb = if dry_run { "Would remove" } else { "Removed" };
            for path in report
                .snapshots
                .iter()
                .chain(&report.refs)
                .chain(&report.incomplete)
                .chain(&report.blobs)
            {
                println!("{}", path.display());
            }
            for path in &report.busy {
                eprintln!(
                    "warning: {} is in use by another process; left alone",
                    path.display()
                );
            }
            if !quiet {
                eprintln!(
                    "{verb} {}, {}, {}: {}",
                    super::progress::plural(report.snapshots.len(), "snapshot"),
                    super::progress::plural(report.incomplete.len(), "partial download"),
                    super::progress::plural(report.blobs.len(), "unreferenced blob"),
                    human_bytes(report.freed)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
