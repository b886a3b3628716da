//! The version a kernel's commit goes by, for its status line, when the
//! kernel was complete in the cache already: the ref it was locked from, or
//! the label ([`crate::lock::label`]) of the cache's `refs/` at that commit.
//! Online, the engine labels the Hub's refs with [`crate::lock::inspect::label_in`].

use kernels_cache::HubCache;

use super::options::DownloadOptions;
use crate::lock::format::LockedKernel;

/// The version of a kernel found complete in the cache: the ref it was
/// locked from, else a version-like name among the cache's refs that point
/// at its commit ([`kernels_cache::RepoCache::refs_at`]).
pub(crate) fn cached_version(
    cache: &HubCache,
    options: &DownloadOptions,
    kernel: &LockedKernel,
) -> Option<String> {
    if let Some(name) = options.locked_ref(kernel) {
        return Some(name.to_owned());
    }
    let names = cache
        .repo(&kernel.repo_id, options.repo_type)
        .refs_at(&kernel.commit);
    // The cache's `refs/` do not tell tags from branches: the label rule
    // ([`crate::lock::label`]) tells them apart by shape.
    let names = || names.iter().map(String::as_str);
    crate::lock::label::commit_label(names(), names()).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::options::KernelRef;
    use crate::variant::VariantSelection;
    use kernels_types::wire::RepoType;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn kernel() -> LockedKernel {
        LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: COMMIT.parse().unwrap(),
            variants: None,
        }
    }

    fn options(refs: Vec<KernelRef>) -> DownloadOptions {
        DownloadOptions {
            repo_type: RepoType::Kernel,
            selection: VariantSelection::All,
            concurrency: 1,
            refs,
            refresh: false,
            fit: crate::variant::FitPolicy::unchecked(),
            trust: None,
            runtime_receipts: None,
        }
    }

    #[test]
    fn a_cached_kernel_goes_by_its_locked_ref_or_its_cached_refs() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let kernel = kernel();
        let repo = cache.repo(&kernel.repo_id, RepoType::Kernel);
        assert_eq!(cached_version(&cache, &options(Vec::new()), &kernel), None);
        repo.write_ref("v1", COMMIT).unwrap();
        repo.write_ref("v0.1.0", COMMIT).unwrap();
        repo.write_ref("v0.2.0", &"f".repeat(40)).unwrap();
        let found = cached_version(&cache, &options(Vec::new()), &kernel);
        assert_eq!(found.as_deref(), Some("v0.1.0"));
        let locked = KernelRef {
            repo_id: kernel.repo_id.clone(),
            commit: COMMIT.parse().unwrap(),
            name: "v1".into(),
        };
        let found = cached_version(&cache, &options(vec![locked]), &kernel);
        assert_eq!(found.as_deref(), Some("v1"));
    }
}
