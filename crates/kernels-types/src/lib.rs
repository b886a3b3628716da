//! Value types shared by every layer of `kernels`: repository ids and types,
//! commit ids, content digests and the per-variant hash, build-variant names, the
//! `metadata.json` model of a build variant, and the JSON shapes of the Hub API
//! (shared by the client and `kernels serve`, so the server needs no HTTP client).
//!
//! Nothing here does I/O: every type is parsed and validated once, at the edge
//! where text enters (a lock file, a listing, a command line), and passed on as a
//! value.

pub mod commit;
pub mod digest;
pub mod env_vars;
pub mod file_set;
pub mod fit;
pub mod metadata;
pub mod python_depends;
pub mod repo_id;
pub mod repo_path;
pub mod size;
pub mod source_text;
pub mod text;
pub mod variant_name;
pub mod wire;

pub use commit::{CommitId, CommitIdError};
pub use digest::{
    BadDigest, BlobId, Digest, DigestKind, GitBlobHasher, Hasher, git_blob_sha1, git_lfs_concat,
    sha256,
};
pub use repo_id::{RepoId, RepoIdError};
pub use wire::RepoType;
