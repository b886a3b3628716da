//! What a download run hands back: per kernel a [`KernelReport`] or a
//! [`KernelFailure`], gathered in a [`DownloadSummary`].

use std::collections::BTreeMap;

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use super::error::DownloadError;
use super::fit::KernelFit;
use super::plan;
use super::signature::{FilesHash, Signature, files_hashes};
use super::verify::KernelVerification;
use crate::lock::format::LockedKernel;

/// A kernel whose selected variants are all in the cache and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelReport {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Variants placed, sorted.
    pub variants: Vec<String>,
    /// Files linked in the snapshot.
    pub files: usize,
    /// Total size of those files in bytes.
    pub bytes: u64,
    /// Bytes received over the network (0 when everything was cached).
    pub fetched_bytes: u64,
    /// Distinct blobs that had to be downloaded.
    pub fetched_blobs: usize,
    /// The version the kernel's commit goes by, when known: the ref it was
    /// locked from ([`DownloadOptions::refs`](super::DownloadOptions::refs)), else a `vX.Y.Z` release tag
    /// or `vN` branch at that commit (from the Hub's refs when the kernel was
    /// listed, from the cache's `refs/` when it was complete already).
    pub version: Option<String>,
    /// The fit of its candidate variants: those skipped because the target
    /// runtime would refuse them, and warnings about the ones placed.
    pub fit: KernelFit,
    /// The signature of each placed variant, by variant (empty when the run
    /// checked no signatures).
    pub signatures: BTreeMap<String, Signature>,
    /// The [`super::signature::files_hashes`] of each placed variant, by
    /// variant: what `kernels.lock.provenance` pins.
    pub file_hashes: BTreeMap<String, FilesHash>,
}

/// A kernel that could not be downloaded.
#[derive(Debug)]
pub struct KernelFailure {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Why.
    pub error: DownloadError,
}

impl KernelFailure {
    /// `kernel` failed with `error`.
    pub(crate) fn new(kernel: &LockedKernel, error: DownloadError) -> Self {
        KernelFailure {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            error,
        }
    }

    /// An offline kernel whose cached files failed verification.
    pub(crate) fn not_cached(check: KernelVerification) -> Self {
        KernelFailure {
            error: DownloadError::NotCached {
                repo_id: check.repo_id.clone(),
                commit: check.commit.clone(),
                problems: check.problems,
            },
            repo_id: check.repo_id,
            commit: check.commit,
        }
    }
}

/// Outcome of [`super::download`], in lock order.
#[derive(Debug, Default)]
pub struct DownloadSummary {
    /// Kernels downloaded and verified.
    pub done: Vec<KernelReport>,
    /// Kernels that failed.
    pub failed: Vec<KernelFailure>,
    /// A check before any download failed for the whole run (read-only cache
    /// with files missing, not enough free space); nothing was fetched.
    pub blocked: Option<DownloadError>,
    /// What the cache adapted to (no flock, no symlinks), each once.
    pub warnings: Vec<kernels_cache::CacheWarning>,
}

impl KernelReport {
    /// `owner/name@abcdef1`.
    pub fn label(&self) -> String {
        plan::label(&self.repo_id, &self.commit)
    }

    /// The report of a kernel that [`verify_kernels`](super::verify::verify_kernels) found complete (nothing fetched).
    pub fn from_verification(check: &KernelVerification) -> KernelReport {
        KernelReport {
            repo_id: check.repo_id.clone(),
            commit: check.commit.clone(),
            variants: check.variants.keys().cloned().collect(),
            files: check.file_count(),
            bytes: check.total_bytes(),
            fetched_bytes: 0,
            fetched_blobs: 0,
            version: None,
            fit: check.fit.clone(),
            signatures: BTreeMap::new(),
            file_hashes: check
                .variants
                .iter()
                .map(|(variant, files)| {
                    let hashed = files.iter().map(|f| (f.path.as_str(), f.digest));
                    (variant.clone(), files_hashes(variant, hashed))
                })
                .collect(),
        }
    }
}

impl KernelFailure {
    /// `owner/name@abcdef1`.
    pub fn label(&self) -> String {
        plan::label(&self.repo_id, &self.commit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_labelled_with_the_short_commit() {
        let kernel = LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "0123456789abcdef0123456789abcdef01234567".parse().unwrap(),
            variants: None,
        };
        let failure = KernelFailure::new(&kernel, DownloadError::Internal("boom".into()));
        assert_eq!(failure.label(), "acme/relu@0123456");
        assert_eq!(failure.error.to_string(), "internal error: boom");
    }
}
