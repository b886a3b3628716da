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
//! [`super::options::DownloadOptions::refresh`] skips the check.

use std::collections::BTreeSet;

use super::verify::{KernelVerification, verify_kernels};
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
    // Kernels that check with the same selection share one `verify_kernels`
    // call, so their blobs are hashed in one parallel pass.
    let mut groups: Vec<(VariantSelection, Vec<usize>)> = Vec::new();
    for (index, candidate) in candidates.into_iter().enumerate() {
        let Some((named, _)) = candidate else {
            continue;
        };
        match groups.iter_mut().find(|(s, _)| *s == named) {
            Some((_, indices)) => indices.push(index),
            None => groups.push((named, vec![index])),
        }
    }
    let count = kernels.len();
    let (cache, kernels) = (cache.clone(), kernels.to_vec());
    let selection = selection.clone();
    tokio::task::spawn_blocking(move || {
        let mut out: Vec<Option<Warm>> = (0..count).map(|_| None).collect();
        for (named, indices) in groups {
            let group: Vec<LockedKernel> = indices.iter().map(|&i| kernels[i].clone()).collect();
            let checks = verify_kernels(&cache, repo_type, &group, &named);
            for (index, check) in indices.into_iter().zip(checks) {
                if !check.is_ok() {
                    tracing::debug!(
                        "{}: not complete in the cache, listing it on the Hub",
                        check.label()
                    );
                    continue;
                }
                tracing::debug!("{}: complete and verified in the cache", check.label());
                let kernel = &kernels[index];
                let warnings = locked_selection(kernel, &selection)
                    .map(|(_, warnings)| warnings)
                    .unwrap_or_default();
                out[index] = Some(Warm { check, warnings });
            }
        }
        out
    })
    .await
    // A failed check task only costs the requests it would have saved.
    .unwrap_or_else(|_| (0..count).map(|_| None).collect())
}

/// The selection to check the kernel with (`selection`, or for the
/// environment's choice the variant it takes among the lock's variant names,
/// as a [`VariantSelection::Named`]), with the warnings; `None` when the lock has no
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
    // `verify_kernels` reads `All` as the locked names and `Named` as the
    // names; only the environment's choice is made here, among the locked names.
    let named = match selection {
        VariantSelection::Detected { .. } => VariantSelection::Named(choice.variants),
        other => other.clone(),
    };
    Some((named, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(variants: Option<&[&str]>) -> LockedKernel {
        LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "0123456789abcdef0123456789abcdef01234567".parse().unwrap(),
            variants: variants.map(|names| {
                names
                    .iter()
                    .map(|n| ((*n).to_owned(), format!("sha256-{n}")))
                    .collect()
            }),
        }
    }

    #[test]
    fn the_choice_is_made_among_the_locked_variant_names() {
        let locked = kernel(Some(&["torch-cuda", "torch-universal"]));
        let detected = VariantSelection::Detected {
            env: crate::variant::testing::env(Some("12.6"), "Linux", "x86_64"),
            preference: crate::lock::profile::VariantPreference::Exact { noarch: true },
        };
        // Runtimes up to 0.12 take every existing candidate ([arch, noarch,
        // universal]); the arch build is not locked here.
        let (named, _) = locked_selection(&locked, &detected).unwrap();
        assert_eq!(
            named,
            VariantSelection::Named(vec!["torch-cuda".into(), "torch-universal".into()])
        );
        // `All` and `Named` are checked as they are.
        let all = VariantSelection::All;
        assert_eq!(locked_selection(&locked, &all).unwrap().0, all);
        // A named variant the lock lacks, or a lock without variant hashes:
        // the online way decides.
        let named = VariantSelection::Named(vec!["torch-cuda".into(), "torch-rocm".into()]);
        assert!(locked_selection(&locked, &named).is_none());
        assert!(locked_selection(&kernel(None), &all).is_none());
        assert!(locked_selection(&kernel(Some(&[])), &all).is_none());
    }
}
