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
//! ```
//!
//! Invariants kept by this module: a file named `blobs/<etag>` is always complete
//! and verified (it is written as `.incomplete`, fsynced and renamed), and a
//! snapshot link is only created after its blob is in place. Anything else found
//! in the cache (`trees/`, `CACHEDIR.TAG`, `.no_exist/`, other tools' temp
//! files) is left alone.

pub mod atomic;
mod blob;
mod layout;
mod lock;

pub use atomic::{write_atomic, write_atomic_with};
pub use blob::{BlobWriter, PartialBlob, file_matches, hash_file};
pub use kernels_types::{BlobId, DigestKind};
pub use layout::{HubCache, RepoCache, relative_link_target};
pub use lock::BlobLock;

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
        "`{commit}` is not a lowercase hex commit id (40 characters, or 64 for sha256 repositories)"
    )]
    #[diagnostic(code(kernels::cache::bad_commit))]
    BadCommit {
        /// The rejected value.
        commit: String,
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

    /// A snapshot path exists but is a directory where a file link belongs.
    #[error("cannot link `{}`: a directory is in the way", .0.display())]
    #[diagnostic(
        code(kernels::cache::link_blocked),
        help("remove that directory from the cache snapshot and run the command again")
    )]
    LinkBlocked(PathBuf),
}
