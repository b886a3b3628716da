//! `kernels verify`.

use std::path::PathBuf;
use std::process::ExitCode;

use super::progress::{first_fitting, human_bytes, line_width, plural};
use crate::cli::settings::Settings;
use crate::install::verify::verify_kernels;

use super::download::{SelectArgs, read_lock, shell_path};

/// Arguments of `kernels verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Project directory holding `kernels.lock`. Default: `--project`, else the nearest
    /// directory from the current one upwards whose `pyproject.toml` has
    /// `[tool.kernels]`, else `.`.
    #[arg(value_name = "PROJECT_DIR")]
    pub project_arg: Option<PathBuf>,

    /// The project directory in use (set from `project_arg`, `--project` or
    /// discovery before the command runs).
    #[arg(skip)]
    pub project_dir: PathBuf,

    /// Which variants to check (the same selection as `kernels download`).
    #[command(flatten)]
    pub select: SelectArgs,

    /// Output format (on stdout): every problem as a line, or one JSON document.
    #[arg(long, value_enum, default_value_t = super::OutputFormat::Text)]
    pub format: super::OutputFormat,

    /// `--locked` / `--frozen`.
    #[command(flatten)]
    pub lock_mode: super::LockModeArgs,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::CacheArgs,
}

/// `kernels verify` found differences between the lock and the cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{} in {kernels} of {}: the cache does not match kernels.lock", plural(*problems, "problem"), plural(*total, "kernel"))]
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
    let json = args.format == super::OutputFormat::Json;
    let quiet = quiet || json;
    let (kernels, selection, repo_type) = match read_lock(&args.project_dir, &args.select, quiet) {
        Ok(read) => (read.kernels, read.selection, read.repo_type),
        Err(report) => {
            if json {
                print_failure(settings, &report);
            }
            return Err(report);
        }
    };
    let cache = settings.cache();
    let checks = verify_kernels(&cache, repo_type, &kernels, &selection);
    if json {
        let ok = checks.iter().all(|c| c.is_ok());
        let doc = serde_json::json!({
            "schema": 1,
            "command": "verify",
            "ok": ok,
            "cache_dir": settings.cache_dir,
            "kernels": checks.iter().map(|check| serde_json::json!({
                "repo_id": check.repo_id.to_string(),
                "commit": check.commit,
                "ok": check.is_ok(),
                "variants": check.variants.keys().collect::<Vec<_>>(),
                "files": check.file_count(),
                "bytes": check.total_bytes(),
                "problems": check.problems.iter().map(|p| serde_json::json!({
                    "problem": problem_kind(p),
                    "message": p.to_string(),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "warnings": checks.iter().flat_map(|c| &c.warnings).map(|w| w.to_string()).collect::<Vec<_>>(),
            "error": null,
        });
        println!("{doc:#}");
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let mut problems = 0;
    let mut failed = 0;
    let mut needs_lock = false;
    if !quiet {
        for warning in checks.iter().flat_map(|check| &check.warnings) {
            eprintln!("warning: {warning}");
        }
    }
    for check in &checks {
        if !check.copies.is_empty() && !quiet {
            eprintln!(
                "note: {}: {} file(s) are copies instead of links to blobs (verified by content): {}",
                check.label(),
                check.copies.len(),
                check.copies.join(", ")
            );
        }
        if check.is_ok() {
            if !quiet {
                let (label, size) = (check.label(), human_bytes(check.total_bytes()));
                let variants = plural(check.variants.len(), "variant");
                let line = first_fitting(
                    &[
                        format!(
                            "Verified {label}: {variants}, {}, {size}",
                            plural(check.file_count(), "file")
                        ),
                        format!("Verified {label}: {variants}, {size}"),
                        format!("{label}: {size}"),
                    ],
                    line_width(),
                );
                eprintln!("{line}");
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
                "Verified {}: {}, {}",
                plural(checks.len(), "kernel"),
                plural(files, "file"),
                human_bytes(bytes)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut help = format!(
        "repair the cache with:\n\n    kernels download {}{}",
        shell_path(&args.project_dir),
        args.select.flags()
    );
    if needs_lock {
        help.push_str("\n\nvariants without a hash need `kernels lock` first");
    }
    Err(VerifyFailed {
        problems,
        kernels: failed,
        total: checks.len(),
        help,
    }
    .into())
}

/// The `--format json` document of a verification that could not start (the
/// lock stale or missing, torch not found): still one document, the failure
/// typed in `error`.
pub(super) fn print_failure(settings: &Settings, report: &miette::Report) {
    let doc = serde_json::json!({
        "schema": 1,
        "command": "verify",
        "ok": false,
        "cache_dir": settings.cache_dir,
        "kernels": [],
        "warnings": [],
        "error": super::causes::error_json(report),
    });
    println!("{doc:#}");
}

/// The problem's kind as a stable snake_case name (`dangling_link`, …): its
/// variant name.
pub(super) fn problem_kind(problem: &crate::install::verify::Problem) -> String {
    let debug = format!("{problem:?}");
    let name = debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default();
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
