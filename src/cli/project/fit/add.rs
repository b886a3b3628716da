//! The warning `kernels add` gives at once when no build variant of the kernel
//! it locked suits the project's torch, instead of leaving it to the first
//! `kernels download` to fail.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cli::printer::Printer;
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, LockedKernel, Lockfile};
use crate::lock::profile::Profile;
use crate::variant::{ProjectPython, VariantSelection};
use kernels_hub::HubClient;
use kernels_types::repo_id::RepoId;

/// After `kernels add` locked `repo_id` in `project_dir`: when the project's
/// Python imports torch and no variant of the locked commit suits it (as
/// `kernels download` would choose for `profile`), one warning with what would
/// fit. Silent when torch cannot be detected, the run is offline, or the
/// variants cannot be listed: `add` succeeded, and `download` says the rest.
pub fn warn_if_nothing_fits(
    project_dir: &Path,
    repo_id: &RepoId,
    profile: &Profile,
    settings: &Settings,
    printer: &Printer,
) {
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    let Ok(env) = python.torch() else {
        return;
    };
    let Some(kernel) = locked(project_dir, repo_id) else {
        return;
    };
    let Some(names) = variant_names(&kernel, profile, settings, printer) else {
        return;
    };
    if names.is_empty() {
        return;
    }
    let selection = VariantSelection::Detected {
        env: Box::new(env),
        rules: crate::variant::VariantRules::of_profile(profile),
    };
    if let Err(err) = selection.select(&kernel.repo_id, &kernel.commit, &names) {
        printer.status(format_args!("warning: {err}"));
        if let Some(help) = miette::Diagnostic::help(&err) {
            printer.status(format_args!("  {help}"));
        }
    }
}

/// The lock entry of `repo_id` in the project's `kernels.lock`.
fn locked(project_dir: &Path, repo_id: &RepoId) -> Option<LockedKernel> {
    let path = project_dir.join(LOCK_FILE_NAME);
    let lock = Lockfile::read(&path).ok()?;
    let kernels = lock.locked_kernels(&path).ok()?;
    kernels.into_iter().find(|k| &k.repo_id == repo_id)
}

/// The variant directories of the locked commit: from the lock's variant
/// hashes, else (a `KernelLocks` lock) from the Hub's listing of `build/`.
fn variant_names(
    kernel: &LockedKernel,
    profile: &Profile,
    settings: &Settings,
    printer: &Printer,
) -> Option<BTreeSet<String>> {
    if let Some(hashes) = &kernel.variants {
        return Some(hashes.keys().cloned().collect());
    }
    if settings.offline {
        return None;
    }
    let client = HubClient::new(&settings.client_config(printer)).ok()?;
    let client = profile.hub_client(&client);
    let entries = crate::cli::project::client::runtime()
        .ok()?
        .block_on(client.list_tree(
            profile.repo_type,
            &kernel.repo_id,
            kernel.commit.as_str(),
            "build",
            false,
        ))
        .ok()?;
    Some(
        entries
            .iter()
            .filter(|e| !e.is_file())
            .filter_map(|e| e.path.strip_prefix("build/"))
            .map(str::to_owned)
            .collect(),
    )
}
