//! From a Hub tree listing to the list of files (and blobs) to place in the cache.

use std::collections::{BTreeMap, BTreeSet};

use crate::variant::VariantSelection;
use kernels_types::CommitId;
use kernels_types::file_set::{self, FileSet};
use kernels_types::repo_id::RepoId;
use kernels_types::repo_path;
use kernels_types::wire::TreeEntry;
use kernels_types::{BlobId, Digest};

use super::error::DownloadError;
use crate::lock::format::LockedKernel;

/// Refuses a listing with an unsafe path ([`repo_path::check_entries`])
/// before anything is chosen from it or fetched.
pub fn check_listing(kernel: &LockedKernel, entries: &[TreeEntry]) -> Result<(), DownloadError> {
    repo_path::check_entries(entries).map_err(|(path, reason)| DownloadError::UnsafePath {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        path,
        reason,
    })
}

/// One file of a selected variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Full repo path, `build/<variant>/…`.
    pub path: String,
    /// The blob it must link to (digest and size).
    pub digest: BlobId,
}

/// Everything to place in the cache for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPlan {
    /// Selected variants with their files (sorted by path).
    pub variants: BTreeMap<String, Vec<PlannedFile>>,
}

/// The variants of a listing by the shared rule [`file_set::variant_of`]
/// (directories `build/<v>`, files `build/<v>/…`, and files `build/torch…`).
pub fn available_variants(entries: &[TreeEntry]) -> BTreeSet<String> {
    entries
        .iter()
        .filter_map(|e| file_set::variant_of(&e.path, e.is_file()).map(str::to_owned))
        .collect()
}

