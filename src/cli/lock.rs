//! `kernels lock`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{GlobalArgs, OutputFormat};
use crate::cache::HubCache;
use crate::fs::write_atomic;
use crate::hub::HubClient;
use crate::hub::types::RepoType;
use crate::lock_check::{CheckReport, check_offline, diff_locks, text_diff};
use crate::lock_conflict;
use crate::lockfile::variant_hash::{self, KernelHashLock, VariantHash};
use crate::lockfile::{LOCK_FILE_NAME, LockFormat, Lockfile};
use crate::manifest::{Dependency, Manifest};
use crate::resolver::{ResolveError, ResolvedKernel, Resolver};
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

    /// Check that `kernels.lock` is up to date instead of writing it: exit 0 when it
    /// is, 1 with one explanation per entry when it is not. With `--offline`, no
    /// request is made: the check is structural, and entries whose versions only
    /// the Hub can confirm are reported as not checkable offline (exit 0).
    /// Ignores `KERNELS_FROZEN`.
    #[arg(long)]
    pub check: bool,
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

/// `kernels.lock` is frozen: `kernels lock` may not update it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} is frozen (--frozen or KERNELS_FROZEN): `kernels lock` does not update it", path.display())]
#[diagnostic(
    code(kernels::lock::frozen),
    help(
        "drop --frozen / unset KERNELS_FROZEN to update the lock, or use `kernels lock --check` to check it"
    )
)]
struct Frozen {
    path: PathBuf,
}

/// `--locked` was given and the lock is stale or missing.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} is not up to date with {} and --locked forbids updating it", lock.display(), manifest.display())]
#[diagnostic(
    code(kernels::lock::locked),
    help("run `kernels lock` to update it (the reasons are listed above)")
)]
struct StaleLocked {
    lock: PathBuf,
    manifest: PathBuf,
}

/// A fresh resolution of the manifest: the lock text `kernels lock` would write.
struct Resolution {
    /// Kernels resolved now (conflict-free entries of a conflicted lock are kept
    /// instead and are not in this list).
    resolved: Vec<ResolvedKernel>,
    /// Repo ids kept from a conflicted lock without resolving them again.
    kept: Vec<String>,
    /// The lock text.
    json: String,
}

/// Resolves every dependency of `manifest`, except those a conflicted lock agrees
/// on (`merged`), and builds the variant-hash lock text. Nothing is written.
fn resolve(
    manifest: &Manifest,
    settings: &Settings,
    repo_type: RepoType,
    merged: Option<&lock_conflict::Merged>,
) -> miette::Result<Resolution> {
    let kept_entry = |dep: &Dependency| {
        merged.and_then(|m| m.agreed.iter().find(|a| a.repo_id == dep.repo_id.as_str()))
    };
    let to_resolve: Vec<Dependency> = manifest
        .dependencies
        .iter()
        .filter(|dep| kept_entry(dep).is_none())
        .cloned()
        .collect();
    let client = HubClient::new(settings)?;
    let resolver = Resolver::new(client, repo_type);
    let results = super::runtime()?.block_on(resolver.resolve_all(&to_resolve));

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

    let mut kept = Vec::new();
    let locks: Vec<KernelHashLock> = manifest
        .dependencies
        .iter()
        .map(|dep| {
            if let Some(entry) = kept_entry(dep) {
                kept.push(entry.repo_id.clone());
                return entry.clone();
            }
            let kernel = resolved
                .iter()
                .find(|k| k.repo_id == dep.repo_id)
                .expect("every dependency not kept was resolved");
            KernelHashLock {
                repo_id: kernel.repo_id.to_string(),
                sha: kernel.commit.clone(),
                variants: kernel
                    .variants
                    .iter()
                    .map(|(name, hash)| (name.clone(), VariantHash::git_lfs_concat(hash.clone())))
                    .collect(),
            }
        })
        .collect();
    Ok(Resolution {
        resolved,
        kept,
        json: variant_hash::to_json(&locks),
    })
}

/// Prints a check report (text on stderr plus the would-be diff on stdout, or one
/// JSON document on stdout) and returns whether the lock is stale.
fn print_report(report: &CheckReport, global: &GlobalArgs, diff: Option<(&str, &str)>) -> bool {
    let stale = report.is_stale();
    if global.format == OutputFormat::Json {
        println!("{}", report.to_json());
        return stale;
    }
    if !global.quiet {
        eprint!("{}", report.render_text(global.verbose > 0));
        if let Some((old, new)) = diff.filter(|_| stale) {
            print!("{}", text_diff(old, new));
        }
    }
    let unverified = report.unverified().count();
    if stale && !global.quiet {
        eprintln!(
            "{} is not up to date: run `kernels lock` to update it",
            report.lock_file.display()
        );
    }
    if !stale && !global.quiet {
        if unverified > 0 {
            eprintln!(
                "note: {unverified} of {} entries of {} cannot be checked offline (the cache does not know their versions); every dependency is locked and no entry is extra. Run `kernels lock --check` without --offline to check versions{}",
                report.findings.len(),
                report.lock_file.display(),
                if global.verbose > 0 {
                    ""
                } else {
                    " (-v lists them)"
                }
            );
        } else {
            eprintln!("{} is up to date", report.lock_file.display());
        }
    }
    stale
}

