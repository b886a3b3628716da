//! `kernels add` and `kernels remove`: edit `[tool.kernels.dependencies]`, then
//! lock (sticky, so only the changed entries are resolved). When locking fails,
//! `pyproject.toml` and `kernels.lock` are put back byte for byte.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::GlobalArgs;
use super::args::{RepoTypeArgs, TargetRuntimeArgs};
use super::printer::Printer;
use super::project::edit::{Edit, edit_then_lock};
use super::project::locking::{self, LockRequest};
use super::project::profile::choose_profile;
use crate::cli::settings::Settings;
use crate::lock::edit::{
    EditError, EntryValue, add_dependency, check_support, default_value, parse_entry_value,
    remove_dependencies,
};
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::manifest::{MANIFEST_FILE_NAME, Manifest, ManifestError};
use crate::lock::profile::RequirementForms;
use kernels_types::repo_id::RepoId;

/// Arguments of `kernels add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// What to require: an integer `N` (branch `vN`) or a version specifier
    /// such as `>=0.1.2` (tags, runtimes ≤0.13). Default: the highest `vN`
    /// branch, else `>=X.Y.Z` of the highest release tag, in a form the target
    /// runtime reads.
    pub requirement: Option<String>,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Lock this repository even if its publisher is not a trusted kernel
    /// publisher (as `kernels lock --trust`); repeatable.
    #[arg(long = "trust", value_name = "REPO_ID")]
    pub trust: Vec<RepoId>,

    /// A local checkout of the kernel (a kernel-builder output) that `env`,
    /// `check`, `download --explain` and `benchmark` use while it is developed: written as
    /// `{ path = "DIR", version = … }`; the lock still pins the Hub version.
    #[arg(long, value_name = "DIR")]
    pub path: Option<std::path::PathBuf>,
}

/// Arguments of `kernels remove`.
#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// Kernel repositories to remove, `owner/name`.
    #[arg(required = true)]
    pub repo_ids: Vec<RepoId>,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,
}

fn read_manifest_text(project_dir: &Path) -> miette::Result<(PathBuf, String)> {
    let path = project_dir.join(MANIFEST_FILE_NAME);
    match fs_err::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Err(ManifestError::Missing { path }.into())
        }
        Err(source) => Err(ManifestError::Io { path, source }.into()),
    }
}

/// `kernels add`.
pub fn run_add(
    args: AddArgs,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let (path, text) = read_manifest_text(project_dir)?;
    let manifest = match Manifest::parse(&text, &path) {
        Ok(manifest) => Some(manifest),
        Err(ManifestError::NoDependencies { .. }) => None,
        Err(err) => return Err(err.into()),
    };
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let lock_format = fs_err::read_to_string(&lock_path)
        .ok()
        .and_then(|t| Lockfile::parse(&t, &lock_path).ok())
        .map(|l| l.format());
    let profile = choose_profile(
        project_dir,
        args.runtime.version(),
        manifest.as_ref().and_then(Manifest::target_runtime),
        lock_format,
        args.repo.repo_type,
        Some(forms_after_add(manifest.as_ref(), &args)),
        &printer.quiet_if(true),
    )?;
    let value = entry_value(&args, &profile, settings, printer)?;
    let (mut new_text, old) = add_dependency(&text, &path, &args.repo_id, &value)?;
    if let Some(dir) = &args.path {
        let entry = format!("`{}` --path {}", args.repo_id, dir.display());
        crate::local::LocalBuild::open(&project_dir.join(dir), &entry)?;
        new_text = crate::lock::edit::set_path(&new_text, &path, &args.repo_id, dir)?;
    }
    // The edited file must still be a valid manifest before anything is written.
    let new_manifest = Manifest::parse(&new_text, &path)?;
    let changed = requirement_of(manifest.as_ref(), &args.repo_id)
        .is_some_and(|before| Some(before) != requirement_of(Some(&new_manifest), &args.repo_id));
    let what = match &old {
        Some(old) if *old == value.to_string() => {
            format!("`{}` = {value} is already in", args.repo_id)
        }
        Some(old) => format!("Updated `{}` = {value} (was {old}) in", args.repo_id),
        None => format!("Added `{}` = {value} to", args.repo_id),
    };
    let status = [table_line(&what, &path)];
    let mut lock = LockRequest::for_project(project_dir);
    lock.target_runtime = args.runtime.target_runtime;
    lock.repo_type = args.repo.repo_type;
    lock.trust = args.trust;
    // A changed requirement relocks that entry as `kernels lock --breaking`
    // does (`-P`): its old commit may satisfy the new requirement too.
    if changed {
        lock.upgrade_package.push(args.repo_id.clone());
    }
    let edit = Edit {
        path: &path,
        old_text: &text,
        new_text: &new_text,
        status: &status,
    };
    let code = edit_then_lock(&edit, &lock_path, global, printer, || {
        locking::run_inner(lock, settings, global, printer)
    })?;
    if code == ExitCode::SUCCESS && !global.frozen {
        super::project::fit::add::warn_if_nothing_fits(
            project_dir,
            &args.repo_id,
            &profile,
            settings,
            printer,
        );
    }
    Ok(code)
}