/// The files of the listing `entries` whose repo path `wanted` takes, each
/// with its digest, in path order. Errors: a wanted file without an LFS
/// sha256 or a git sha1 is [`DownloadError::InvalidListing`].
pub fn planned_files(
    kernel: &LockedKernel,
    entries: &[TreeEntry],
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<PlannedFile>, DownloadError> {
    let mut files = Vec::new();
    for entry in entries.iter().filter(|e| e.is_file() && wanted(&e.path)) {
        let digest = entry_digest(entry).ok_or_else(|| DownloadError::InvalidListing {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            path: entry.path.clone(),
        })?;
        files.push(PlannedFile {
            path: entry.path.clone(),
            digest,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The blob a tree entry must become: LFS files are named by `lfs.oid`
/// (sha256, with `lfs.size`), other files by `oid` (git blob sha1, with `size`).
pub fn entry_digest(entry: &TreeEntry) -> Option<BlobId> {
    let size = entry.lfs.as_ref().map_or(entry.size, |lfs| lfs.size);
    file_set::entry_digest(entry).map(|digest| BlobId { digest, size })
}

/// The `git_lfs_concat` hash of a variant's planned files as `sha256-<hex>`
/// ([`file_set::variant_hash`]).
pub fn variant_hash(variant: &str, files: &[PlannedFile]) -> String {
    file_set::variant_hash(variant, files.iter().map(PlannedFile::hashed))
}

impl PlannedFile {
    /// `(repo path, digest)`, the pair a variant hash is made of.
    pub fn hashed(&self) -> (&str, Digest) {
        (self.path.as_str(), self.digest.digest)
    }
}

/// Chooses variants and files for one kernel from its recursive listing.
///
/// Every path of the listing is checked first ([`repo_path::check_entries`]):
/// `..`, absolute paths, backslashes, control characters, over-long names and
/// duplicates fail the plan, so no file of a hostile listing is ever requested.
///
/// With variant hashes (a format-A lock) every selected variant must be
/// locked, and the file set is the one whose hash equals the lock's: all files
/// (locks written by reference ≤0.15) or all but bytecode (0.16). Without
/// hashes (0.17 locks) bytecode is skipped, as 0.17 downloads skip it.
pub fn plan_kernel(
    kernel: &LockedKernel,
    entries: &[TreeEntry],
    selection: &VariantSelection,
) -> Result<KernelPlan, DownloadError> {
    check_listing(kernel, entries)?;
    let available = available_variants(entries);
    if available.is_empty() {
        return Err(DownloadError::NoBuildVariants {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
        });
    }
    // With variant hashes the lock is the authority: the variants come from
    // it, and each must be in the listing of the locked commit.
    let chosen = match &kernel.variants {
        Some(hashes) if !hashes.is_empty() => {
            let locked: BTreeSet<String> = hashes.keys().cloned().collect();
            let chosen = selection.choose(&kernel.repo_id, &kernel.commit, &locked)?;
            if let Some(missing) = chosen.iter().find(|v| !available.contains(*v)) {
                return Err(DownloadError::LockedVariantNotListed {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    variant: missing.clone(),
                    listed: available.into_iter().collect(),
                });
            }
            chosen
        }
        _ => selection.choose(&kernel.repo_id, &kernel.commit, &available)?,
    };
    let mut variants = BTreeMap::new();
    for variant in chosen {
        let mut files =
            planned_files(kernel, entries, |path| file_set::in_variant(path, &variant))?;
        let set = match &kernel.variants {
            None => FileSet::NoBytecode,
            Some(hashes) => {
                let locked =
                    hashes
                        .get(&variant)
                        .ok_or_else(|| DownloadError::VariantNotLocked {
                            repo_id: kernel.repo_id.clone(),
                            commit: kernel.commit.clone(),
                            variant: variant.clone(),
                        })?;
                let hashed: Vec<_> = files.iter().map(PlannedFile::hashed).collect();
                file_set::matching_file_set(&variant, &hashed, locked).map_err(|listed| {
                    DownloadError::ListingMismatch {
                        repo_id: kernel.repo_id.clone(),
                        commit: kernel.commit.clone(),
                        variant: variant.clone(),
                        locked: locked.clone(),
                        listed,
                    }
                })?
            }
        };
        files.retain(|f| set.includes(&f.path));
        variants.insert(variant, files);
    }
    Ok(KernelPlan { variants })
}

impl KernelPlan {
    /// Distinct blobs of the plan, each with the repo paths that link to it.
    pub fn blobs(&self) -> BTreeMap<Digest, (BlobId, Vec<String>)> {
        let mut blobs: BTreeMap<Digest, (BlobId, Vec<String>)> = BTreeMap::new();
        for file in self.variants.values().flatten() {
            blobs
                .entry(file.digest.digest)
                .or_insert_with(|| (file.digest, Vec::new()))
                .1
                .push(file.path.clone());
        }
        blobs
    }

    /// Number of files over all selected variants.
    pub fn file_count(&self) -> usize {
        self.variants.values().map(Vec::len).sum()
    }

    /// Total content size in bytes over all selected variants.
    pub fn total_bytes(&self) -> u64 {
        kernels_types::size::total(self.variants.values().flatten().map(|f| f.digest.size))
    }
}

/// Display form `owner/name@abcdef1`.
pub(crate) fn label(repo_id: &RepoId, commit: &CommitId) -> String {
    format!("{repo_id}@{}", commit.short())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::DigestKind;
    use kernels_types::wire::TreeLfs;

    fn file(path: &str, oid: &str, size: u64, lfs: Option<&str>) -> TreeEntry {
        TreeEntry {
            kind: "file".into(),
            oid: oid.parse().unwrap(),
            size,
            path: path.into(),
            lfs: lfs.map(|sha| TreeLfs {
                oid: sha.parse().unwrap(),
                size,
                pointer_size: 130,
            }),
        }
    }

    #[test]
    fn variants_and_digests_from_listing() {
        let entries = vec![
            TreeEntry {
                kind: "directory".into(),
                oid: "0".repeat(40).parse().unwrap(),
                size: 0,
                path: "build/torch-cpu".into(),
                lfs: None,
            },
            file("build/torch-cuda/x/__init__.py", &"a".repeat(40), 3, None),
            file(
                "build/torch-cuda/x/_ops.so",
                &"b".repeat(40),
                9,
                Some(&"c".repeat(64)),
            ),
            file("build/README", &"d".repeat(40), 1, None),
            file("README.md", &"e".repeat(40), 1, None),
        ];
        let available = available_variants(&entries);
        assert_eq!(
            available.into_iter().collect::<Vec<_>>(),
            ["torch-cpu", "torch-cuda"]
        );
        let lfs = entry_digest(&entries[2]).unwrap();
        assert_eq!(
            (lfs.kind(), lfs.etag().len(), lfs.size),
            (DigestKind::Sha256, 64, 9)
        );
        assert_eq!(
            entry_digest(&entries[1]).unwrap().kind(),
            DigestKind::GitBlobSha1
        );
        // A digest of the other kind names no content.
        assert!(entry_digest(&file("x", &"f".repeat(64), 1, None)).is_none());
        let short_lfs = file("x", &"a".repeat(40), 1, Some(&"b".repeat(40)));
        assert!(entry_digest(&short_lfs).is_none());
    }

    #[test]
    fn lock_hash_picks_the_file_set() {
        let entries = vec![
            file("build/torch-cpu/x/__init__.py", &"a".repeat(40), 3, None),
            file(
                "build/torch-cpu/x/__pycache__/i.pyc",
                &"b".repeat(40),
                3,
                None,
            ),
        ];
        let kernel = |hash: Option<String>| LockedKernel {
            repo_id: "acme/x".parse().unwrap(),
            commit: "1".repeat(40).parse().unwrap(),
            variants: hash.map(|h| [("torch-cpu".to_owned(), h)].into_iter().collect()),
        };
        let all: Vec<PlannedFile> = entries
            .iter()
            .map(|e| PlannedFile {
                path: e.path.clone(),
                digest: entry_digest(e).unwrap(),
            })
            .collect();
        let named = VariantSelection::Named(vec!["torch-cpu".into()]);
        let count = |k: &LockedKernel| plan_kernel(k, &entries, &named).map(|p| p.file_count());
        // A <=0.15 lock hashed the bytecode too; a 0.16 lock did not; 0.17 has no hash.
        assert_eq!(
            count(&kernel(Some(variant_hash("torch-cpu", &all)))).unwrap(),
            2
        );
        assert_eq!(
            count(&kernel(Some(variant_hash("torch-cpu", &all[..1])))).unwrap(),
            1
        );
        assert_eq!(count(&kernel(None)).unwrap(), 1);
        assert!(matches!(
            count(&kernel(Some(format!("sha256-{}", "0".repeat(64))))),
            Err(DownloadError::ListingMismatch { .. })
        ));
        let unlocked = LockedKernel {
            variants: Some(Default::default()),
            ..kernel(None)
        };
        assert!(matches!(
            count(&unlocked),
            Err(DownloadError::VariantNotLocked { .. })
        ));
    }

    #[test]
    fn unsafe_listing_paths_fail_the_plan() {
        let kernel = LockedKernel {
            repo_id: "acme/x".parse().unwrap(),
            commit: "1".repeat(40).parse().unwrap(),
            variants: None,
        };
        let named = VariantSelection::Named(vec!["torch-cpu".into()]);
        for bad in [
            "build/torch-cpu/../../../etc/x",
            "/build/torch-cpu/x",
            "build/torch-cpu/a\\b",
            "build/torch-cpu/a\0b",
            "build/torch-cpu/\u{1b}[2J",
        ] {
            let entries = vec![
                file("build/torch-cpu/x/__init__.py", &"a".repeat(40), 3, None),
                file(bad, &"b".repeat(40), 3, None),
            ];
            let err = plan_kernel(&kernel, &entries, &named).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, DownloadError::UnsafePath { .. }), "{text}");
            assert!(
                text.contains("acme/x@1111") && !text.contains('\u{1b}'),
                "{text}"
            );
        }
        let twice = vec![
            file("build/torch-cpu/x/a.py", &"a".repeat(40), 3, None),
            file("build/torch-cpu/x/a.py", &"b".repeat(40), 3, None),
        ];
        let err = plan_kernel(&kernel, &twice, &named).unwrap_err();
        assert!(err.to_string().contains("twice"), "{err}");
    }

    #[test]
    fn variant_hash_matches_reference_vector() {
        // reference-behaviour §4.3, first vector.
        let files = vec![PlannedFile {
            path: "build/torch-universal/activation/__init__.py".into(),
            digest: BlobId {
                digest: Digest::from_hex("7d4290a117a4ddcc11daae7ea675841033830c8f").unwrap(),
                size: 6,
            },
        }];
        assert_eq!(
            variant_hash("torch-universal", &files),
            "sha256-acd5beb6dc075df69631dbe4d0677f5b16633924d4ee900be343810f19fb55b1"
        );
    }
}