/// The check half of `kernels lock --check`, `kernels lock --locked` and
/// `kernels download --locked`: offline structural check or online re-resolution.
/// Returns the report and, for the online check, the old and new lock texts.
fn freshness(
    project_dir: &Path,
    repo_type: RepoType,
    settings: &Settings,
) -> miette::Result<(CheckReport, Option<(String, String)>)> {
    let manifest = Manifest::read(project_dir)?;
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if settings.offline {
        let cache = HubCache::new(&settings.cache_dir);
        return Ok((
            check_offline(&manifest, &lock_path, None, &cache, repo_type),
            None,
        ));
    }
    let old = std::fs::read_to_string(&lock_path).ok();
    let resolution = resolve(&manifest, settings, repo_type, None)?;
    let report = diff_locks(&lock_path, old.as_deref(), &resolution.json);
    Ok((report, old.map(|old| (old, resolution.json))))
}

/// `--locked` for commands that use the lock (`kernels download`): fails when the
/// lock is missing or stale. A no-op without `--locked`.
pub fn ensure_locked(
    project_dir: &Path,
    repo_type: RepoType,
    settings: &Settings,
    global: &GlobalArgs,
) -> miette::Result<()> {
    if !global.locked {
        return Ok(());
    }
    let (report, diff) = freshness(project_dir, repo_type, settings)?;
    let diff = diff.as_ref().map(|(o, n)| (o.as_str(), n.as_str()));
    if print_report(&report, global, diff) {
        return Err(StaleLocked {
            lock: report.lock_file,
            manifest: project_dir.join(crate::manifest::MANIFEST_FILE_NAME),
        }
        .into());
    }
    Ok(())
}

/// Resolves `[tool.kernels.dependencies]` and writes `kernels.lock` in the
/// variant-hash format, atomically and only when its bytes change. Nothing is
/// written unless every dependency resolved. A lock with merge conflict markers is
/// repaired: entries both sides agree on are kept, the others resolved again.
/// With `--check` or `--locked` nothing is written and a stale lock exits 1.
/// Status goes to stderr; `--format json` prints what was resolved on stdout.
pub fn run(args: LockArgs, settings: &Settings, global: &GlobalArgs) -> miette::Result<ExitCode> {
    let quiet = global.quiet || global.format == OutputFormat::Json;
    let repo_type: RepoType = args.repo_type.into();
    let lock_path = args.project_dir.join(LOCK_FILE_NAME);
    if args.check || global.locked {
        let (report, diff) = freshness(&args.project_dir, repo_type, settings)?;
        let diff = diff.as_ref().map(|(o, n)| (o.as_str(), n.as_str()));
        let stale = print_report(&report, global, diff);
        return match (stale, args.check) {
            (false, _) => Ok(ExitCode::SUCCESS),
            (true, true) => Ok(ExitCode::from(1)),
            (true, false) => Err(StaleLocked {
                lock: lock_path,
                manifest: args.project_dir.join(crate::manifest::MANIFEST_FILE_NAME),
            }
            .into()),
        };
    }
    if global.frozen {
        return Err(Frozen { path: lock_path }.into());
    }
    let manifest = Manifest::read(&args.project_dir)?;
    let old = std::fs::read(&lock_path).ok();
    let merged = old
        .as_deref()
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| lock_conflict::merge(text, &lock_path));
    let Resolution {
        resolved,
        kept,
        json,
    } = resolve(&manifest, settings, repo_type, merged.as_ref())?;

    if !quiet {
        if let Some(merged) = &merged {
            eprintln!(
                "{} had merge conflicts in {}; kept the {} entries both sides agree on and resolved the rest again",
                lock_path.display(),
                if merged.conflicting.is_empty() {
                    "no entry".to_owned()
                } else {
                    merged.conflicting.join(", ")
                },
                kept.len()
            );
        }
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
    if global.format == OutputFormat::Json {
        let kernels: Vec<serde_json::Value> = resolved
            .iter()
            .map(|kernel| {
                serde_json::json!({
                    "repo_id": kernel.repo_id.to_string(),
                    "requirement": kernel.requirement.to_string(),
                    "chosen": kernel.chosen,
                    "commit": kernel.commit,
                    "variants": kernel.variants.keys().collect::<Vec<_>>(),
                    "warnings": kernel.warnings,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "schema": 1,
            "command": "lock",
            "lock_file": lock_path.display().to_string(),
            "format": "variant-hash",
            "written": !unchanged,
            "kernels": kernels,
            "kept": kept,
        });
        println!("{doc}");
    }
    Ok(ExitCode::SUCCESS)
}
