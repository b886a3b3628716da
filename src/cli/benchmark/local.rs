//! `kernels benchmark PATH`: a local build's own `benchmarks/` run against
//! the variant of it the runtime would load here (the environment the
//! project's torch reports, ranked by the target runtime's rules), without
//! a lock and offline, reported as a locked kernel's are.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{BenchmarkArgs, Entry, Subject, finish, needs_torch};
use crate::benchmark::scripts_in;
use crate::cli::args::ProjectArgs;
use crate::cli::printer::Printer;
use crate::cli::project::profile::{ProfileInputs, choose_profile_with};
use crate::cli::settings::Settings;
use crate::local::LocalBuild;
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::variant::{EnvOverrides, ProbeScope, ProjectPython, VariantRules};

/// A path given with other names or flags that pick Hub versions.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "kernels benchmark {path}: a local build is benchmarked alone, and {others} were given too"
)]
#[diagnostic(
    code(kernels::benchmark::path_alone),
    help(
        "run `kernels benchmark PATH` on its own to time the build's benchmarks/, or `kernels benchmark REPO --against PATH` to time it beside the locked version"
    )
)]
struct PathAlone {
    path: String,
    others: String,
}

/// A local build without a variant for this environment.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("kernels benchmark {path}: no variant for this environment ({env}); the build has {found}")]
#[diagnostic(
    code(kernels::benchmark::no_local_variant),
    help(
        "build the kernel for this environment (kernel-builder writes `build/<variant>/`), or run in the environment it was built for"
    )
)]
struct NoVariantHere {
    path: String,
    env: String,
    found: String,
}

/// A local build without benchmark scripts.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("kernels benchmark {path}: no benchmarks/benchmark*.py in {looked}")]
#[diagnostic(
    code(kernels::benchmark::no_local_benchmarks),
    help(
        "write the benchmarks in the kernel's source directory as `benchmarks/benchmark_<name>.py` (Benchmark subclasses, as published kernels ship them), or point at the kernel-builder output that has that folder"
    )
)]
struct NoBenchmarks {
    path: String,
    looked: String,
}

/// The one local build named, when one is: `None` without paths.
///
/// # Errors
/// [`PathAlone`] when a path comes with another name, `--version`,
/// `--revision` or `--against`.
pub(super) fn alone<'a>(
    args: &BenchmarkArgs,
    paths: &'a [PathBuf],
) -> miette::Result<Option<&'a Path>> {
    let Some(first) = paths.first() else {
        return Ok(None);
    };
    let mut others: Vec<String> = paths[1..]
        .iter()
        .map(|p| p.display().to_string())
        .chain(args.repos.iter().map(ToString::to_string))
        .collect();
    for (given, flag) in [
        (args.version.is_some(), "--version"),
        (args.revision.is_some(), "--revision"),
        (args.against.is_some(), "--against"),
    ] {
        if given {
            others.push(flag.to_owned());
        }
    }
    if !others.is_empty() {
        return Err(PathAlone {
            path: first.display().to_string(),
            others: others.join(", "),
        }
        .into());
    }
    Ok(Some(first))
}

/// Benchmarks the local build at `path` (see the module docs). Exit codes
/// as a locked kernel's benchmark.
///
/// # Errors
/// The path missing or holding no variant ([`crate::local::LocalError`]),
/// no variant for this environment, no benchmark scripts, torch not
/// importable.
pub(super) fn run(
    args: &BenchmarkArgs,
    path: &Path,
    project: &ProjectArgs,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let printer = &printer.quiet_if(args.format == crate::cli::args::OutputFormat::Json);
    let project_dir = &project.project_dir;
    let shown = path.display().to_string();
    let build = LocalBuild::open(path, &format!("kernels benchmark {shown}"))?;
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: args.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format: None,
            repo_type: args.repo.repo_type,
            python: &python,
            scope: ProbeScope::Torch,
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )?;
    let (env, _) = EnvOverrides::default()
        .resolve(&python)
        .map_err(|err| needs_torch(err.into()))?;
    let Some(variant) = build.choose(&env, VariantRules::of_profile(&profile)) else {
        let names: Vec<String> = build.variants().into_iter().map(|v| v.name).collect();
        return Err(NoVariantHere {
            path: shown,
            env: env.describe(),
            found: names.join(", "),
        }
        .into());
    };
    let scripts = scripts_of(path).map_err(|looked| NoBenchmarks {
        path: shown.clone(),
        looked,
    })?;
    let fallback = crate::local::layout::dir_name(path);
    let entry = Entry {
        subject: Subject::Local {
            path: path.to_owned(),
            package: crate::check::package_of(&variant.dir, &fallback),
            variant,
        },
        scripts,
        candidate: None,
        candidate_local: false,
    };
    let entries = [entry];
    let hint = format!(
        "the local build's variant is imported from {shown}; its scripts are its benchmarks/"
    );
    finish(args, &entries, Vec::new(), &python, settings, printer)?.exit(&hint)
}

/// The scripts of a local build: `benchmarks/benchmark*.py` of `path`, else
/// of the directory above it (`path` is its `build/`), else of the one above
/// that (`path` is a variant directory under `build/`). `Err` names the
/// directories looked in.
fn scripts_of(path: &Path) -> Result<Vec<PathBuf>, String> {
    let real = fs_err::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let dirs: Vec<&Path> = real.ancestors().take(3).collect();
    for dir in &dirs {
        let scripts = scripts_in(dir);
        if !scripts.is_empty() {
            return Ok(scripts);
        }
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(looked.join(", "))
}
