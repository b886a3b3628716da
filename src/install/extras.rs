//! The folders a kernel repository ships beside `build/`: `benchmarks/` (the
//! scripts `kernels benchmark` runs) and `tests/`. `kernels download
//! --with-benchmarks` places them in the snapshot of the locked commit, each
//! file a blob named and verified by the listing's digest, like the variant
//! files ([`super::ensure_blob`]); without the flag nothing of them is fetched.

use kernels_cache::{HubCache, Placement};
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{RepoType, TreeEntry};

use super::error::DownloadError;
use super::fetch::{Fetched, Source, ensure_blob};
use super::plan::PlannedFile;
use super::reporter::NoReporter;
use crate::lock::format::LockedKernel;

/// The top-level folders fetched beside `build/`, in this order.
pub const EXTRA_DIRS: [&str; 2] = ["benchmarks", "tests"];

/// What was placed for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtrasReport {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Repo paths placed (already in place or fetched), sorted.
    pub files: Vec<String>,
    /// Bytes that crossed the network.
    pub fetched_bytes: u64,
}

/// Whether `path` lies in one of [`EXTRA_DIRS`].
pub fn is_extra(path: &str) -> bool {
    EXTRA_DIRS.iter().any(|dir| {
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// The files of [`EXTRA_DIRS`] in a listing, with the blob each must be
/// (every path of the listing checked first, as for a plan).
pub fn plan_extras(
    kernel: &LockedKernel,
    entries: &[TreeEntry],
) -> Result<Vec<PlannedFile>, DownloadError> {
    super::plan::check_listing(kernel, entries)?;
    super::plan::planned_files(kernel, entries, is_extra)
}

/// Lists `kernel` at its locked commit and places every file of
/// [`EXTRA_DIRS`] in its snapshot: a file already linked (or copied) with the
/// listed content costs no request; others are fetched, verified against the
/// listing's digest, then linked. A kernel without such folders places none.
pub async fn fetch_extras(
    client: &HubClient,
    cache: &HubCache,
    repo_type: RepoType,
    kernel: &LockedKernel,
) -> Result<ExtrasReport, DownloadError> {
    let entries = client
        .list_tree(repo_type, &kernel.repo_id, kernel.commit.as_str(), "", true)
        .await?;
    let planned = plan_extras(kernel, &entries)?;
    let repo = cache.repo(&kernel.repo_id, repo_type);
    let commit = kernel.commit.as_str();
    let mut fetched_bytes = 0u64;
    for (index, file) in planned.iter().enumerate() {
        let placement = repo.placement(commit, &file.path, &file.digest)?;
        if matches!(placement, Placement::Linked | Placement::Copied) {
            continue;
        }
        let source = Source {
            client,
            repo_type,
            repo_id: &kernel.repo_id,
            commit,
            path: &file.path,
            expected: &[],
        };
        let fetched = ensure_blob(&repo, &file.digest, &source, &NoReporter).await?;
        // Without symlinks a new blob moves into its path: only the last
        // path it backs may take it.
        let shared_later = planned[index + 1..]
            .iter()
            .any(|later| later.digest.digest == file.digest.digest);
        let new_blob = matches!(fetched, Fetched::Downloaded { .. }) && !shared_later;
        if let Fetched::Downloaded { bytes } = fetched {
            fetched_bytes = fetched_bytes.saturating_add(bytes);
        }
        repo.place(commit, &file.path, &file.digest.etag(), new_blob)?;
    }
    Ok(ExtrasReport {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        files: planned.into_iter().map(|f| f.path).collect(),
        fetched_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_below_the_extra_folders_count() {
        assert!(is_extra("benchmarks/benchmark_relu.py"));
        assert!(is_extra("tests/kernels/test_relu.py"));
        assert!(!is_extra("benchmarks"));
        assert!(!is_extra("benchmarks_old/x.py"));
        assert!(!is_extra("build/torch-cpu/benchmarks/x.py"));
        assert!(!is_extra("README.md"));
    }
}
