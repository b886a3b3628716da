//! The Hugging Face hub cache, written exactly as `huggingface_hub` writes it so
//! that Python (0.35 through 2.4) and the `kernels` runtime load what we store.
//!
//! ```text
//! <root>/
//!   .locks/<folder>/<etag>.lock              flock held while a blob is written
//!   <folder>/                                kernels--owner--name | models--owner--name
//!     blobs/<etag>                           verified content; etag = git blob sha1 (40 hex)
//!                                            or LFS sha256 (64 hex)
//!     blobs/<etag>.incomplete                partial download (resumable)
//!     snapshots/<commit>/<path>              relative symlink to ../…/blobs/<etag>
//!     refs/<revision>                        40-byte commit id, only for non-commit revisions
//!     .kernels-receipts/<commit>/…           what a full check found (module `receipt`)
//!   .verified-kernels/digest/v1/<key>        the runtime's own receipts (module `runtime_receipt`)
//! ```
//!
//! Invariants kept by this module: a file named `blobs/<etag>` is always complete
//! and verified (it is written as `.incomplete`, fsynced and renamed), and a
//! snapshot link is only created after its blob is in place. The first write of
//! a process into a cache also writes `CACHEDIR.TAG` in the root when it is
//! missing, as `huggingface_hub` 1.9+ does. Anything else found in the cache
//! (`trees/`, `.no_exist/`, other tools' temp files) is left alone.

mod blob;
pub mod fsx;
pub mod inventory;
mod layout;
mod lock;
mod receipt;
mod refs;
mod runtime_receipt;
mod stream_hash;
mod tag;

pub use blob::{BlobWriter, PartialBlob, UNLOCKED_MAX, file_matches, hash_file};
/// The one atomic write ([`kernels_fs`]: temporary file, `fsync`, rename,
/// directory `fsync`), which the cache writes its ref files with; `kernels.lock`,
/// `pyproject.toml` and wheels are written through it too.
pub use kernels_fs as atomic;
pub use kernels_fs::{AtomicError, write_atomic, write_atomic_with};
pub use kernels_types::{BlobId, DigestKind};
pub use layout::{
    CacheOptions, HubCache, Placement, RepoCache, is_temp_name, relative_link_target,
    snapshot_repo_dir,
};
pub use lock::BlobLock;
pub use receipt::{FileStamp, ListingReceipt, RECEIPTS_DIR, ReceiptFile, VariantReceipt};
pub use refs::CachedRef;
pub use runtime_receipt::{KernelLocation, RuntimeReceiptFormat, VERIFIED_DIR};
pub use tag::{CACHEDIR_TAG, CACHEDIR_TAG_NAME, ensure_tag};

/// Something the cache adapted to, for the caller to report once (the library
/// never prints).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheWarning {
    /// The file system does not implement `flock`.
    #[error(
        "file locking is not supported in {} (flock failed); continuing without locks: blobs are written to private temporary files and renamed into place",
        dir.display()
    )]
    NoFlock {
        /// The lock directory.
        dir: PathBuf,
    },
    /// Symlinks cannot be created (or `HF_HUB_DISABLE_SYMLINKS` is set).
    #[error(
        "symlinks are not supported in {} ({reason}); snapshot files are copies of their blobs, as huggingface_hub stores them there",
        dir.display()
    )]
    NoSymlinks {
        /// The cache root.
        dir: PathBuf,
        /// Why (the error of the first failed symlink, or the setting).
        reason: String,
    },
}

use std::path::PathBuf;

