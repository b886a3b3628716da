//! The one digest model of `kernels`: which algorithm names a blob
//! ([`DigestKind`]), a parsed digest ([`Digest`]), a digest with its size
//! ([`BlobId`], what a blob in the cache is named and checked by), the streaming
//! [`Hasher`], and the per-variant `git_lfs_concat` hash of variant-hash lock
//! files ([`git_lfs_concat`]).
//!
//! `git_lfs_concat` (reference `kernels` 0.1.7–0.16) hashes one build variant
//! (`build/<variant>/`) as follows: for every file take its path relative to the
//! variant directory (`/`-separated, UTF-8) and its digest — the 32-byte SHA-256 of
//! the content for LFS files, the 20-byte git blob SHA-1 otherwise; sort by path
//! bytes; SHA-256 over the concatenation `path ‖ digest` of all files (no
//! separators, no lengths); write the result as `sha256-<64 lowercase hex>`.

use std::fmt;
use std::io::Read;

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

/// Which digest names a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DigestKind {
    /// `sha1("blob {len}\0" ‖ content)`, 40 hex: the git object id, the blob name of
    /// regular (non-LFS) files.
    GitBlobSha1,
    /// `sha256(content)`, 64 hex: the blob name of LFS files (`lfs.oid` in the tree).
    Sha256,
}

impl DigestKind {
    /// The kind a blob name implies from its length (40 → git sha1, 64 → sha256),
    /// the rule the reference's `validate_kernel` applies. Says nothing about
    /// whether the name is hex: use [`Digest::from_etag`] for that.
    pub fn from_etag(etag: &str) -> Option<DigestKind> {
        match etag.len() {
            40 => Some(DigestKind::GitBlobSha1),
            64 => Some(DigestKind::Sha256),
            _ => None,
        }
    }
}

impl fmt::Display for DigestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DigestKind::GitBlobSha1 => "git blob sha1",
            DigestKind::Sha256 => "sha256",
        })
    }
}

/// A content digest, parsed from hex once: the git blob SHA-1 of a file stored in
/// git, or the SHA-256 of an LFS file. Displays as lowercase hex, the form blob
/// names (etags) and lock files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Digest {
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

impl Digest {
    /// Parses 40 hex digits as a git SHA-1 or 64 as a SHA-256 (either case).
    pub fn from_hex(hex_digest: &str) -> Result<Self, BadDigest> {
        let bad = || BadDigest(hex_digest.to_owned());
        match hex_digest.len() {
            40 => {
                let mut out = [0u8; 20];
                hex::decode_to_slice(hex_digest, &mut out).map_err(|_| bad())?;
                Ok(Digest::GitSha1(out))
            }
            64 => {
                let mut out = [0u8; 32];
                hex::decode_to_slice(hex_digest, &mut out).map_err(|_| bad())?;
                Ok(Digest::Sha256(out))
            }
            _ => Err(bad()),
        }
    }

    /// Parses a blob name as `huggingface_hub` writes it: 40 or 64 *lowercase*
    /// hex digits (a name in another case is not one we or the Hub wrote).
    pub fn from_etag(etag: &str) -> Result<Self, BadDigest> {
        if etag.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(BadDigest(etag.to_owned()));
        }
        Digest::from_hex(etag)
    }

    /// The algorithm.
    pub fn kind(&self) -> DigestKind {
        match self {
            Digest::GitSha1(_) => DigestKind::GitBlobSha1,
            Digest::Sha256(_) => DigestKind::Sha256,
        }
    }

    /// The raw digest bytes (20 or 32).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Digest::GitSha1(b) => b,
            Digest::Sha256(b) => b,
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.as_bytes()))
    }
}

impl std::str::FromStr for Digest {
    type Err = BadDigest;

    /// [`Digest::from_hex`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Digest::from_hex(s)
    }
}

/// Lowercase hex, as the Hub writes digests.
impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// 40 or 64 hex digits, either case ([`Digest::from_hex`]).
impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Digest::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

/// A blob's identity: its digest and size in bytes. The cache names the blob by
/// the digest ([`BlobId::etag`]) and accepts content only when both match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobId {
    /// Content digest.
    pub digest: Digest,
    /// Content size in bytes.
    pub size: u64,
}

impl BlobId {
    /// The blob's file name in `blobs/`: the digest in lowercase hex.
    pub fn etag(&self) -> String {
        self.digest.to_string()
    }

