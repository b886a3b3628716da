//! `kernels cache`: where the cache is, what it holds, and removing leftovers.

use kernels_types::CommitId;
use kernels_types::text::escape;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use super::args::OutputFormat;
use super::json::{CacheLsDoc, CacheVersionsDoc};
use super::printer::Printer;
use super::progress::human_bytes;
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use kernels_cache::HubCache;
use kernels_cache::inventory::{self, PruneOptions};

/// Arguments of `kernels cache`.
#[derive(Debug, clap::Args)]
pub struct CacheCmdArgs {
    #[command(subcommand)]
    command: CacheCommand,

    /// `--cache-dir` (before or after the subcommand).
    #[command(flatten)]
    pub cache: super::args::CacheArgs,
}

#[derive(Debug, clap::Subcommand)]
enum CacheCommand {
    /// Print the cache directory, and on stderr which variable chose it.
    Dir,
    /// List the cached repositories with their revisions, refs, sizes and build variants.
    Ls {
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
        /// Print reference 0.19.1's `kernels cache ls --json` document instead:
        /// the kernel repositories with `vN` refs, their sizes, times (seconds
        /// since the epoch) and variants.
        #[arg(long, conflicts_with = "format")]
        json: bool,
    },
    /// Remove partial downloads (`.incomplete`), blobs no snapshot links to,
    /// and the runtime's receipts (`.verified-kernels/`) of variants no longer
    /// in the cache.
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
pub fn run(args: CacheCmdArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let cache = settings.cache();
    match args.command {
        CacheCommand::Dir => {
            printer.data(cache.root().display());
            printer.status(format_args!("(chosen by {})", settings.cache_dir_source));
        }
        CacheCommand::Ls { json: true, .. } => ls_versions(&cache, printer)?,
        CacheCommand::Ls { format, .. } => ls(&cache, format, printer)?,
        CacheCommand::Prune {
            keep_locked,
            dry_run,
        } => prune(&cache, keep_locked, dry_run, printer)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A path of the cache as printed: its folder and file names come from
/// whatever wrote the cache, so control and bidirectional characters are
/// shown escaped ([`kernels_types::text::escape`]), as server text is.
fn shown(path: &std::path::Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

/// `kernels cache ls`: every repository with its size and revisions.
fn ls(cache: &HubCache, format: OutputFormat, printer: &Printer) -> miette::Result<()> {
    let repos = inventory::list(cache)?;
    if format == OutputFormat::Json {
        printer.json(&CacheLsDoc {
            schema: 1,
            command: "cache ls",
            cache_dir: cache.root(),
            repos: &repos,
        });
        return Ok(());
    }
    for repo in &repos {
        let partial = if repo.incomplete > 0 {
            format!(", {} partial", human_bytes(repo.incomplete))
        } else {
            String::new()
        };
        printer.data(format_args!(
            "{} ({}): {}{partial}",
            escape(&repo.repo_id),
            escape(&repo.repo_type),
            human_bytes(repo.size)
        ));
        for rev in &repo.revisions {
            let refs = if rev.refs.is_empty() {
                String::new()
            } else {
                format!(" [{}]", escape(&rev.refs.join(", ")))
            };
            printer.data(format_args!(
                "  {}{refs}: {}, {}",
                rev.commit,
                super::progress::plural(rev.files, "file"),
                human_bytes(rev.size)
            ));
            for variant in &rev.variants {
                printer.data(format_args!("    {}", escape(variant)));
            }
        }
    }
    if repos.is_empty() {
        printer.status(format_args!(
            "The cache {} holds no repository",
            cache.root().display()
        ));
    }
    Ok(())
}

/// `kernels cache ls --json`: reference 0.19.1's document, the resolved
/// cache directory and its versioned kernel repositories.
fn ls_versions(cache: &HubCache, printer: &Printer) -> miette::Result<()> {
    let root = fs_err::canonicalize(cache.root()).unwrap_or_else(|_| cache.root().to_owned());
    printer.json(&CacheVersionsDoc {
        cache_dir: &root,
        repos: &inventory::versioned(cache)?,
    });
    Ok(())
}

/// `kernels cache prune`: removes leftovers (and, with `--keep-locked`, every
/// snapshot the project's lock does not pin); prints each removed path.
fn prune(
    cache: &HubCache,
    keep_locked: Option<PathBuf>,
    dry_run: bool,
    printer: &Printer,
) -> miette::Result<()> {
    let keep_only = match keep_locked {
        None => None,
        Some(project) => Some(locked_snapshots(project)?),
    };
    let report = inventory::prune(cache, &PruneOptions { keep_only, dry_run })?;
    let verb = if dry_run { "Would remove" } else { "Removed" };
    for path in report
        .snapshots
        .iter()
        .chain(&report.refs)
        .chain(&report.incomplete)
        .chain(&report.blobs)
        .chain(&report.runtime_receipts)
    {
        printer.data(shown(path));
    }
    for path in &report.busy {
        printer.error(format_args!(
            "warning: {} is in use by another process; left alone",
            shown(path)
        ));
    }
    printer.status(format_args!(
        "{verb} {}, {}, {}: {}",
        super::progress::plural(report.snapshots.len(), "snapshot"),
        super::progress::plural(report.incomplete.len(), "partial download"),
        super::progress::plural(report.blobs.len(), "unreferenced blob"),
        human_bytes(report.freed)
    ));
    Ok(())
}

/// The `(folder, commit)` snapshots the lock of `project` pins, under either
/// folder prefix (the runtime era decides which one holds the kernel).
fn locked_snapshots(project: PathBuf) -> miette::Result<BTreeSet<(String, CommitId)>> {
    let path = project.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&path)? {
        return Err(NoLock(project).into());
    }
    let lock = Lockfile::read(&path)?;
    let mut keep = BTreeSet::new();
    for kernel in lock.locked_kernels(&path)? {
        for kind in ["kernel", "model"] {
            keep.insert((kernel.repo_id.folder_name(kind), kernel.commit.clone()));
        }
    }
    Ok(keep)
}
