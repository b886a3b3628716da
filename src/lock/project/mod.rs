//! Locking a project for a target [`Profile`].
//!
//! * Variant-hash profiles (runtimes ≤0.16): every dependency is resolved to a
//!   commit and the `git_lfs_concat` hash of each build variant
//!   ([`crate::lock::resolver`]); bytecode is left out of the hashes from 0.16.
//! * `KernelLocks` profiles (0.17+): every dependency is resolved to a commit,
//!   then the `metadata.json` of every variant directory under `build/` of that
//!   commit is fetched (concurrently, through the resolve URLs) and each
//!   `kernel-depends` entry is locked too, depth first, as the reference does.
//!   A dependency that is reached again while it is being locked is a cycle,
//!   reported with its path. Before a repository is resolved, its publisher must
//!   be a trusted kernel publisher (`GET /api/organizations/<org>/overview`)
//!   unless the repository is on the allow list (`--trust`, `[tool.kernels]
//!   trust`); offline the check is skipped with a warning.
//!
//! Repository type fallback (reference issue #632): when the `kernel` API says a
//! repository does not exist, the `model` API is asked. If the repository exists
//! there, the error says so; with [`LockOptions::allow_model_repos`] the
//! repository is locked through the `model` API instead, with a warning.
//! The other way round, for profiles that read `model` repositories
//! (runtimes ≤0.13): a repository the `model` API no longer serves is asked
//! of the `kernel` API ([`crate::lock::profile::Profile::hub_client`]; the Hub
//! removes model-type kernel repositories from 2026-09-13), kept or resolved
//! there, with one warning naming every such repository.

mod depends;
mod error;
mod hashed;
mod locker;
mod outcome;
mod tree;

pub use depends::{
    MetadataCache, VariantMetadata, commit_depends, kernel_depends, lock_dependency,
    variant_metadata, variant_metadata_with,
};
pub use error::{Failure, LockError};
pub use outcome::{LockOptions, LockOutcome, Locked, NoVariants, RequiredBy};

use crate::lock::manifest::Manifest;
use crate::lock::profile::Profile;
use crate::lock::support::{
    RequirementWarning, UnsupportedRequirement, WarningKind, check_requirements,
    unsupported_with_refs,
};
use kernels_hub::HubClient;
use locker::Locker;

/// Resolves the manifest for `profile`; nothing is written.
pub async fn lock_project(
    client: &HubClient,
    profile: &Profile,
    manifest: &Manifest,
    options: &LockOptions,
) -> Result<LockOutcome, LockError> {
    let path = manifest.path.display().to_string();
    let client = &profile.hub_client(client);
    let mut warnings: Vec<String> = match check_requirements(profile, manifest) {
        Ok(warnings) => requirement_remarks(client, profile, manifest, warnings).await,
        Err(error) => return Err(unsupported_error(client, profile, manifest, error).await),
    };
    let locker = Locker {
        client,
        profile,
        options,
        metadata: options.cache.clone().map(MetadataCache::new),
    };
    let mut outcome = match profile.lock_format {
        crate::lock::format::LockFormat::VariantHash => locker.variant_hash(manifest).await?,
        crate::lock::format::LockFormat::KernelLocks => {
            if manifest.dependencies.is_empty() {
                return Err(LockError::NoKernels { path });
            }
            let outcome = locker.kernel_locks(manifest).await;
            if let Some(metadata) = &locker.metadata {
                metadata.flush().await;
            }
            outcome?
        }
    };
    warnings.append(&mut outcome.warnings);
    warnings.extend(profile.served_as_kernel_note(client, "locked"));
    warnings.extend(outcome.without_variants().iter().map(ToString::to_string));
    outcome.warnings = warnings;
    if !options.targets.is_empty() {
        if profile.lock_format == crate::lock::format::LockFormat::VariantHash {
            outcome.variants = locker.hashed_variants(&outcome).await;
        }
        let runtime = profile
            .runtime
            .map(|v| kernels_types::metadata::KernelsVersion {
                major: v.major,
                minor: v.minor,
                patch: v.patch,
            });
        outcome.fit = outcome
            .variants
            .iter()
            .flat_map(|kernel| crate::lock::fit::findings(kernel, &options.targets, runtime))
            .collect();
    }
    Ok(outcome)
}

/// The remarks about requirements, each integer it suggests checked against
/// the repository's refs (a hint must name a version that exists).
async fn requirement_remarks(
    client: &HubClient,
    profile: &Profile,
    manifest: &Manifest,
    warnings: Vec<RequirementWarning>,
) -> Vec<String> {
    let client = &client.single_attempt();
    let mut out = Vec::new();
    for warning in warnings {
        let dep = manifest
            .dependencies
            .iter()
            .find(|d| d.repo_id == warning.repo_id);
        let warning = match dep {
            Some(dep) if warning.kind == WarningKind::DeprecatedSpecifier => {
                let refs = client.list_refs(profile.repo_type, &dep.repo_id).await.ok();
                warning.with_refs(&dep.requirement, refs.as_ref())
            }
            _ => warning,
        };
        out.push(warning.to_string());
    }
    out
}

/// The error for a requirement the runtime does not read, its help checked
/// against the repository's refs when the Hub answers (a hint must name a
/// version that exists); without an answer the error is left as it is.
async fn unsupported_error(
    client: &HubClient,
    profile: &Profile,
    manifest: &Manifest,
    error: Box<UnsupportedRequirement>,
) -> LockError {
    let client = &client.single_attempt();
    let dep = manifest
        .dependencies
        .iter()
        .find(|d| d.repo_id == error.repo_id);
    let refs = match dep {
        Some(_) => client
            .list_refs(profile.repo_type, &error.repo_id)
            .await
            .ok(),
        None => None,
    };
    let (Some(dep), Some(refs)) = (dep, refs) else {
        return LockError::UnsupportedRequirement(error);
    };
    let tag = crate::lock::requirement::select_tag(&dep.requirement, &refs.tags).ok();
    let pinnable = match &tag {
        Some(tag) if profile.transitive => {
            every_variant_has_metadata(client, profile, &dep.repo_id, &tag.git_ref).await
        }
        _ => true,
    };
    LockError::UnsupportedRequirement(Box::new(unsupported_with_refs(
        manifest,
        dep,
        error.runtime,
        &refs,
        |_| pinnable,
    )))
}

/// Whether every build variant of `tag` has the `metadata.json` that runtimes
/// following kernel dependencies (0.17) need to lock it; false when the
/// listing cannot be read or there are no variants.
pub(crate) async fn every_variant_has_metadata(
    client: &HubClient,
    profile: &Profile,
    repo_id: &kernels_types::repo_id::RepoId,
    tag: &kernels_types::wire::GitRefInfo,
) -> bool {
    let commit = tag.target_commit.as_str();
    let Ok(entries) = client
        .list_tree(profile.repo_type, repo_id, commit, "build", true)
        .await
    else {
        return false;
    };
    let variants: Vec<&str> = entries
        .iter()
        .filter(|e| !e.is_file())
        .filter_map(|e| e.path.strip_prefix("build/"))
        .filter(|rest| !rest.contains('/'))
        .collect();
    let has = |v: &str| {
        let path = format!("build/{v}/metadata.json");
        entries.iter().any(|e| e.is_file() && e.path == path)
    };
    !variants.is_empty() && variants.iter().all(|v| has(v))
}
