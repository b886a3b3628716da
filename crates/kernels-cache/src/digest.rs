//! Content digests that name blobs: git blob sha1 for regular files, sha256 for
//! LFS files, computed incrementally while bytes stream in.

use std::fmt;
use std::io::Read;
use std::path::Path;

use sha2::Digest as _;

use kernels_types::GitBlobHasher;

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
    /// the rule the reference's `validate_kernel` applies.
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

/// An expected blob: digest kind, lowercase hex and size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Digest {
    /// Digest algorithm.
    pub kind: DigestKind,
    /// Lowercase hex digest; also the blob's file name.
    pub hex: String,
    /// Content size in bytes.
    pub size: u64,
}

/// Incremental hasher for one [`DigestKind`]. The git blob header needs the
/// size up front, so the hasher is created with the announced size; the byte
/// count is tracked separately so a short or long body is detected.
pub struct Hasher {
    inner: Inner,
    len: u64,
}

enum Inner {
    GitBlob(GitBlobHasher),
    Sha256(sha2::Sha256),
}

impl Hasher {
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

    /// A hasher for content announced to be `size` bytes long.
    pub fn new(kind: DigestKind, size: u64) -> Hasher {
        let inner = match kind {
            DigestKind::GitBlobSha1 => Inner::GitBlob(GitBlobHasher::new(size)),
            DigestKind::Sha256 => Inner::Sha256(sha2::Sha256::new()),
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

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no byte was fed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Lowercase hex digest of everything fed.
    pub fn finish(self) -> String {
        match self.inner {
            Inner::GitBlob(h) => hex::encode(h.finalize()),
            Inner::Sha256(h) => hex::encode(h.finalize()),
        }
    }
}

impl Digest {
    /// Hashes the file at `path` as `kind`, returning the hex digest and the
    /// number of bytes read. Errors name the path.
    pub fn compute_file(path: &Path, kind: DigestKind) -> std::io::Result<(String, u64)> {
        let mut file = fs_err::File::open(path)?;
        let size = file.metadata()?.len();
        let mut hasher = Hasher::new(kind, size);
        hasher.update_from(&mut file)?;
        let len = hasher.len();
        Ok((hasher.finish(), len))
    }

    /// Whether the file at `path` has exactly this size and digest. A missing
    /// file is `Ok(false)`; other read errors are returned.
    pub fn matches_file(&self, path: &Path) -> std::io::Result<bool> {
        match fs_err::metadata(path) {
            Ok(meta) if meta.is_file() && meta.len() == self.size => {}
            Ok(_) => return Ok(false),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(err),
        }
        let (hex, len) = Self::compute_file(path, self.kind)?;
        Ok(len == self.size && hex == self.hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_blob_sha1_matches_git() {
        // `printf 'x = 1\n' | git hash-object --stdin`
        let mut h = Hasher::new(DigestKind::GitBlobSha1, 6);
        h.update(b"x = 1\n");
        assert_eq!(h.finish(), "7d4290a117a4ddcc11daae7ea675841033830c8f");
    }

    #[test]
    fn sha256_streams() {
        let mut h = Hasher::new(DigestKind::Sha256, 3);
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.len(), 3);
        assert_eq!(
            h.finish(),
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
