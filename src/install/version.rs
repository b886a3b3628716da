//! The version a kernel's commit goes by, for its status line: a release tag
//! or `vN` branch among the refs at that commit (from the Hub's refs, or the
//! cache's `refs/` when the kernel was complete already).

use kernels_cache::HubCache;

use super::options::DownloadOptions;
use crate::lock::format::LockedKernel;

/// The version among ref `names` (all at one commit): the highest `vX.Y.Z`
/// release tag, else the highest `vN` branch.
pub(crate) fn version_at<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    use crate::lock::requirement::{branch_version, tag_version};
    let names: Vec<&str> = names.collect();
    let tag = names
        .iter()
        .filter_map(|n| Some((tag_version(n)?, *n)))
        .filter(|(v, _)| !v.any_prerelease() && n_parts(v) >= 2)
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, n)| n);
    let branch = || {
        names
            .iter()
            .filter_map(|n| Some((branch_version(n)?, *n)))
            .max_by_key(|(v, _)| *v)
            .map(|(_, n)| n)
    };
    tag.or_else(branch).map(str::to_owned)
}

/// How many release segments a version has (`0.0.3` → 3, `1` → 1): a `vN`
/// name is a branch-style version, not a release tag.
fn n_parts(version: &pep440_rs::Version) -> usize {
    version.release().len()
}

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
    version_at(names.iter().map(String::as_str))
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
            commit: COMMIT.into(),
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
        }
    }

    #[test]
    fn a_release_tag_wins_over_a_branch() {
        let at = |names: &[&str]| version_at(names.iter().copied());
        assert_eq!(
            at(&["v1", "v0.1.2", "v0.1.10", "main"]).as_deref(),
            Some("v0.1.10")
        );
        // Pre-releases and one-part tags are no release tags; the branch is left.
        assert_eq!(at(&["v2", "v1", "v0.2.0rc1"]).as_deref(), Some("v2"));
        assert_eq!(at(&["main", "refs/pr/1"]), None);
        assert_eq!(at(&[]), None);
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
            commit: COMMIT.to_ascii_uppercase(),
            name: "v1".into(),
        };
        let found = cached_version(&cache, &options(vec![locked]), &kernel);
        assert_eq!(found.as_deref(), Some("v1"));
    }
}