/// What `manifest` asks for `repo_id`, when it lists it.
fn requirement_of<'a>(
    manifest: Option<&'a Manifest>,
    repo_id: &RepoId,
) -> Option<&'a crate::lock::requirement::Requirement> {
    manifest?
        .dependencies
        .iter()
        .find(|d| d.repo_id == *repo_id)
        .map(|d| &d.requirement)
}

/// The value `kernels add` writes: the requirement given (checked against the
/// runtime), else the newest version the Hub has for the runtime.
/// The requirement forms of the manifest once `args` is added: the other
/// dependencies' and the given requirement's (none given: the form the
/// profile then chooses), for a first lock's profile.
fn forms_after_add(manifest: Option<&Manifest>, args: &AddArgs) -> RequirementForms {
    let others = RequirementForms::of(
        manifest
            .into_iter()
            .flat_map(|m| &m.dependencies)
            .filter(|d| d.repo_id != args.repo_id)
            .map(|d| &d.requirement),
    );
    let given_string = args
        .requirement
        .as_deref()
        .and_then(|text| parse_entry_value(&args.repo_id, text).ok())
        .is_some_and(|value| matches!(value, EntryValue::Specifier(_)));
    RequirementForms {
        strings: others.strings || given_string,
    }
}

fn entry_value(
    args: &AddArgs,
    profile: &crate::lock::profile::Profile,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<crate::lock::edit::EntryValue> {
    let runtime = profile.runtime.map(|r| r.to_string());
    Ok(match &args.requirement {
        Some(text) => {
            let value = parse_entry_value(&args.repo_id, text)?;
            if let Err(error) = check_support(&args.repo_id, &value, profile.requirements, runtime)
            {
                return Err(with_refs_help(error, args, profile, settings, printer).into());
            }
            value
        }
        None => {
            if settings.offline {
                return Err(miette::miette!(
                    code = "kernels::add::offline",
                    help = "give the requirement (for example `kernels add REPO 1`) or go online",
                    "kernels add {} without a requirement asks the Hub for its versions, and this run is offline",
                    args.repo_id
                ));
            }
            let client = super::project::client::client_showing_retries(
                settings,
                printer,
                printer.lines_mode(),
            )?;
            let refs = super::project::client::runtime()?
                .block_on(client.list_refs(profile.repo_type, &args.repo_id))
                .map_err(|err| super::project::causes::hub_failure(err, settings))?;
            default_value(&args.repo_id, &refs, profile.requirements, runtime)?
        }
    })
}

/// An unsupported requirement's help from the repository's refs (as `kernels
/// lock` gives it), when the Hub answers; else the error as it is.
fn with_refs_help(
    mut error: EditError,
    args: &AddArgs,
    profile: &crate::lock::profile::Profile,
    settings: &Settings,
    printer: &Printer,
) -> EditError {
    let (EditError::UnsupportedRequirement { help, .. }, Some(runtime), Some(text)) =
        (&mut error, profile.runtime, &args.requirement)
    else {
        return error;
    };
    let Ok(requirement) = crate::lock::requirement::Requirement::parse_str(text.trim()) else {
        return error;
    };
    if settings.offline {
        return error;
    }
    let Ok(client) = kernels_hub::HubClient::new(&settings.client_config(printer)) else {
        return error;
    };
    let client = profile.hub_client(&client).single_attempt();
    let Ok(rt) = super::project::client::runtime() else {
        return error;
    };
    let Ok(refs) = rt.block_on(client.list_refs(profile.repo_type, &args.repo_id)) else {
        return error;
    };
    let tag = crate::lock::requirement::select_tag(&requirement, &refs.tags).ok();
    let pinnable = match &tag {
        Some(tag) if profile.transitive => {
            rt.block_on(crate::lock::project::every_variant_has_metadata(
                &client,
                profile,
                &args.repo_id,
                &tag.git_ref,
            ))
        }
        _ => true,
    };
    *help =
        crate::lock::support::refs_help(&args.repo_id, &requirement, runtime, &refs, |_| pinnable);
    error
}

/// `kernels remove`.
pub fn run_remove(
    args: RemoveArgs,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let (path, text) = read_manifest_text(project_dir)?;
    let (new_text, removed) = remove_dependencies(&text, &path, &args.repo_ids)?;
    Manifest::parse(&new_text, &path)?;
    let what = format!(
        "Removed {} from",
        removed
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let status = [table_line(&what, &path)];
    let mut lock = LockRequest::for_project(project_dir);
    lock.target_runtime = args.runtime.target_runtime;
    let edit = Edit {
        path: &path,
        old_text: &text,
        new_text: &new_text,
        status: &status,
    };
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    edit_then_lock(&edit, &lock_path, global, printer, || {
        locking::run_inner(lock, settings, global, printer)
    })
}

/// `{what} [tool.kernels.dependencies] of {path}`: the status line of `add`
/// and `remove`.
fn table_line(what: &str, path: &Path) -> String {
    format!("{what} [tool.kernels.dependencies] of {}", path.display())
}
