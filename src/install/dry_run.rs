//! `kernels download --dry-run`: what a download would fetch, from metadata only.

use futures_util::future::join_all;
use serde::Serialize;

use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::CommitId;

use super::engine::{choose_fitting, report_warnings};
use super::error::DownloadError;
use super::options::DownloadOptions;
use super::plan::plan_kernel;
use super::report::KernelFailure;
use super::reporter::Reporter;
use super::verify::verify_kernels_fit;
use crate::lock::format::LockedKernel;
use crate::variant::VariantSelection;

/// JSON schema version of `kernels download --dry-run --format json`
/// (documented in `docs/offline-and-auth.md`).
pub const DRY_RUN_SCHEMA: u32 = 2;

/// One selected variant of a [`DryRunKernel`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DryRunVariant {
    /// Variant name (directory under `build/`).
    pub name: String,
    /// Files of the variant.
    pub files: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Files whose blob is already in the cache (present with the expected size).
    pub cached_files: usize,
    /// Size of those files in bytes.
    pub cached_bytes: u64,
}

/// What downloading one kernel would do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DryRunKernel {
    /// `owner/name`.
    pub repo_id: String,
    /// Locked commit (full).
    pub commit: CommitId,
    /// Selected variants, sorted by name.
    pub variants: Vec<DryRunVariant>,
    /// Distinct blobs that would be downloaded (files with identical content
    /// share one blob).
    pub download_files: usize,
    /// Bytes those blobs would transfer.
    pub download_bytes: u64,
    /// Candidate variants skipped because the target runtime would refuse
    /// them (or, with `--all-variants`, variants it would refuse), one entry
    /// per rule; left out when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<DryRunRefusal>,
    /// metadata.json files fetched into the cache to check the fit (the
    /// only content a dry run downloads); left out when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub metadata_fetched: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One rule a candidate variant breaks ([`super::fit`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DryRunRefusal {
    /// The variant.
    pub variant: String,
    /// The rule (`archs`, `kernels-minver`, `python-depends`).
    pub rule: &'static str,
    /// Why, naming the target.
    pub reason: String,
}

impl DryRunRefusal {
    /// One entry per rule of every refused variant of `fit`.
    pub fn of(fit: &super::fit::KernelFit) -> Vec<DryRunRefusal> {
        fit.refused
            .iter()
            .flat_map(|r| {
                r.refusals.iter().map(|refusal| DryRunRefusal {
                    variant: r.variant.clone(),
                    rule: refusal.rule(),
                    reason: refusal.to_string(),
                })
            })
            .collect()
    }
}

/// Plans every kernel without downloading content: online, one recursive tree
/// listing per kernel and the metadata.json files of the candidates whose fit
/// decides the choice ([`super::engine::choose_fitting`]); offline, the cached snapshot
/// as [`verify_kernels_fit`] sees it (everything found counts as cached, anything
/// missing is a failure). Results are in input order; warnings go to
/// `reporter` (its only event here).
pub async fn dry_run(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    reporter: &dyn Reporter,
) -> Vec<Result<DryRunKernel, Box<KernelFailure>>> {
    if client.is_offline() {
        let checks = verify_kernels_fit(
            cache,
            options.repo_type,
            kernels,
            &options.selection,
            Some(&options.fit),
        );
        for warning in checks.iter().flat_map(|check| &check.warnings) {
            reporter.warning(warning);
        }
        return checks
            .into_iter()
            .map(|check| {
                if !check.is_ok() {
                    return Err(Box::new(KernelFailure::not_cached(check)));
                }
                let variants = check
                    .variants
                    .iter()
                    .map(|(name, files)| {
                        let bytes = kernels_types::size::total(files.iter().map(|f| f.size));
                        DryRunVariant {
                            name: name.clone(),
                            files: files.len(),
                            bytes,
                            cached_files: files.len(),
                            cached_bytes: bytes,
                        }
                    })
                    .collect();
                Ok(DryRunKernel {
                    repo_id: check.repo_id.to_string(),
                    commit: check.commit,
                    variants,
                    download_files: 0,
                    download_bytes: 0,
                    refused: DryRunRefusal::of(&check.fit),
                    metadata_fetched: 0,
                })
            })
            .collect();
    }
    join_all(kernels.iter().map(|kernel| async move {
        plan_one(client, cache, kernel, options, reporter)
            .await
            .map_err(|error| {
                Box::new(KernelFailure {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    error,
                })
            })
    }))
    .await
}

async fn plan_one(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    options: &DownloadOptions,
    reporter: &dyn Reporter,
) -> Result<DryRunKernel, DownloadError> {
    let entries = client
        .list_tree(
            options.repo_type,
            &kernel.repo_id,
            kernel.commit.as_str(),
            "",
            true,
        )
        .await?;
    report_warnings(kernel, &entries, &options.selection, reporter);
    // `--all-variants` takes everything: its fit only reports, from what is cached.
    let fetch = options.selection != VariantSelection::All;
    let (chosen, fetched) =
        choose_fitting(client, cache, kernel, &entries, options, fetch, &[]).await?;
    let refused = DryRunRefusal::of(&chosen.fit);
    let plan = plan_kernel(kernel, &entries, &VariantSelection::Named(chosen.variants))?;
    let repo = cache.repo(&kernel.repo_id, options.repo_type);
    let present = |digest: &kernels_types::BlobId| {
        fs_err::metadata(repo.blob_path(&digest.etag()))
            .is_ok_and(|m| m.is_file() && m.len() == digest.size)
    };
    let variants = plan
        .variants
        .iter()
        .map(|(name, files)| {
            let cached: Vec<_> = files.iter().filter(|f| present(&f.digest)).collect();
            DryRunVariant {
                name: name.clone(),
                files: files.len(),
                bytes: kernels_types::size::total(files.iter().map(|f| f.digest.size)),
                cached_files: cached.len(),
                cached_bytes: kernels_types::size::total(cached.iter().map(|f| f.digest.size)),
            }
        })
        .collect();
    let missing: Vec<_> = plan
        .blobs()
        .into_values()
        .filter(|(digest, _)| !present(digest))
        .collect();
    Ok(DryRunKernel {
        repo_id: kernel.repo_id.to_string(),
        commit: kernel.commit.clone(),
        variants,
        download_files: missing.len(),
        download_bytes: kernels_types::size::total(missing.iter().map(|(d, _)| d.size)),
        refused,
        metadata_fetched: fetched.blobs(),
    })
}
