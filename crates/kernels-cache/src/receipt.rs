//! Verification receipts: what a full check of one snapshot variant found,
//! so that a later run can trust files that did not change without reading
//! them again.
//!
//! ```text
//! <folder>/.kernels-receipts/<commit>/listing.json     variant names of the commit's listing
//! <folder>/.kernels-receipts/<commit>/<variant>.json   per file: blob name and stamp
//! ```
//!
//! The folder sits beside `blobs/`, `snapshots/` and `refs/`, where
//! `huggingface_hub`'s cache scan and deletion never look (its scan reads only
//! `snapshots/` and `refs/` of a repository folder), so removing a revision
//! with `hf cache rm` leaves a receipt whose files are gone: it then matches
//! nothing and costs a full check. A receipt is only a hint for skipping a
//! hash: every reader compares it with the files on disk, and one that is
//! missing, unreadable, of another version, malformed or owned by another
//! user counts as absent.
//! Receipts are written atomically ([`crate::write_atomic`]); a cache that
//! cannot be written simply has none.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{CacheError, RepoCache};

/// The receipt format; a receipt of any other version is ignored.
const VERSION: u32 = 1;

/// The name of the receipts folder inside a repository folder.
pub const RECEIPTS_DIR: &str = ".kernels-receipts";

/// What `stat` says of one blob: any write, replacement or `touch` changes
/// at least one field (`ctime` cannot be set back by a user).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the Unix epoch (0 off Unix).
    pub ctime_ns: i64,
    /// Inode number (0 off Unix).
    pub ino: u64,
    /// Device number (0 off Unix).
    pub dev: u64,
}

impl FileStamp {
    /// The stamp of the file `path` leads to (links followed).
    ///
    /// Errors: the `stat` error, naming the path.
    pub fn of(path: &Path) -> std::io::Result<FileStamp> {
        Ok(FileStamp::from_metadata(&fs_err::metadata(path)?))
    }

    /// The stamp of already read metadata.
    pub fn from_metadata(meta: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns =
                |secs: i64, nanos: i64| secs.saturating_mul(1_000_000_000).saturating_add(nanos);
            FileStamp {
                size: meta.len(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
                ino: meta.ino(),
                dev: meta.dev(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            FileStamp {
                size: meta.len(),
                mtime_ns,
                ctime_ns: 0,
                ino: 0,
                dev: 0,
            }
        }
    }
}

/// One file of a variant receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptFile {
    /// The blob the snapshot link points at (its name, the checked digest).
    pub etag: String,
    /// The blob's stamp when the check passed.
    pub stamp: FileStamp,
}

/// The receipt of one variant of one snapshot: every file under
/// `build/<variant>/` that the full check covered, by repo path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantReceipt {
    /// Repo path (`build/<variant>/…`) to its blob and stamp.
    pub files: BTreeMap<String, ReceiptFile>,
}

impl VariantReceipt {
    /// Whether `path`, linked to `etag`, is the file the receipt covers with
    /// the same stamp.
    pub fn trusts(&self, path: &str, etag: &str, stamp: &FileStamp) -> bool {
        self.files
            .get(path)
            .is_some_and(|file| file.etag == etag && file.stamp == *stamp)
    }
}

/// The receipt of a commit's listing: the variant names a tree listing of
/// the commit shows (a commit never changes, so neither does its listing).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingReceipt {
    /// The variant names under `build/`.
    pub variants: BTreeSet<String>,
}

/// A receipt file on disk: the format version and the content.
#[derive(Serialize, Deserialize)]
struct Stored<T> {
    version: u32,
    #[serde(flatten)]
    content: T,
}

impl RepoCache {
    /// `<folder>/.kernels-receipts/<commit>`.
    pub fn receipts_dir(&self, commit: &str) -> PathBuf {
        self.dir().join(RECEIPTS_DIR).join(commit)
    }

    /// The receipt of `variant` of `commit`, if one is stored and readable.
    pub fn read_variant_receipt(&self, commit: &str, variant: &str) -> Option<VariantReceipt> {
        self.read_receipt(&self.receipt_path(commit, variant)?)
    }

    /// Stores the receipt of `variant` of `commit` (atomically, replacing any).
    ///
    /// Errors: [`CacheError::BadPath`] for a variant name that is not one
    /// path component; [`CacheError::Io`] when it cannot be written.
    pub fn write_variant_receipt(
        &self,
        commit: &str,
        variant: &str,
        receipt: &VariantReceipt,
    ) -> Result<(), CacheError> {
        let path = self
            .receipt_path(commit, variant)
            .ok_or_else(|| CacheError::BadPath {
                path: variant.to_owned(),
            })?;
        self.write_receipt(&path, receipt)
    }

    /// The listing receipt of `commit`, if one is stored and readable.
    pub fn read_listing_receipt(&self, commit: &str) -> Option<ListingReceipt> {
        self.read_receipt(&self.receipts_dir(commit).join("listing.json"))
    }

