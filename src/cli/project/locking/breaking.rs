//! `kernels lock --breaking`: raise integer requirements to the newest major
//! that fits ([`crate::lock::breaking`]), rewrite `pyproject.toml` with
//! [`add_dependency`] (comments and formatting kept), then lock as `kernels
//! add` does ([`crate::cli::project::edit::edit_then_lock`]: both files are put back when
//! locking fails or is interrupted).

use std::process::ExitCode;

use super::LockRequest;
use crate::cli::GlobalArgs;
use crate::cli::printer::Printer;
use crate::cli::project::edit::{Edit, edit_then_lock};
use crate::cli::project::profile::choose_profile;
use crate::cli::settings::Settings;
use crate::lock::breaking::{FitFor, Raise, newest_major};
use crate::lock::edit::{EntryValue, add_dependency};
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::manifest::{Dependency, Manifest};
use crate::lock::profile::RequirementForms;
use crate::lock::project::MetadataCache;
use crate::lock::requirement::Requirement;
use crate::lock::sticky::Upgrade;
use kernels_cache::HubCache;
use kernels_types::metadata::KernelsVersion;

/// `kernels lock --breaking` (`request.breaking` set; `--check`, `--locked` and
/// `--frozen` already refused): prints one `Upgraded org/name N -> M` line per
/// raised requirement, then locks. When nothing is raised, `pyproject.toml`
/// is not touched and the lock runs as without `--breaking`.
pub fn run(
    mut request: LockRequest,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    request.breaking = false;
    let dir = request.project_dir.clone();
    let manifest = Manifest::read(&dir)?;
    let lock_path = dir.join(LOCK_FILE_NAME);
    let old_lock = Lockfile::read(&lock_path).ok();
    let only = match super::check_upgrade_packages(
        &Upgrade::Packages(request.upgrade_package.clone()),
        &manifest,
        old_lock.as_ref(),
        &lock_path,
    )? {
        Upgrade::Packages(repos) => repos,
        _ => Vec::new(),
    };
    let quiet = printer.quiet_if(request.format == crate::cli::args::OutputFormat::Json);
    let chosen: Vec<&Dependency> = manifest
        .dependencies
        .iter()
        .filter(|d| only.is_empty() || only.contains(&d.repo_id))
        .collect();
    if quiet.is_verbose() {
        for dep in chosen
            .iter()
            .filter(|d| !matches!(d.requirement, Requirement::Branch(_)))
        {
            quiet.status(format_args!(
                "note: {} requires {}; --breaking raises integer versions only, so it is left as it is",
                dep.repo_id, dep.requirement
            ));
        }
    }
    let raises = find_raises(
        &request,
        &manifest,
        &chosen,
        old_lock.as_ref(),
        settings,
        &quiet,
    )?;
    if raises.is_empty() {
        return super::run_inner(request, settings, global, printer);
    }
    let old_text: &str = &manifest.text;
    let mut new_text = old_text.to_owned();
    for raise in &raises {
        let value = EntryValue::Integer(raise.to);
        new_text = add_dependency(&new_text, &manifest.path, &raise.repo_id, &value)?.0;
    }
    Manifest::parse(&new_text, &manifest.path)?;
    let status: Vec<String> = raises.iter().map(ToString::to_string).collect();
    // A raised entry is resolved again, as `-P` would: a variant-hash lock
    // keeps a commit that the new major's branch also has (`v2` made from
    // `v1`), which would leave the lock on the old major.
    if !request.upgrade {
        for raise in &raises {
            if !request.upgrade_package.contains(&raise.repo_id) {
                request.upgrade_package.push(raise.repo_id.clone());
            }
        }
    }
    let edit = Edit {
        path: &manifest.path,
        old_text,
        new_text: &new_text,
        status: &status,
    };
    edit_then_lock(&edit, &lock_path, global, &quiet, || {
        super::run_inner(request, settings, global, &quiet)
    })
}

/// The raises of `chosen` (integer requirements only), in manifest order.
fn find_raises(
    request: &LockRequest,
    manifest: &Manifest,
    chosen: &[&Dependency],
    old_lock: Option<&Lockfile>,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<Vec<Raise>> {
    let profile = choose_profile(
        &request.project_dir,
        request.target_runtime.as_deref(),
        manifest.target_runtime(),
        old_lock.map(Lockfile::format),
        request.repo_type,
        Some(RequirementForms::of(
            manifest.dependencies.iter().map(|d| &d.requirement),
        )),
        &printer.quiet_if(true),
    )?;
    let targets = crate::cli::project::fit::lock::declared(&request.targets, manifest);
    let runtime = profile.runtime.map(|v| KernelsVersion {
        major: v.major,
        minor: v.minor,
        patch: v.patch,
    });
    let cache = MetadataCache::new(HubCache::new(&settings.cache_dir));
    let fit = FitFor {
        targets: &targets.list,
        runtime,
        cache: Some(&cache),
    };
    let client = crate::cli::project::client::client_showing_retries(
        settings,
        printer,
        printer.lines_mode(),
    )?;
    let client = profile.hub_client(&client);
    let mut raises = Vec::new();
    crate::cli::project::client::runtime()?.block_on(async {
        for dep in chosen {
            let Requirement::Branch(from) = dep.requirement else {
                continue;
            };
            let newest = newest_major(&client, profile.repo_type, &dep.repo_id, from, &fit)
                .await
                .map_err(|err| crate::cli::project::causes::lock_failure(err, settings))?;
            if let Some(to) = newest {
                raises.push(Raise {
                    repo_id: dep.repo_id.clone(),
                    from,
                    to,
                });
            }
        }
        cache.flush().await;
        Ok::<_, miette::Report>(())
    })?;
    Ok(raises)
}
