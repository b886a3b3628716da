//! `kernels check` of local builds: each locked kernel with a local build
//! (`LOCAL_KERNELS`, or a `pyproject.toml` `path`) is imported a second time,
//! from that build, in its own run of the project's interpreter, through the
//! runtime's `get_kernel` with `LOCAL_KERNELS` set (what the application's
//! `get_kernel` loads), while the first run imports the locked commit (what
//! `load_kernel(lockfile=…)` and `get_locked_kernel` load).

use std::path::Path;

use crate::check::{ImportInputs, ImportRun, ImportTarget, import_kernels};
use crate::cli::json::LocalSourcesDoc;
use crate::cli::settings::Settings;
use crate::lock::format::LockedKernel;
use crate::variant::VariantSelection;

/// The local builds of a check and their imports.
pub(super) struct LocalCheck {
    /// Which kernels have one and where.
    pub sources: LocalSourcesDoc,
    /// The `LOCAL_KERNELS` value the interpreter ran with.
    pub value: String,
    /// The import run of the local builds.
    pub run: ImportRun,
}

/// A local build that cannot be imported: missing, or without a variant for
/// this environment.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{0}")]
#[diagnostic(
    code(kernels::local::unusable),
    help(
        "build the kernel for this environment (kernel-builder writes `build/<variant>/`), correct the path, or unset LOCAL_KERNELS / remove the `path` to check the locked commit alone"
    )
)]
pub(super) struct Unusable(String);

/// Imports the local builds of `kernels` (the lock, in order); `None` when
/// none has one.
///
/// # Errors
/// A malformed `LOCAL_KERNELS`, an unusable local build, or an interpreter
/// that cannot run.
pub(super) fn import_local(
    settings: &Settings,
    project_dir: &Path,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
    inputs: &ImportInputs<'_>,
) -> miette::Result<Option<LocalCheck>> {
    let choice_env = match selection {
        VariantSelection::Detected { env, rules } => Some((&**env, *rules)),
        _ => None,
    };
    let sources = crate::cli::project::local::gather(settings, project_dir, kernels, choice_env)?;
    if sources.kernels.is_empty() {
        return Ok(None);
    }
    let mut targets = Vec::new();
    for source in &sources.kernels {
        if let Some(error) = &source.error {
            return Err(Unusable(error.clone()).into());
        }
        let Some(variant) = &source.variant else {
            return Err(Unusable(format!(
                "{}: no variant of {} can be chosen without a detected torch",
                source.repo_id,
                source.path.display()
            ))
            .into());
        };
        let Some((position, kernel)) = kernels
            .iter()
            .enumerate()
            .find(|(_, k)| k.repo_id.to_string() == source.repo_id)
        else {
            continue;
        };
        targets.push(ImportTarget::local(
            position,
            kernel.repo_id.clone(),
            kernel.commit.clone(),
            variant,
        ));
    }
    let value = sources
        .local_kernels_value
        .clone()
        .or_else(|| settings.local_kernels.clone())
        .unwrap_or_default();
    let run = import_kernels(
        &ImportInputs {
            local_kernels: Some(&value),
            ..*inputs
        },
        targets,
    )?;
    Ok(Some(LocalCheck {
        sources,
        value,
        run,
    }))
}