    /// Stores the listing receipt of `commit` unless the same one is stored.
    ///
    /// Errors: [`CacheError::Io`] when it cannot be written.
    pub fn write_listing_receipt(
        &self,
        commit: &str,
        receipt: &ListingReceipt,
    ) -> Result<(), CacheError> {
        if self.read_listing_receipt(commit).as_ref() == Some(receipt) {
            return Ok(());
        }
        self.write_receipt(&self.receipts_dir(commit).join("listing.json"), receipt)
    }

    /// `<commit>/<variant>.json`, for a variant name that is one plain path
    /// component (never `listing`, which the listing receipt uses).
    fn receipt_path(&self, commit: &str, variant: &str) -> Option<PathBuf> {
        let plain = !variant.is_empty()
            && variant != "listing"
            && !variant.starts_with('.')
            && !variant.contains(['/', '\\']);
        let canonical = kernels_types::CommitId::is_canonical(commit);
        (plain && canonical).then(|| self.receipts_dir(commit).join(format!("{variant}.json")))
    }

    /// A receipt is read only when it is a regular file of this user's: in a
    /// shared cache, one planted by someone else vouches for nothing.
    fn read_receipt<T: for<'de> Deserialize<'de>>(&self, path: &Path) -> Option<T> {
        let meta = fs_err::symlink_metadata(path).ok()?;
        if !meta.is_file() || !ours(&meta) {
            return None;
        }
        let bytes = fs_err::read(path).ok()?;
        let stored: Stored<T> = serde_json::from_slice(&bytes).ok()?;
        (stored.version == VERSION).then_some(stored.content)
    }

    /// Writes `content` to `path` through a temporary name of this process
    /// ([`crate::layout::temp_name`]) renamed into place, after removing the
    /// temporary names that killed processes left in that directory: a
    /// receipt is an optimisation, so a torn one only reads as absent, but
    /// no write leaves a stray file in the cache.
    fn write_receipt<T: Serialize>(&self, path: &Path, content: &T) -> Result<(), CacheError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        self.create_dir(dir)?;
        crate::layout::sweep_stale_temps(dir);
        let stored = Stored {
            version: VERSION,
            content,
        };
        let bytes = serde_json::to_vec(&stored).map_err(std::io::Error::other)?;
        let tmp = crate::layout::temp_name(dir);
        fs_err::write(&tmp, &bytes)?;
        if let Err(err) = fs_err::rename(&tmp, path) {
            let _ = fs_err::remove_file(&tmp);
            return Err(err.into());
        }
        Ok(())
    }
}

/// Whether the file was written by this process's user.
#[cfg(unix)]
fn ours(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.uid() == rustix::process::geteuid().as_raw()
}

#[cfg(not(unix))]
fn ours(_meta: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HubCache;
    use kernels_types::wire::RepoType;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn repo(dir: &Path) -> RepoCache {
        HubCache::new(dir).repo(&"acme/relu".parse().unwrap(), RepoType::Kernel)
    }

    #[test]
    fn receipts_round_trip_and_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let blob = dir.path().join("blob");
        fs_err::write(&blob, b"one").unwrap();
        let stamp = FileStamp::of(&blob).unwrap();
        let mut receipt = VariantReceipt::default();
        receipt.files.insert(
            "build/torch-cpu/a.py".into(),
            ReceiptFile {
                etag: "e".repeat(40),
                stamp,
            },
        );
        repo.write_variant_receipt(COMMIT, "torch-cpu", &receipt)
            .unwrap();
        let read = repo.read_variant_receipt(COMMIT, "torch-cpu").unwrap();
        assert_eq!(read, receipt);
        assert!(read.trusts("build/torch-cpu/a.py", &"e".repeat(40), &stamp));
        assert!(!read.trusts("build/torch-cpu/a.py", &"f".repeat(40), &stamp));
        // Rewriting the file (same size) changes its stamp.
        fs_err::write(&blob, b"two").unwrap();
        let now = FileStamp::of(&blob).unwrap();
        assert!(!read.trusts("build/torch-cpu/a.py", &"e".repeat(40), &now));

        let listing = ListingReceipt {
            variants: ["torch-cpu".to_owned()].into(),
        };
        repo.write_listing_receipt(COMMIT, &listing).unwrap();
        assert_eq!(repo.read_listing_receipt(COMMIT).unwrap(), listing);
    }

    #[test]
    fn odd_names_and_foreign_files_are_no_receipt() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let receipt = VariantReceipt::default();
        for name in ["", "listing", "../x", ".hidden", "a/b"] {
            assert!(repo.write_variant_receipt(COMMIT, name, &receipt).is_err());
            assert!(repo.read_variant_receipt(COMMIT, name).is_none());
        }
        let path = repo.receipts_dir(COMMIT).join("torch-cpu.json");
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        for junk in [&b"{"[..], br#"{"version":2,"files":{}}"#] {
            fs_err::write(&path, junk).unwrap();
            assert!(repo.read_variant_receipt(COMMIT, "torch-cpu").is_none());
        }
    }
}
