//! The warm no-op: kernels of a variant-hash lock that are already complete
//! and verified in the cache cost no request.
//!
//! A variant-hash lock names every variant of each locked commit and the
//! hash of each variant's files, so it says exactly what must be on disk.
//! Before listing a kernel on the Hub, [`check`] chooses the selected
//! variants among the lock's variant names (the names a listing of the commit
//! would show) and checks them in the cache with [`verify_kernels_trusting`]
//! (every linked blob re-hashed unless its receipt vouches for it, every
//! variant hash recomputed; module `receipts`). A `KernelLocks` lock names no
//! variant: its kernel takes the names of the commit's listing receipt, and
//! is complete only when the receipt of every chosen variant covers all its
//! files. A kernel that passes is done; any other kernel (no receipt for a
//! `KernelLocks` lock, a variant not locked, anything missing or wrong in the
//! cache) goes the online way, which lists the commit and fetches what is
//! needed. [`super::options::DownloadOptions::refresh`] skips the check.

use std::collections::BTreeSet;

use futures_util::FutureExt;

use super::error::DownloadError;
use super::fit::{self, KernelFit};
use super::options::DownloadOptions;
use super::receipts::{self, Trust};
use super::verify::{KernelVerification, verify_kernels_trusting};
use crate::lock::format::LockedKernel;
use crate::variant::{FitPolicy, VariantSelection, VariantWarning};
use kernels_cache::{HubCache, RepoCache};

/// A kernel found complete in the cache, with what choosing its variants
/// among the locked names warned about and the fit of its candidates.
pub(crate) struct Warm {
    pub(crate) check: KernelVerification,
    pub(crate) warnings: Vec<VariantWarning>,
}

/// What the zero-request check decided for one kernel: complete (`Ok`),
/// refused by the cached metadata.json files (`Err`), or `None` when the
/// online way decides.
pub(crate) type WarmStep = Option<Result<Warm, DownloadError>>;

/// For each kernel (in input order), whether it is complete and verified in
/// the cache without any request; see the module docs.
pub(crate) async fn check(
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
) -> Vec<WarmStep> {
    let count = kernels.len();
    let (cache, kernels) = (cache.clone(), kernels.to_vec());
    let (repo_type, selection, policy) = (
        options.repo_type,
        options.selection.clone(),
        options.fit.clone(),
    );
    tokio::task::spawn_blocking(move || {
        let mut out: Vec<WarmStep> = (0..count).map(|_| None).collect();
        // Kernels that check with the same selection share one check, so
        // their blobs are hashed in one parallel pass.
        let mut groups: Vec<(VariantSelection, Vec<Member>)> = Vec::new();
        for (index, kernel) in kernels.iter().enumerate() {
            let repo = cache.repo(&kernel.repo_id, repo_type);
            let Some(known) = receipts::known_variants(&repo, kernel) else {
                continue;
            };
            match locked_selection(kernel, &known, &selection, &repo, &policy) {
                None => {}
                Some(Err(err)) => out[index] = Some(Err(err)),
                Some(Ok((named, fit))) => {
                    let member = Member { index, fit, known };
                    match groups.iter_mut().find(|(s, _)| *s == named) {
                        Some((_, members)) => members.push(member),
                        None => groups.push((named, vec![member])),
                    }
                }
            }
        }
        for (named, members) in groups {
            let group: Vec<LockedKernel> =
                members.iter().map(|m| kernels[m.index].clone()).collect();
            let checks = verify_kernels_trusting(&cache, repo_type, &group, &named);
            for (member, (mut check, trust)) in members.into_iter().zip(checks) {
                let Member { index, fit, known } = member;
                let kernel = &kernels[index];
                if !complete(kernel, &named, &check, &trust) {
                    tracing::debug!(
                        "{}: not complete in the cache, listing it on the Hub",
                        check.label()
                    );
                    continue;
                }
                tracing::debug!("{}: complete and verified in the cache", check.label());
                receipts::record_checked(&cache.repo(&kernel.repo_id, repo_type), kernel, &trust);
                let warnings = selection.warnings(&kernel.repo_id, &kernel.commit, &known);
                check.fit = fit;
                out[index] = Some(Ok(Warm { check, warnings }));
            }
        }
        out
    })
    .await
    // A failed check task only costs the requests it would have saved.
    .unwrap_or_else(|_| (0..count).map(|_| None).collect())
}

/// A kernel to check in a group: its index in the input, the fit of its
/// candidates and the variant names of its commit.
struct Member {
    index: usize,
    fit: KernelFit,
    known: BTreeSet<String>,
}

