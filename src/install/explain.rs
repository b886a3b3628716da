//! `kernels download --explain`: the variants each locked kernel has (from the
//! Hub listing, or offline from the cached snapshot) and why each one was or
//! was not chosen for the environment.

use std::collections::BTreeSet;

use futures_util::future::join_all;

use super::{DownloadError, DownloadOptions, LockedKernel, plan};
use crate::variant::VariantSelection;
use crate::variant::ranking::VariantVerdict;
use kernels_cache::HubCache;
use kernels_hub::HubClient;

/// The explanation of one kernel.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelExplanation {
    /// Hub repository.
    pub repo_id: String,
    /// Locked commit.
    pub commit: String,
    /// The chosen variants (empty when none suits).
    pub chosen: Vec<String>,
    /// Every variant the commit has, in name order.
    pub variants: Vec<VariantVerdict>,
}

/// The variant directories of `kernel`: listed by the Hub, or, offline, read
/// from the cached snapshot's `build/`.
async fn available(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    options: &DownloadOptions,
) -> Result<BTreeSet<String>, DownloadError> {
    if client.is_offline() {
        let dir = cache
            .repo(&kernel.repo_id, options.repo_type)
            .snapshot_dir(&kernel.commit)
            .join("build");
        let names = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        return Ok(names);
    }
    let entries = client
        .list_tree(options.repo_type, &kernel.repo_id, &kernel.commit, "", true)
        .await?;
    Ok(plan::available_variants(&entries))
}

/// Explains the choice for every kernel, in lock order.
pub async fn explain(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
) -> Vec<Result<KernelExplanation, (LockedKernel, DownloadError)>> {
    join_all(kernels.iter().map(|kernel| async move {
        let names = available(client, cache, kernel, options)
            .await
            .map_err(|err| (kernel.clone(), err))?;
        let variants = match &options.selection {
            VariantSelection::Detected { env, preference } => env.explain(&names, *preference),
            other => {
                let chosen = other
                    .select(&kernel.repo_id, &kernel.commit, &names)
                    .map(|c| c.variants)
                    .unwrap_or_default();
                names
                    .iter()
                    .map(|name| VariantVerdict {
                        name: name.clone(),
                        chosen: chosen.contains(name),
                        reason: (!chosen.contains(name))
                            .then(|| "not named by --variant".to_owned()),
                    })
                    .collect()
            }
        };
        Ok(KernelExplanation {
            repo_id: kernel.repo_id.to_string(),
            commit: kernel.commit.clone(),
            chosen: variants
                .iter()
                .filter(|v| v.chosen)
                .map(|v| v.name.clone())
                .collect(),
            variants,
        })
    }))
    .await
}
