//! `kernels verify PATH` where `PATH` is a local build (no `pyproject.toml`
//! or `kernels.lock` of its own, and a layout the runtime accepts): every
//! variant checked as a published one would be ([`crate::local::check`])
//! against the targets of the project around the current directory (its
//! `[tool.kernels]` targets, the flags, the GPU), the variant the runtime
//! loads for this environment marked. Exit 1 when the variant loaded here
//! (or, without torch, every variant) is refused, or a digest or archive is
//! wrong. When the project declares targets (`[[tool.kernels.targets]]`
//! naming `torch` and a `backend`), the variant the runtime would select
//! for each is checked with that target's GPUs, as `kernels download`
//! selects per declared target; then those targets decide: exit 1 naming
//! each one refused or without a variant.

use std::path::Path;
use std::process::ExitCode;

use super::VerifyArgs;
use crate::cli::printer::Printer;
use crate::cli::progress::plural;
use crate::cli::project::profile::{ProfileInputs, choose_profile_with};
use crate::local::check::{DigestState, VariantCheck, check_build};
use crate::local::{LocalBuild, LocalError};
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings, discover_project};
use crate::variant::{EnvOverrides, ProbeScope, ProjectPython};

/// A local build that would not load, or whose files differ from its digest.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{path}: {what}")]
#[diagnostic(
    code(kernels::verify::local_build),
    help(
        "rebuild the kernel for the targets (kernel-builder's `build-and-copy`), or check it for another environment with `--torch-version`/`--cuda-version` and `--cuda-capability`"
    )
)]
struct LocalBuildRefused {
    path: String,
    what: String,
}

/// The local build at `dir`, when it is one and not a project: `Some` with
/// its variants, `None` for a project directory.
pub(super) fn local_build(dir: &Path) -> Option<Result<LocalBuild, LocalError>> {
    if dir.join(MANIFEST_FILE_NAME).exists() || dir.join("kernels.lock").exists() {
        return None;
    }
    match LocalBuild::open(dir, "kernels verify PATH") {
        // Not a build, or not readable as one: the project path reports it
        // (an unreadable project names its lock and the permission).
        Err(LocalError::NoVariant { .. } | LocalError::Missing { .. } | LocalError::Io { .. }) => {
            None
        }
        other => Some(other),
    }
}

/// Verifies `build` (see the module docs).
pub(super) fn run(
    build: &LocalBuild,
    args: &VerifyArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let here = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let project = discover_project(&here).unwrap_or(here);
    let python =
        ProjectPython::for_project(&project, crate::cli::settings::virtual_env().as_deref())
            .with_modules(kernels_types::python_depends::ALL_MODULES);
    let manifest_path = project.join(MANIFEST_FILE_NAME);
    let tool = ToolSettings::read(&project).ok().flatten();
    let overrides = overrides_for(args, tool.as_ref(), &manifest_path);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir: &project,
            option: args.select.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format: None,
            repo_type: args.select.repo.repo_type,
            python: &python,
            scope: ProbeScope::torch_if(overrides.needs_python()),
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )?;
    let rules = crate::variant::VariantRules::of_profile(&profile);
    let torch = overrides.resolve_for(&python, rules.generation).ok();
    let chosen = torch.as_ref().and_then(|(env, _)| build.choose(env, rules));
    let probe = overrides
        .needs_python()
        .then(|| python.probe(ProbeScope::Torch).ok())
        .flatten();
    let policy = crate::cli::project::fit::for_project(
        &project,
        &args.select.targets.targets(),
        probe,
        profile.runtime,
    );
    let checks = check_build(build, chosen.as_ref(), &policy.context());
    print_text(printer, build, &checks, &policy.targets.to_string());
    let shown = build.path.display().to_string();
    if let Some(tool) = &tool {
        let flags = args.select.targets.targets();
        let context = policy.context();
        let declared = Declared {
            tool,
            path: &manifest_path,
            rules,
            flags: &flags,
            context: &context,
        };
        if let Some(refused) = declared.check(build, printer) {
            return finish_declared(&shown, &refused, &checks);
        }
    }
    finish_here(shown, torch.is_some(), chosen.is_some(), &checks)
}

/// The environment flags of `args` on top of the single target the project's
/// manifest at `manifest_path` declares, if it declares one.
fn overrides_for(
    args: &VerifyArgs,
    tool: Option<&ToolSettings>,
    manifest_path: &Path,
) -> EnvOverrides {
    args.select
        .env
        .overrides()
        .with_declared(ToolSettings::declared_target_at(tool, manifest_path))
}

