//! The warm no-op: kernels of a variant-hash lock that are already complete
//! and verified in the cache cost no request.
//!
//! A variant-hash lock names every variant of each locked commit and the
//! hash of each variant's files, so it says exactly what must be on disk.
//! Before listing a kernel on the Hub, [`check`] chooses the selected
//! variants among the lock's variant names (the names a listing of the commit
//! would show) and checks them in the cache with [`verify_kernels`] (every
//! linked blob re-hashed, every variant hash recomputed). A kernel that passes
//! is done; any other kernel (a `KernelLocks` lock without variant hashes, a
//! variant not locked, anything missing or wrong in the cache) goes the online
//! way, which lists the commit and fetches what is needed.
//! [`super::DownloadOptions::refresh`] skips the check.

use std::collections::BTreeSet;

use crate::install::verify::{KernelVerification, verify_kernels};
use crate::lock::format::LockedKernel;
use crate::variant::{VariantSelection, VariantWarning};
use kernels_cache::HubCache;
use kernels_types::wire::RepoType;

/// A kernel found complete in the cache, with what choosing its variants
/// among the locked names warned about.
pub(crate) struct Warm {
    pub(crate) check: KernelVerification,
    pub(crate) warnings: Vec<VariantWarning>,
}

/// For each kernel (in input order), `Some` when it is complete and verified
/// in the cache without any request; see the module docs.
pub(crate) async fn check(
    cache: &HubCache,
    kernels: &[LockedKernel],
    repo_type: RepoType,
    selection: &VariantSelection,
) -> Vec<Option<Warm>> {
    let candidates: Vec<Option<(VariantSelection, Vec<VariantWarning>)>> = kernels
        .iter()
        .map(|kernel| locked_selection(kernel, selection))
        .collect();
    if candidates.iter().all(Option::is_none) {
        return kernels.iter().map(|_| None).collect();
    }
    let count = kernels.len();
    let (cache, kernels) = (cache.clone(), kernels.to_vec());
    tokio::task::spawn_blocking(move || {
        kernels
            .iter()
            .zip(candidates)
            .map(|(kernel, candidate)| {
                let (named, warnings) = candidate?;
                let [check] = <[KernelVerification; 1]>::try_from(verify_kernels(
                    &cache,
                    repo_type,
                    std::slice::from_ref(kernel),
                    &named,
                ))
                .ok()?;
                if !check.is_ok() {
                    tracing::debug!(
                        "{}: not complete in the cache, listing it on the Hub",
                        check.label()
                    );
                    return None;
                }
                tracing::debug!("{}: complete and verified in the cache", check.label());
                Some(Warm { check, warnings })
            })
            .collect()
    })
    .await
    // A failed check task only costs the requests it would have saved.
    .unwrap_or_else(|_| (0..count).map(|_| None).collect())
}

/// The variants `selection` takes among the lock's variant names, as a
/// [`VariantSelection::Named`], with the warnings; `None` when the lock has no
/// variant hashes or the choice is not exactly what a listing would give
/// (a named variant the lock lacks, no variant for the environment).
fn locked_selection(
    kernel: &LockedKernel,
    selection: &VariantSelection,
) -> Option<(VariantSelection, Vec<VariantWarning>)> {
    let hashes = kernel.variants.as_ref().filter(|h| !h.is_empty())?;
    let locked: BTreeSet<String> = hashes.keys().cloned().collect();
    let choice = selection
        .select(&kernel.repo_id, &kernel.commit, &locked)
        .ok()?;
    if !choice.missing.is_empty() || choice.variants.is_empty() {
        return None;
    }
    let warnings = selection.warnings(&kernel.repo_id, &kernel.commit, &locked);
    Some((VariantSelection::Named(choice.variants), warnings))
}
