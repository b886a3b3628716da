//! The one rule for which files of a build variant count, and how a variant's
//! `git_lfs_concat` hash is formed from them: used when locking (hashes written
//! to the lock), when planning a download (which listed files match the locked
//! hash) and when verifying a cache (which snapshot files match it).
//!
//! Reference `kernels` ≤ 0.15 hashes every file of `build/<variant>/`; 0.16
//! leaves out Python bytecode (`*.pyc`, `__pycache__/`); 0.17 locks carry no
//! per-variant hash and download without bytecode. A variant-hash lock does not
//! say which writer made it, so a reader accepts a variant when either file set
//! has the locked hash, the complete set first.

use crate::digest::{Digest, git_lfs_concat};
use crate::wire::TreeEntry;

/// Whether a repo-relative path is Python bytecode (`*.pyc` or inside a
/// `__pycache__` directory).
pub fn is_bytecode(path: &str) -> bool {
    path.ends_with(".pyc") || path.split('/').any(|part| part == "__pycache__")
}

/// Which files of a variant are hashed, downloaded and verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSet {
    /// Every file (locks written by reference ≤ 0.15).
    All,
    /// Every file but Python bytecode (reference 0.16 hashes, 0.17 downloads).
    NoBytecode,
}

impl FileSet {
    /// The set matching a writer that does or does not exclude bytecode.
    pub fn excluding_bytecode(exclude: bool) -> FileSet {
        if exclude {
            FileSet::NoBytecode
        } else {
            FileSet::All
        }
    }

    /// Whether the file at repo path `path` belongs to the set.
    pub fn includes(self, path: &str) -> bool {
        self == FileSet::All || !is_bytecode(path)
    }
}

/// The `git_lfs_concat` hash (`sha256-<hex>`) of variant `variant` from its
/// files given as `(repo path, digest)`, with `build/<variant>/` stripped from
/// each path. Paths outside that prefix are hashed as they are.
pub fn variant_hash<'a>(
    variant: &str,
    files: impl IntoIterator<Item = (&'a str, Digest)>,
) -> String {
    let prefix = format!("build/{variant}/");
    git_lfs_concat(
        files
            .into_iter()
            .map(|(path, digest)| (path.strip_prefix(&prefix).unwrap_or(path), digest)),
    )
}

/// The file set of variant `variant` whose hash equals `locked`, trying
/// [`FileSet::All`] first, or `Err` with the hash of all files when neither
/// matches. `files` holds `(repo path, digest)` for every file of the variant.
pub fn matching_file_set(
    variant: &str,
    files: &[(&str, Digest)],
    locked: &str,
) -> Result<FileSet, String> {
    let all = variant_hash(variant, files.iter().copied());
    if all == locked {
        return Ok(FileSet::All);
    }
    let without = variant_hash(
        variant,
        files.iter().copied().filter(|(path, _)| !is_bytecode(path)),
    );
    if without == locked {
        Ok(FileSet::NoBytecode)
    } else {
        Err(all)
    }
}

/// The digest a tree entry's content has: `lfs.oid` (SHA-256) for LFS files,
/// `oid` (git blob SHA-1) otherwise. `None` when the listed digest is of the
/// other kind (an LFS `oid` of 40 digits, a plain file's of 64).
pub fn entry_digest(entry: &TreeEntry) -> Option<Digest> {
    let (digest, kind) = match &entry.lfs {
        Some(lfs) => (lfs.oid, crate::DigestKind::Sha256),
        None => (entry.oid, crate::DigestKind::GitBlobSha1),
    };
    (digest.kind() == kind).then_some(digest)
}