    /// The digest algorithm.
    pub fn kind(&self) -> DigestKind {
        self.digest.kind()
    }
}

/// Incremental hasher for one [`DigestKind`]. The git blob header needs the
/// size up front, so the hasher is created with the announced size; the byte
/// count is tracked separately so a short or long body is detected. A clone
/// carries on from the same bytes.
#[derive(Clone)]
pub struct Hasher {
    inner: Inner,
    len: u64,
}

#[derive(Clone)]
enum Inner {
    GitBlob(GitBlobHasher),
    Sha256(Sha256),
}

impl Hasher {
    /// A hasher for content announced to be `size` bytes long.
    pub fn new(kind: DigestKind, size: u64) -> Hasher {
        let inner = match kind {
            DigestKind::GitBlobSha1 => Inner::GitBlob(GitBlobHasher::new(size)),
            DigestKind::Sha256 => Inner::Sha256(Sha256::new()),
        };
        Hasher { inner, len: 0 }
    }

    /// Feeds content bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.len += bytes.len() as u64;
        match &mut self.inner {
            Inner::GitBlob(h) => h.update(bytes),
            Inner::Sha256(h) => h.update(bytes),
        }
    }

    /// Feeds everything `reader` yields, in 256 KiB reads.
    pub fn update_from(&mut self, reader: &mut impl Read) -> std::io::Result<()> {
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = reader.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            self.update(&buf[..n]);
        }
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no byte was fed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The digest of everything fed.
    pub fn finish(self) -> Digest {
        match self.inner {
            Inner::GitBlob(h) => Digest::GitSha1(h.finalize()),
            Inner::Sha256(h) => Digest::Sha256(h.finalize().into()),
        }
    }
}

/// The `git_lfs_concat` hash of one variant, as `sha256-<hex>`.
///
/// `files` holds `(path relative to build/<variant>/, digest)` pairs in any order;
/// they are sorted by path bytes here. An empty set hashes to the SHA-256 of
/// nothing.
pub fn git_lfs_concat<'a, I>(files: I) -> String
where
    I: IntoIterator<Item = (&'a str, Digest)>,
{
    let mut files: Vec<(&str, Digest)> = files.into_iter().collect();
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
        let digest = Digest::GitSha1(git_blob_sha1(b"x = 1\n"));
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
                Digest::from_hex("f50c130ea60d9ad99bd2dbe162726789440e096e").unwrap(),
            ),
            (
                "activation/_activation_abc.abi3.so",
                Digest::Sha256(so_digest),
            ),
            (
                "activation/__init__.py",
                Digest::GitSha1(git_blob_sha1(b"from ._ops import ops\n")),
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
            Digest::from_hex(&"A".repeat(40)),
            Ok(Digest::GitSha1(_))
        ));
        assert!(matches!(
            Digest::from_hex(&"0".repeat(64)),
            Ok(Digest::Sha256(_))
        ));
        assert!(Digest::from_hex("abc").is_err());
        assert!(Digest::from_hex(&"g".repeat(40)).is_err());
    }

    #[test]
    fn streaming_matches_one_shot() {
        let mut hasher = GitBlobHasher::new(6);
        hasher.update(b"x = ");
        hasher.update(b"1\n");
        assert_eq!(hasher.finalize(), git_blob_sha1(b"x = 1\n"));
    }

    #[test]
    fn git_blob_sha1_matches_git() {
        // `printf 'x = 1\n' | git hash-object --stdin`
        let mut h = Hasher::new(DigestKind::GitBlobSha1, 6);
        h.update(b"x = 1\n");
        assert_eq!(
            h.finish().to_string(),
            "7d4290a117a4ddcc11daae7ea675841033830c8f"
        );
    }

    #[test]
    fn sha256_streams() {
        let mut h = Hasher::new(DigestKind::Sha256, 3);
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.len(), 3);
        assert_eq!(
            h.finish().to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn kind_from_etag_length() {
        assert_eq!(
            DigestKind::from_etag(&"a".repeat(40)),
            Some(DigestKind::GitBlobSha1)
        );
        assert_eq!(
            DigestKind::from_etag(&"a".repeat(64)),
            Some(DigestKind::Sha256)
        );
        assert_eq!(DigestKind::from_etag("abc"), None);
    }
}
