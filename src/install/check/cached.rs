//! The checks of a variant already in the cache that its files alone do not
//! settle: [`super::Check::Signature`] then [`super::Check::Provenance`],
//! in that order, for the warm path and the offline one alike (the checks
//! before them are the cache verification's, [`crate::install::verify`]).

use std::collections::BTreeMap;

use kernels_cache::RepoCache;

use crate::install::error::DownloadError;
use crate::install::signature::{self, Signature, Trust};
use crate::install::verify::KernelVerification;

/// The signature of each variant of `check` (a kernel verified in `repo`
/// without problems) under `trust`, after its provenance was compared with
/// the record. Errors: the first refusal, signature before provenance.
pub fn cached(
    trust: &Trust,
    repo: &RepoCache,
    check: &KernelVerification,
) -> Result<BTreeMap<String, Signature>, DownloadError> {
    let signatures = signature::check_cached(trust, repo, check)?;
    let files = check
        .variants
        .iter()
        .map(|(variant, files)| {
            let hashed = files.iter().map(|f| (f.path.as_str(), f.digest));
            (variant.clone(), signature::files_hashes(variant, hashed))
        })
        .collect();
    super::provenance::check(trust, &check.repo_id, &check.commit, &files, &signatures)?;
    Ok(signatures)
}
