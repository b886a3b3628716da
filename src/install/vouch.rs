//! What vouches for a cached variant's files when the lock pins none.
//!
//! A variant-hash lock pins every variant's files; a `KernelLocks` lock
//! (reference 0.17) pins only the commit. For such a kernel a cached variant
//! counts as verified only when something else vouches for its files: the
//! `digest` of its metadata.json ([`super::digest`], checked by
//! [`super::verify`]), or the files hash `kernels download` recorded in
//! `kernels.lock.provenance` when it fetched the variant from the Hub's
//! listing ([`crate::lock::provenance`]). A variant with neither, such as a
//! directory planted in the cache, is a [`Problem::Unvouched`]; one whose
//! files no longer hash to the recorded value a [`Problem::PinMismatch`].

use std::collections::BTreeMap;

use kernels_cache::HubCache;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use super::signature::{FilesHash, files_hashes};
use super::verify::{CachedFile, KernelVerification, Problem};
use crate::lock::format::LockedKernel;

/// The recorded files hash of each variant, per locked `(repo, commit)`.
pub type FilePins = BTreeMap<(RepoId, CommitId), BTreeMap<String, String>>;

/// Adds to each of `checks` (the results of
/// [`super::verify::verify_kernels`] for `kernels`, in order) the problems
/// of its variants that nothing vouches for; kernels the lock pins by
/// variant hash are left as they are.
pub fn check(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    checks: &mut [KernelVerification],
    pins: &FilePins,
) {
    for (kernel, check) in kernels.iter().zip(checks.iter_mut()) {
        if kernel.variants.as_ref().is_some_and(|h| !h.is_empty()) {
            continue;
        }
        let repo = cache.repo(&kernel.repo_id, repo_type);
        let subject = super::fit::Subject {
            repo_id: &kernel.repo_id,
            commit: &kernel.commit,
            runtime: super::fit::DIGEST_ONLY,
        };
        let pinned = pins.get(&(kernel.repo_id.clone(), kernel.commit.clone()));
        // A missing or broken file is named already; the pin would only repeat it.
        let clean = check.problems.is_empty();
        for (variant, files) in &check.variants {
            let has_digest = matches!(
                super::fit::cached_lookup(&repo, subject, variant),
                Ok(super::fit::Lookup::Metadata(m)) if m.digest.is_some()
            );
            if has_digest {
                continue;
            }
            let paths = || files.iter().map(|f| f.path.clone()).collect();
            match pinned.and_then(|p| p.get(variant)) {
                None => check.problems.push(Problem::Unvouched {
                    variant: variant.clone(),
                    files: paths(),
                }),
                Some(pin) => {
                    let actual = hash_of(variant, files, false);
                    let pinned = |h: &FilesHash| h.files == *pin || h.with_bundle == *pin;
                    if clean && !pinned(&actual) && !pinned(&hash_of(variant, files, true)) {
                        check.problems.push(Problem::PinMismatch {
                            variant: variant.clone(),
                            pinned: pin.clone(),
                            actual: actual.files,
                            files: paths(),
                        });
                    }
                }
            }
        }
    }
}

/// [`files_hashes`] of cached files; with `alternate`, each copy counted by
/// its other digest kind (a copy does not say whether it was an LFS file).
/// A pin recorded by version 1 of `kernels.lock.provenance` covered the
/// bundle, so either hash matches it.
fn hash_of(variant: &str, files: &[CachedFile], alternate: bool) -> FilesHash {
    let hashed = files.iter().map(|f| {
        let digest = f.copy_alt.filter(|_| alternate).unwrap_or(f.digest);
        (f.path.as_str(), digest)
    });
    files_hashes(variant, hashed)
}

/// The files under the variant directory `dir` of the snapshot (links not
/// followed) that are neither planned (`planned`: repo paths from the Hub's
/// listing) nor bytecode, as repo paths: online, what the listing does not
/// vouch for in a variant whose metadata has no digest. Temporary names of
/// a concurrent download ([`kernels_cache::is_temp_name`]) are skipped. A
/// directory that does not exist has none.
pub fn unlisted_in_dir(dir: &std::path::Path, variant: &str, planned: &[&str]) -> Vec<String> {
    super::digest::placed_files(dir)
        .into_iter()
        .map(|relative| format!("build/{variant}/{relative}"))
        .filter(|path| !super::signature::is_bytecode(path) && !planned.contains(&path.as_str()))
        .collect()
}
