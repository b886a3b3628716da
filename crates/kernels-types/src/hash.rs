//! Content digests: git blob SHA-1, SHA-256, and the per-variant
//! `git_lfs_concat` hash stored in variant-hash lock files.
//!
//! `git_lfs_concat` (reference `kernels` 0.1.7–0.16) hashes one build variant
//! (`build/<variant>/`) as follows: for every file take its path relative to the
//! variant directory (`/`-separated, UTF-8) and its digest — the 32-byte SHA-256 of
//! the content for LFS files, the 20-byte git blob SHA-1 otherwise; sort by path
//! bytes; SHA-256 over the concatenation `path ‖ digest` of all files (no
//! separators, no lengths); write the result as `sha256-<64 lowercase hex>`.

use std::fmt;

use sha1::Digest as _;
use sha1::Sha1;
use sha2::Sha256;

/// The `hash_type` value of variant-hash lock entries.
pub const GIT_LFS_CONCAT: &str = "git_lfs_concat";

/// Git blob id of `content`: SHA-1 of `"blob <len>\0" ‖ content`.
pub fn git_blob_sha1(content: &[u8]) -> [u8; 20] {
    let mut hasher = GitBlobHasher::new(content.len() as u64);
    hasher.update(content);
    hasher.finalize()
}

/// SHA-256 of `content`.
pub fn sha256(content: &[u8]) -> [u8; 32] {
    Sha256::digest(content).into()
}

/// Streaming git blob SHA-1 for content whose length is known up front.
#[derive(Debug, Clone)]
pub struct GitBlobHasher(Sha1);

impl GitBlobHasher {
    /// Starts hashing a blob of `len` bytes.
    pub fn new(len: u64) -> Self {
        let mut hasher = Sha1::new();
        hasher.update(format!("blob {len}\0").as_bytes());
        GitBlobHasher(hasher)
    }

    /// Feeds more content.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The 20-byte blob id. The result is only the git id if exactly `len` bytes were fed.
    pub fn finalize(self) -> [u8; 20] {
        self.0.finalize().into()
    }
}

/// The digest one file contributes to a `git_lfs_concat` hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileDigest {
    /// Git blob SHA-1 (files stored in git).
    GitSha1([u8; 20]),
    /// SHA-256 of the content (LFS files).
    Sha256([u8; 32]),
}

/// A hex string that is not a 40- or 64-digit digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("`{0}` is not a digest: expected 40 (git SHA-1) or 64 (SHA-256) hexadecimal digits")]
#[diagnostic(code(kernels::hash::bad_digest))]
pub struct BadDigest(pub String);

impl FileDigest {
    /// Parses 40 hex digits as a git SHA-1 or 64 as a SHA-256 (either case).
    pub fn from_hex(hex_digest: &str) -> Result<Self, BadDigest> {
        let bad = || BadDigest(hex_digest.to_owned());
        match hex_digest.len() {
            40 => {
                let mut out = [0u8; 20];
                hex::decode_to_slice(hex_digest, &mut out).map_err(|_| bad())?;
                Ok(FileDigest::GitSha1(out))
            }
            64 => {
                let mut out = [0u8; 32];
                hex::decode_to_slice(hex_digest, &mut out).map_err(|_| bad())?;
                Ok(FileDigest::Sha256(out))
            }
            _ => Err(bad()),
        }
    }

    /// The raw digest bytes (20 or 32).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            FileDigest::GitSha1(b) => b,
            FileDigest::Sha256(b) => b,
        }
    }
}

impl fmt::Display for FileDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.as_bytes()))
    }
}

/// The `git_lfs_concat` hash of one variant, as `sha256-<hex>`.
///
/// `files` holds `(path relative to build/<variant>/, digest)` pairs in any order;
/// they are sorted by path bytes here. An empty set hashes to the SHA-256 of
/// nothing.
pub fn git_lfs_concat<'a, I>(files: I) -> String
where
    I: IntoIterator<Item = (&'a str, FileDigest)>,
{
    let mut files: Vec<(&str, FileDigest)> = files.into_iter().collect();
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut hasher = Sha256::new();
    for (name, digest) in files {
        hasher.update(name.as_bytes());
        hasher.update(digest.as_bytes());
    }
    format!("sha256-{}", hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_blob_ids() {
        assert_eq!(
            hex::encode(git_blob_sha1(b"x = 1\n")),
            "7d4290a117a4ddcc11daae7ea675841033830c8f"
        );
        assert_eq!(
            hex::encode(git_blob_sha1(b"from ._ops import ops\n")),
            "1cec5723464b586acbda5ab039a6248d38255033"
        );
        assert_eq!(
            hex::encode(git_blob_sha1(b"ops = 1\n")),
            "f50c130ea60d9ad99bd2dbe162726789440e096e"
        );
    }

    /// Reference vector: one git file in `torch-universal`.
    #[test]
    fn single_git_file_vector() {
        let digest = FileDigest::GitSha1(git_blob_sha1(b"x = 1\n"));
        assert_eq!(
            git_lfs_concat([("activation/__init__.py", digest)]),
            "sha256-acd5beb6dc075df69631dbe4d0677f5b16633924d4ee900be343810f19fb55b1"
        );
    }

    /// Reference vector: two git files and one LFS file, given out of order.
    #[test]
    fn mixed_git_and_lfs_vector() {
        let mut so = vec![0x7f, b'E', b'L', b'F'];
        so.extend([0u8; 100]);
        let so_digest = sha256(&so);
        assert_eq!(
            hex::encode(so_digest),
            "f1b0a36cec27b90029c4cd36c1f9eb8cd40743ccbdf9e3d2a8773b92e86fdb4c"
        );
        let files = [
            (
                "activation/_ops.py",
                FileDigest::from_hex("f50c130ea60d9ad99bd2dbe162726789440e096e").unwrap(),
            ),
            (
                "activation/_activation_abc.abi3.so",
                FileDigest::Sha256(so_digest),
            ),
            (
                "activation/__init__.py",
                FileDigest::GitSha1(git_blob_sha1(b"from ._ops import ops\n")),
            ),
        ];
        assert_eq!(
            git_lfs_concat(files),
            "sha256-8d1101bae14667a764e527c75e7a0fa1dbf6b4ab1ccd5e5fe973e655fba15715"
        );
    }

    #[test]
    fn digest_parsing() {
        assert!(matches!(
            FileDigest::from_hex(&"A".repeat(40)),
            Ok(FileDigest::GitSha1(_))
        ));
        assert!(matches!(
            FileDigest::from_hex(&"0".repeat(64)),
            Ok(FileDigest::Sha256(_))
        ));
        assert!(FileDigest::from_hex("abc").is_err());
        assert!(FileDigest::from_hex(&"g".repeat(40)).is_err());
    }

    #[test]
    fn streaming_matches_one_shot() {
        let mut hasher = GitBlobHasher::new(6);
        hasher.update(b"x = ");
        hasher.update(b"1\n");
        assert_eq!(hasher.finalize(), git_blob_sha1(b"x = 1\n"));
    }
}
