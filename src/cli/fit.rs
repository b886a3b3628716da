//! The fit policy of `kernels env` and `kernels download --explain`
//! ([`crate::variant::FitPolicy`]): the targets from `--cuda-capability` /
//! `--rocm-arch`, else `[tool.kernels]`, else the GPU torch sees (the one
//! probe of the project's Python, which also says which allow-listed modules
//! it imports when asked to); the target runtime's release for
//! `kernels-minver`.

use std::path::Path;

use kernels_types::fit::Target;

use super::printer::Printer;
use super::profile::{ProfileInputs, choose_profile_with};
use crate::lock::format::LockFormat;
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::lock::profile::RuntimeVersion;
use crate::variant::{FitPolicy, ProbeScope, ProjectPython, PythonProbe, Targets};

/// The policy of a command in `project_dir`: `flags` first, then the
/// manifest's targets, then the GPU of `probe` (the project's Python, asked
/// once per command; `None`: not asked, and without flags or manifest targets
/// they are "not checked"). The probe's modules count for `python-depends`
/// when it asked for them. `runtime` is the target runtime's release.
pub fn policy(
    project_dir: &Path,
    flags: &[Target],
    probe: Option<&PythonProbe>,
    runtime: Option<RuntimeVersion>,
) -> FitPolicy {
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let declared = ToolSettings::read(project_dir)
        .ok()
        .flatten()
        .map(|t| t.targets)
        .unwrap_or_default();
    let targets = Targets::resolve(
        flags,
        Some((&declared, manifest_path.as_path())),
        probe.map(|p| &p.device),
    );
    FitPolicy {
        targets,
        runtime: runtime.map(FitPolicy::runtime_release),
        modules: probe
            .filter(|p| !p.modules.is_empty())
            .map(|p| p.modules.clone()),
    }
}

/// The policy of `kernels download --explain` for the lock in `project_dir`
/// (in `format`), chosen with `select`: the GPU is the one of the probe that
/// detected the environment (`python` is not started again; with the
/// environment given by flags, it was not asked). No target flags on
/// `download` yet: `[tool.kernels]` or the GPU.
pub fn for_lock(
    project_dir: &Path,
    select: &super::download::SelectArgs,
    format: LockFormat,
    python: &ProjectPython,
    printer: &Printer,
) -> miette::Result<FitPolicy> {
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: select.runtime.version(),
            manifest: tool
                .as_ref()
                .and_then(|t| t.target_runtime.as_deref())
                .map(|v| (v, manifest_path.as_path())),
            lock_format: Some(format),
            repo_type: select.repo.repo_type,
            python,
            scope: ProbeScope::Runtime,
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )?;
    let probe = python.probed().filter(|p| p.torch.is_ok());
    Ok(policy(project_dir, &[], probe, profile.runtime))
}