/// Errors from reading or writing the hub cache.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CacheError {
    /// A file operation on a cache path failed (the message names the path).
    #[error(transparent)]
    #[diagnostic(
        code(kernels::cache::io),
        help(
            "check that the cache directory is writable (set KERNELS_CACHE or HF_HUB_CACHE to move it)"
        )
    )]
    Io(#[from] std::io::Error),

    /// A repository path would leave the snapshot directory or is not a plain relative path.
    #[error("refusing to write `{path}` into the cache: not a plain relative path")]
    #[diagnostic(
        code(kernels::cache::bad_path),
        help("the Hub listing contains an unsafe file name; report it to the repository owner")
    )]
    BadPath {
        /// The offending repository path.
        path: String,
    },

    /// A revision name cannot be stored as a ref file.
    #[error("cannot store revision `{revision}` as a ref in the cache")]
    #[diagnostic(code(kernels::cache::bad_ref))]
    BadRef {
        /// The revision.
        revision: String,
    },

    /// A commit id is not 40 lowercase hex characters.
    #[error(
        "`{value}` is not a lowercase hex commit id (40 characters, or 64 for sha256 repositories)"
    )]
    #[diagnostic(code(kernels::cache::bad_commit))]
    BadCommit {
        /// The rejected text.
        value: String,
    },

    /// A blob name (etag) is neither a 40-hex git sha1 nor a 64-hex sha256.
    #[error("`{etag}` is not a valid blob name (40 or 64 lowercase hex characters)")]
    #[diagnostic(code(kernels::cache::bad_etag))]
    BadEtag {
        /// The rejected value.
        etag: String,
    },

    /// The content written for a blob does not match what the Hub listing promised.
    #[error(
        "`{path}`: expected {expected_size} bytes with {kind} {expected}, got {actual_size} bytes with {kind} {actual}"
    )]
    #[diagnostic(
        code(kernels::cache::mismatch),
        help(
            "the server sent different content than its listing describes; retry, or report the mirror"
        )
    )]
    Mismatch {
        /// Repository path of the file.
        path: String,
        /// Which digest was compared (`sha256` or `git blob sha1`).
        kind: DigestKind,
        /// Expected digest (hex).
        expected: String,
        /// Computed digest (hex).
        actual: String,
        /// Expected size in bytes.
        expected_size: u64,
        /// Number of bytes received.
        actual_size: u64,
    },

    /// A cache directory is (or goes through) a symlink whose real path leaves the cache.
    #[error(
        "refusing to use `{}`: its real path `{}` is outside the cache `{}`",
        path.display(), real.display(), root.display()
    )]
    #[diagnostic(
        code(kernels::cache::escapes),
        help(
            "someone replaced a cache directory by a link; remove that link and run the command again"
        )
    )]
    Escapes {
        /// The directory in the cache.
        path: PathBuf,
        /// Where it really leads.
        real: PathBuf,
        /// The cache root (real path).
        root: PathBuf,
    },

    /// A file is expected but a directory is in the way.
    #[error("`{}` is a directory, expected a file", .0.display())]
    #[diagnostic(code(kernels::cache::not_a_file))]
    NotAFile(PathBuf),

    /// A directory is expected but something else is in the way.
    #[error("`{}` is not a directory", .0.display())]
    #[diagnostic(code(kernels::cache::not_a_directory))]
    NotADirectory(PathBuf),

    /// The disk filled up while writing.
    #[error(
        "the disk holding {} is full: {} more byte(s) needed for this file, {} available",
        dir.display(), needed,
        available.map_or_else(|| "unknown".to_owned(), |a| a.to_string())
    )]
    #[diagnostic(
        code(kernels::cache::disk_full),
        help(
            "free some space (`kernels cache prune` removes leftovers) or move the cache (`--cache-dir` or KERNELS_CACHE); the partial download is kept and resumes"
        )
    )]
    DiskFull {
        /// The directory written to.
        dir: PathBuf,
        /// Bytes still needed for the file being written.
        needed: u64,
        /// Bytes free on that file system, when known.
        available: Option<u64>,
    },

    /// A snapshot path exists but is a directory where a file link belongs.
    #[error("cannot link `{}`: a directory is in the way", .0.display())]
    #[diagnostic(
        code(kernels::cache::link_blocked),
        help("remove that directory from the cache snapshot and run the command again")
    )]
    LinkBlocked(PathBuf),
}