/// Whether a check found `kernel` complete: no problem, and for a lock
/// without variant hashes (nothing else says which files a variant has)
/// every variant `named` checked and covered by its receipt.
fn complete(
    kernel: &LockedKernel,
    named: &VariantSelection,
    check: &KernelVerification,
    trust: &Trust,
) -> bool {
    if !check.is_ok() {
        return false;
    }
    if hashed(kernel) {
        return true;
    }
    let VariantSelection::Named(names) = named else {
        return false;
    };
    let checked: BTreeSet<&String> = check.variants.keys().collect();
    !names.is_empty()
        && checked == names.iter().collect()
        && names.iter().all(|v| trust.variants.contains(v))
}

/// Whether the lock carries variant hashes for `kernel`.
fn hashed(kernel: &LockedKernel) -> bool {
    kernel.variants.as_ref().is_some_and(|h| !h.is_empty())
}

/// The selection to check the kernel with (`selection`, or for the
/// environment's choice the first candidate among the `known` variant names
/// ([`receipts::known_variants`]) that fits by its cached metadata.json, as a
/// [`VariantSelection::Named`]),
/// with the fit; `Some(Err)` when the cached metadata.json files refuse it
/// ([`fit::walk`]); `None` when the lock has no variant hashes, the choice is
/// not exactly what a listing would give (a named variant the lock lacks, no
/// variant for the environment) or a candidate's fit is not in the cache.
fn locked_selection(
    kernel: &LockedKernel,
    locked: &BTreeSet<String>,
    selection: &VariantSelection,
    repo: &RepoCache,
    policy: &FitPolicy,
) -> Option<Result<(VariantSelection, KernelFit), DownloadError>> {
    if locked.is_empty() {
        return None;
    }
    let choice = selection
        .select(&kernel.repo_id, &kernel.commit, locked)
        .ok()?;
    if !choice.missing.is_empty() || choice.variants.is_empty() {
        return None;
    }
    let alternatives = selection
        .candidates(&kernel.repo_id, &kernel.commit, locked)
        .ok()?;
    let subject = fit::Subject {
        repo_id: &kernel.repo_id,
        commit: &kernel.commit,
        runtime: policy.runtime,
    };
    let lookup = |variant: String| std::future::ready(fit::cached_lookup(repo, subject, &variant));
    let walked = fit::walk(
        subject,
        alternatives,
        fit::Mode::of(selection),
        policy,
        lookup,
    )
    .now_or_never()?;
    let mut chosen = match walked {
        Ok(chosen) => chosen?,
        Err(err) => return Some(Err(err)),
    };
    if fit::Mode::of(selection) == fit::Mode::FirstFitting {
        fit::unlink_refused(repo, &kernel.commit, &mut chosen.fit);
    }
    // `verify_kernels` reads `All` as the locked names and `Named` as the
    // names; only the environment's choice is made here, among the locked names.
    // Without variant hashes, `All` is every variant the listing receipt names.
    let named = match selection {
        VariantSelection::Detected { .. } => VariantSelection::Named(chosen.variants),
        VariantSelection::All if !hashed(kernel) => {
            VariantSelection::Named(locked.iter().cloned().collect())
        }
        other => other.clone(),
    };
    Some(Ok((named, chosen.fit)))
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

    /// [`locked_selection`] with a policy that checks nothing, against a
    /// cache whose snapshot has every locked variant's directory without a
    /// metadata.json (nothing to check: each fits).
    fn locked_selection(
        kernel: &LockedKernel,
        selection: &VariantSelection,
    ) -> Option<(VariantSelection, KernelFit)> {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo = cache.repo(&kernel.repo_id, kernels_types::wire::RepoType::Kernel);
        let known = receipts::known_variants(&repo, kernel).unwrap_or_default();
        for variant in &known {
            fs_err::create_dir_all(
                repo.snapshot_dir(kernel.commit.as_str())
                    .join("build")
                    .join(variant),
            )
            .unwrap();
        }
        super::locked_selection(kernel, &known, selection, &repo, &FitPolicy::unchecked())
            .map(|r| r.unwrap())
    }

    #[test]
    fn the_choice_is_made_among_the_locked_variant_names() {
        let locked = kernel(Some(&["torch-cuda", "torch-universal"]));
        let detected = VariantSelection::Detected {
            env: Box::new(crate::variant::testing::env(
                Some("12.6"),
                "Linux",
                "x86_64",
            )),
            rules: crate::lock::profile::VariantPreference::Exact { noarch: true }.into(),
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
