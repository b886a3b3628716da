//! How a download run is asked for: [`DownloadOptions`] (repository type,
//! variant selection, concurrency, refs to record, the fit policy).

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::format::LockedKernel;
use crate::variant::{FitPolicy, VariantSelection};

/// Default number of files fetched at the same time (`--concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What to download and how.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// Repository type: decides the API and resolve URLs and the cache prefix
    /// (`kernels--` or `models--`).
    pub repo_type: RepoType,
    /// Variant selection applied to every kernel.
    pub selection: VariantSelection,
    /// Maximum number of files fetched at once over all kernels (at least 1).
    pub concurrency: usize,
    /// Ref names to record per `(repo, commit)` once the kernel is in the
    /// cache (`refs/<name>`: the branch or tag the entry was resolved from,
    /// such as `v2` for `version = 2`), so that a runtime resolves them offline.
    pub refs: Vec<KernelRef>,
    /// List every kernel on the Hub even when a variant-hash lock and the
    /// cache already show it complete (`--refresh`); otherwise such kernels
    /// cost no request.
    pub refresh: bool,
    /// What the target runtime's load-time rules check each candidate
    /// variant against ([`super::fit`]): a variant it would refuse is never
    /// chosen when another fits, and a kernel none of whose candidates fits
    /// fails before anything else is fetched.
    pub fit: FitPolicy,
    /// What each placed variant's signature is checked against
    /// ([`super::signature`]); `None` checks none (the digest and the lock's
    /// hashes still apply).
    pub trust: Option<std::sync::Arc<super::signature::Trust>>,
    /// The target runtime's digest receipt format, written for each variant
    /// of each kernel the run finished (verified in full), so that the
    /// runtime skips hashing it at load ([`super::runtime_receipts`]); `None`
    /// writes none.
    pub runtime_receipts: Option<kernels_cache::RuntimeReceiptFormat>,
}

/// One `refs/<name>` to record for a locked kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRef {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Branch or tag name.
    pub name: String,
}

impl DownloadOptions {
    /// Options for `repo_type` and `selection` with every other one at its
    /// default: [`DEFAULT_CONCURRENCY`] files at a time, no ref to record, a
    /// kernel complete in the cache not listed again (no `--refresh`), no fit
    /// check ([`FitPolicy::unchecked`]) and no signature check. `kernels
    /// download` sets the rest from its flags and the lock.
    pub fn new(repo_type: RepoType, selection: VariantSelection) -> Self {
        DownloadOptions {
            repo_type,
            selection,
            concurrency: DEFAULT_CONCURRENCY,
            refs: Vec::new(),
            refresh: false,
            fit: FitPolicy::unchecked(),
            trust: None,
            runtime_receipts: None,
        }
    }

    /// The ref `kernel` was locked from, per [`DownloadOptions::refs`].
    pub(crate) fn locked_ref(&self, kernel: &LockedKernel) -> Option<&str> {
        self.refs
            .iter()
            .find(|r| r.repo_id == kernel.repo_id && r.commit == kernel.commit)
            .map(|r| r.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locked_ref_matches_repo_and_commit() {
        let kernel = LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "abcdef0123456789abcdef0123456789abcdef01".parse().unwrap(),
            variants: None,
        };
        let at = |repo: &str, commit: CommitId| KernelRef {
            repo_id: repo.parse().unwrap(),
            commit,
            name: format!("{repo}-ref"),
        };
        let options = DownloadOptions {
            refs: vec![
                at("acme/other", kernel.commit.clone()),
                at("acme/relu", "f".repeat(40).parse().unwrap()),
                at("acme/relu", kernel.commit.clone()),
            ],
            ..DownloadOptions::new(RepoType::Kernel, VariantSelection::All)
        };
        assert_eq!(options.locked_ref(&kernel), Some("acme/relu-ref"));
        let none = DownloadOptions {
            refs: Vec::new(),
            ..options
        };
        assert_eq!(none.locked_ref(&kernel), None);
    }
}
