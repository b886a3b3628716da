//! From a Hub tree listing to the list of files (and blobs) to place in the cache.

use std::collections::{BTreeMap, BTreeSet};

use crate::variant::VariantSelection;
use kernels_cache::{Digest, DigestKind};
use kernels_types::hash::FileDigest;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::TreeEntry;

use super::{DownloadError, LockedKernel};

/// One file of a selected variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Full repo path, `build/<variant>/…`.
    pub path: String,
    /// The blob it must link to (name, digest kind, size).
    pub digest: Digest,
}

/// Everything to place in the cache for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPlan {
    /// Selected variants with their files (sorted by path).
    pub variants: BTreeMap<String, Vec<PlannedFile>>,
}

/// Whether a path is Python bytecode (`*.pyc` or under `__pycache__/`), which
/// the reference skips from 0.16 on, in lock hashes and downloads alike.
pub fn is_bytecode(path: &str) -> bool {
    path.ends_with(".pyc") || path.split('/').any(|c| c == "__pycache__")
}

/// The variant directories of a listing: the second component of every entry
/// below `build/` (directories `build/<v>` and files `build/<v>/…`).
pub fn available_variants(entries: &[TreeEntry]) -> BTreeSet<String> {
    entries
        .iter()
        .filter_map(|e| {
            let rest = e.path.strip_prefix("build/")?;
            let (variant, tail) = rest.split_once('/').unwrap_or((rest, ""));
            (!variant.is_empty() && (!e.is_file() || !tail.is_empty())).then(|| variant.to_owned())
        })
        .collect()
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The blob a tree entry must become: LFS files are named by `lfs.oid`
/// (sha256, with `lfs.size`), other files by `oid` (git blob sha1, with `size`).
pub fn entry_digest(entry: &TreeEntry) -> Option<Digest> {
    match &entry.lfs {
        Some(lfs) => is_lower_hex(&lfs.oid, 64).then(|| Digest {
            kind: DigestKind::Sha256,
            hex: lfs.oid.clone(),
            size: lfs.size,
        }),
        None => is_lower_hex(&entry.oid, 40).then(|| Digest {
            kind: DigestKind::GitBlobSha1,
            hex: entry.oid.clone(),
            size: entry.size,
        }),
    }
}

/// The `git_lfs_concat` hash of a variant's files as `sha256-<hex>` (reference
/// §4): sort by the path relative to `build/<variant>/`, then hash the
/// concatenation of each relative path's bytes and the raw digest bytes.
pub fn variant_hash(variant: &str, files: &[PlannedFile]) -> String {
    let prefix = format!("build/{variant}/");
    kernels_types::hash::git_lfs_concat(files.iter().map(|f| {
        let name = f.path.strip_prefix(&prefix).unwrap_or(&f.path);
        let digest = FileDigest::from_hex(&f.digest.hex)
            .expect("planned digests are validated lowercase hex by `entry_digest`");
        (name, digest)
    }))
}

/// Chooses variants and files for one kernel from its recursive listing.
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
    let available = available_variants(entries);
    let chosen = selection.choose(&kernel.repo_id, &kernel.commit, &available)?;
    let mut variants = BTreeMap::new();
    for variant in chosen {
        let prefix = format!("build/{variant}/");
        let mut files = Vec::new();
        for entry in entries
            .iter()
            .filter(|e| e.is_file() && e.path.starts_with(&prefix))
        {
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
        let without_bytecode = || -> Vec<PlannedFile> {
            files
                .iter()
                .filter(|f| !is_bytecode(&f.path))
                .cloned()
                .collect()
        };
        let files = match &kernel.variants {
            None => without_bytecode(),
            Some(hashes) => {
                let locked =
                    hashes
                        .get(&variant)
                        .ok_or_else(|| DownloadError::VariantNotLocked {
                            repo_id: kernel.repo_id.clone(),
                            commit: kernel.commit.clone(),
                            variant: variant.clone(),
                        })?;
                let all_hash = variant_hash(&variant, &files);
                if &all_hash == locked {
                    files
                } else {
                    let filtered = without_bytecode();
                    let filtered_hash = variant_hash(&variant, &filtered);
                    if &filtered_hash != locked {
                        return Err(DownloadError::ListingMismatch {
                            repo_id: kernel.repo_id.clone(),
                            commit: kernel.commit.clone(),
                            variant: variant.clone(),
                            locked: locked.clone(),
                            listed: all_hash,
                        });
                    }
                    filtered
                }
            }
        };
        variants.insert(variant, files);
    }
    Ok(KernelPlan { variants })
}

impl KernelPlan {
    /// Distinct blobs of the plan, each with the repo paths that link to it.
    pub fn blobs(&self) -> BTreeMap<String, (Digest, Vec<String>)> {
        let mut blobs: BTreeMap<String, (Digest, Vec<String>)> = BTreeMap::new();
        for file in self.variants.values().flatten() {
            blobs
                .entry(file.digest.hex.clone())
                .or_insert_with(|| (file.digest.clone(), Vec::new()))
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
        self.variants
            .values()
            .flatten()
            .map(|f| f.digest.size)
            .sum()
    }
}

/// The first 7 characters of a commit id, as git abbreviates it in messages.
pub(crate) fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

/// Display form `owner/name@abcdef1`.
pub(crate) fn label(repo_id: &RepoId, commit: &str) -> String {
    format!("{repo_id}@{}", short(commit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::wire::TreeLfs;

    fn file(path: &str, oid: &str, size: u64, lfs: Option<&str>) -> TreeEntry {
        TreeEntry {
            kind: "file".into(),
            oid: oid.into(),
            size,
            path: path.into(),
            lfs: lfs.map(|sha| TreeLfs {
                oid: sha.into(),
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
                oid: "0".repeat(40),
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
            (lfs.kind, lfs.hex.len(), lfs.size),
            (DigestKind::Sha256, 64, 9)
        );
        assert_eq!(
            entry_digest(&entries[1]).unwrap().kind,
            DigestKind::GitBlobSha1
        );
        assert!(entry_digest(&file("x", "XYZ", 1, None)).is_none());
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
            commit: "1".repeat(40),
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
    fn bytecode_paths() {
        assert!(is_bytecode("build/v/x/__pycache__/a.cpython-311.pyc"));
        assert!(is_bytecode("build/v/x/a.pyc"));
        assert!(!is_bytecode("build/v/x/a.py"));
    }

    #[test]
    fn variant_hash_matches_reference_vector() {
        // reference-behaviour §4.3, first vector.
        let files = vec![PlannedFile {
            path: "build/torch-universal/activation/__init__.py".into(),
            digest: Digest {
                kind: DigestKind::GitBlobSha1,
                hex: "7d4290a117a4ddcc11daae7ea675841033830c8f".into(),
                size: 6,
            },
        }];
        assert_eq!(
            variant_hash("torch-universal", &files),
            "sha256-acd5beb6dc075df69631dbe4d0677f5b16633924d4ee900be343810f19fb55b1"
        );
    }
}