/// The verdict without declared targets: this machine's environment decides
/// (`has_torch`: it was resolved; `has_chosen`: the runtime would load a
/// variant of the build for it), else every variant does; wrong files
/// always refuse.
///
/// # Errors
///
/// [`LocalBuildRefused`] naming `shown` when the environment has no
/// variant, when every variant judged is refused, or when any variant's
/// files are wrong.
fn finish_here(
    shown: String,
    has_torch: bool,
    has_chosen: bool,
    checks: &[VariantCheck],
) -> miette::Result<ExitCode> {
    let judged: Vec<&VariantCheck> = if has_chosen {
        checks.iter().filter(|c| c.chosen).collect()
    } else {
        checks.iter().collect()
    };
    if has_torch && !has_chosen {
        return Err(LocalBuildRefused {
            path: shown,
            what: "no variant for this environment in any layout the runtime accepts".into(),
        }
        .into());
    }
    if judged.iter().all(|c| !c.ok()) || checks.iter().any(bad_files) {
        return Err(LocalBuildRefused {
            path: shown,
            what: if has_chosen {
                "the variant the runtime loads here is refused or its files are wrong (above)"
                    .into()
            } else {
                "no variant would load for the targets, or files are wrong (above)".into()
            },
        }
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

/// The declared targets of the project around the current directory, as
/// `kernels verify PATH` checks a local build for each.
struct Declared<'a> {
    tool: &'a ToolSettings,
    /// Its `pyproject.toml`.
    path: &'a Path,
    rules: crate::variant::VariantRules,
    /// `--cuda-capability`/`--rocm-arch`: the GPUs of every target when given.
    flags: &'a [kernels_types::fit::Target],
    /// The fit context of the run (target runtime, modules).
    context: &'a kernels_types::fit::FitContext<'a>,
}

impl Declared<'_> {
    /// Selects the build's variant for each declared target that is an
    /// environment (as `kernels download` does) and checks it with that
    /// target's GPUs; prints one line per target. `None` without such
    /// targets; else the labels of the targets refused (empty: all fit).
    fn check(&self, build: &LocalBuild, printer: &Printer) -> Option<Vec<String>> {
        let (envs, _) = crate::cli::project::declared::declared_envs(self.tool, self.path);
        if envs.is_empty() {
            return None;
        }
        printer.data(format_args!("Declared targets ({}):", self.path.display()));
        let mut refused = Vec::new();
        for (index, target) in self.tool.declared.iter().enumerate() {
            let key = format!("targets[{}]", index + 1);
            let Some(env) = envs.iter().find(|e| e.key == key) else {
                continue;
            };
            let name = format!("{key} ({})", env.label);
            let Some(variant) = build.choose(&env.env, self.rules) else {
                printer.data(format_args!(
                    "  {name}: refused: no variant of the build for it"
                ));
                refused.push(name);
                continue;
            };
            let gpus = if self.flags.is_empty() {
                &target.gpus
            } else {
                self.flags
            };
            let context = kernels_types::fit::FitContext {
                targets: gpus,
                ..*self.context
            };
            let check = crate::local::check::check_variant(variant, true, &context);
            let verdict = match (&check.metadata_error, check.refusals.is_empty()) {
                (Some(err), _) => format!("refused: metadata.json: {err}"),
                (None, true) => "fits".to_owned(),
                (None, false) => format!("refused: {}", check.refusals.join("; ")),
            };
            printer.data(format_args!(
                "  {name}: {} ({}): {verdict}",
                check.variant.name,
                check.variant.layout.describe()
            ));
            if !check.ok() {
                refused.push(name);
            }
        }
        Some(refused)
    }
}

/// The verdict with declared targets: they decide (not this machine's
/// environment), with the files of every variant.
fn finish_declared(
    shown: &str,
    refused: &[String],
    checks: &[VariantCheck],
) -> miette::Result<ExitCode> {
    if !refused.is_empty() {
        return Err(LocalBuildRefused {
            path: shown.to_owned(),
            what: format!(
                "refused for the declared {} {} (above), as a Hub build would be",
                if refused.len() == 1 {
                    "target"
                } else {
                    "targets"
                },
                refused.join(", ")
            ),
        }
        .into());
    }
    if checks.iter().any(bad_files) {
        return Err(LocalBuildRefused {
            path: shown.to_owned(),
            what: "files are wrong (above)".into(),
        }
        .into());
    }
    Ok(ExitCode::SUCCESS)
}

/// A digest mismatch or a broken archive: wrong whichever variant loads.
fn bad_files(check: &VariantCheck) -> bool {
    matches!(check.digest, DigestState::Mismatch { .. }) || matches!(check.archive, Some(Err(_)))
}

fn print_text(printer: &Printer, build: &LocalBuild, checks: &[VariantCheck], targets: &str) {
    printer.data(format_args!("Local build: {}", build.path.display()));
    printer.data(format_args!("Targets: {targets}"));
    for check in checks {
        let variant = &check.variant;
        let mark = if check.chosen { " (loaded here)" } else { "" };
        let verdict = match (&check.metadata_error, check.refusals.is_empty()) {
            (Some(err), _) => format!("refused: metadata.json: {err}"),
            (None, true) => "fits".to_owned(),
            (None, false) => format!("refused: {}", check.refusals.join("; ")),
        };
        printer.data(format_args!(
            "  {} ({}){mark}: {verdict}",
            variant.name,
            variant.layout.describe()
        ));
        for warning in &check.warnings {
            printer.data(format_args!("    warning: {warning}"));
        }
        match &check.digest {
            DigestState::Verified { files } => {
                printer.data(format_args!("    digest: {} match", plural(*files, "file")));
            }
            DigestState::Mismatch { problems } => {
                for problem in problems {
                    printer.data(format_args!("    digest: {problem}"));
                }
            }
            DigestState::Unreadable { reason } => {
                printer.data(format_args!("    digest: cannot hash: {reason}"));
            }
            DigestState::Absent => {}
        }
        match &check.archive {
            Some(Ok(archive)) => printer.data(format_args!("    archive: {}", archive.display())),
            Some(Err(err)) => printer.data(format_args!("    {err}")),
            None => {}
        }
    }
    let unsigned = checks
        .iter()
        .filter(|c| c.metadata_error.is_none() && c.digest == DigestState::Absent)
        .count();
    if unsigned > 0 {
        printer.status(format_args!(
            "note: {}: no digest in metadata.json of {}: their files are not checked, and nothing vouches for them",
            build.path.display(),
            plural(unsigned, "variant")
        ));
    }
}