/// The one rule for which build variant a repo path belongs to, shared by
/// lock, download and verify: the component after `build/`. A directory (or a
/// file below it) under `build/` is a variant; a *file* directly under
/// `build/` counts as a variant of its own name when that name starts with
/// `torch` (the reference lock writer hashes it as one).
pub fn variant_of(path: &str, is_file: bool) -> Option<&str> {
    let rest = path.strip_prefix("build/")?;
    let (variant, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if variant.is_empty() || (is_file && tail.is_empty() && !is_locked_variant(variant)) {
        return None;
    }
    Some(variant)
}

/// Whether a variant-hash lock holds variant `name`: the reference writer
/// hashes exactly the variants whose name starts with `torch` (so `tvm-ffi*`
/// builds and other names are never in such a lock).
pub fn is_locked_variant(name: &str) -> bool {
    name.starts_with("torch")
}

/// Whether repo path `path` is a file of variant `variant` (below
/// `build/<variant>/`, or the file `build/<variant>` itself).
pub fn in_variant(path: &str, variant: &str) -> bool {
    path.strip_prefix("build/")
        .and_then(|rest| rest.strip_prefix(variant))
        .is_some_and(|tail| tail.is_empty() || tail.starts_with('/'))
}

/// The `git_lfs_concat` hash of every build variant of a recursive listing, as
/// the reference lock writer computes them: a variant is the second path
/// component of every *file* whose path starts with the string `build/torch`
/// (so stray directories such as `build/torch-ext` count, `build/tvm-ffi-…` does
/// not); directories are ignored. Variants come back sorted by name bytes. A
/// listed digest of the wrong kind ([`entry_digest`]) is returned as
/// `Err((path, digest))`.
pub fn variant_hashes(
    entries: &[TreeEntry],
    set: FileSet,
) -> Result<Vec<(String, String)>, (String, String)> {
    let mut files: std::collections::BTreeMap<&str, Vec<(&str, Digest)>> = Default::default();
    for entry in entries {
        if !entry.is_file() || !set.includes(&entry.path) {
            continue;
        }
        let Some(variant) = variant_of(&entry.path, true).filter(|v| is_locked_variant(v)) else {
            continue;
        };
        let digest = entry_digest(entry).ok_or_else(|| {
            let listed = entry.lfs.as_ref().map_or(entry.oid, |lfs| lfs.oid);
            (entry.path.clone(), listed.to_string())
        })?;
        files
            .entry(variant)
            .or_default()
            .push((entry.path.as_str(), digest));
    }
    Ok(files
        .into_iter()
        .map(|(variant, files)| (variant.to_owned(), variant_hash(variant, files)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytecode_paths() {
        assert!(is_bytecode("build/x/a/__pycache__/m.cpython-312.pyc"));
        assert!(is_bytecode("build/x/a/m.pyc"));
        assert!(!is_bytecode("build/x/a/m.py"));
        assert!(FileSet::All.includes("a.pyc"));
        assert!(!FileSet::NoBytecode.includes("a.pyc"));
    }

    #[test]
    fn one_variant_rule() {
        assert_eq!(
            variant_of("build/torch-cuda/x.py", true),
            Some("torch-cuda")
        );
        assert_eq!(variant_of("build/torch-cuda", true), Some("torch-cuda"));
        assert_eq!(variant_of("build/README", true), None);
        assert_eq!(variant_of("build/cpu", false), Some("cpu"));
        assert_eq!(
            variant_of("build/tvm-ffi-cu126/x", true),
            Some("tvm-ffi-cu126")
        );
        assert!(!is_locked_variant("tvm-ffi-cu126") && is_locked_variant("torch-ext"));
        assert!(in_variant("build/torch-cuda", "torch-cuda"));
        assert!(in_variant("build/torch-cuda/a", "torch-cuda"));
        assert!(!in_variant("build/torch-cuda2/a", "torch-cuda"));
    }

    #[test]
    fn the_complete_set_is_tried_first() {
        let py = Digest::GitSha1(crate::git_blob_sha1(b"x = 1\n"));
        let pyc = Digest::GitSha1(crate::git_blob_sha1(b"\0"));
        let files = [("build/v/a/m.py", py), ("build/v/a/__pycache__/m.pyc", pyc)];
        let all = variant_hash("v", files);
        let without = variant_hash("v", files[..1].iter().copied());
        assert_eq!(matching_file_set("v", &files, &all), Ok(FileSet::All));
        assert_eq!(
            matching_file_set("v", &files, &without),
            Ok(FileSet::NoBytecode)
        );
        assert_eq!(matching_file_set("v", &files, "sha256-0"), Err(all));
    }
}
