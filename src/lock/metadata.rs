//! A variant's `metadata.json` from the Hub cache alone, without a request:
//! what `kernels env` and `kernels lock --check --offline` read (the online
//! reads, which fetch what the cache lacks and store it, are
//! [`crate::lock::project::variant_metadata`]).
//!
//! * **With the commit's listing** ([`cached_blob`]): the blob the listing
//!   names, if the cache's `blobs/` has it with that content (`kernels env`
//!   online lists the commit anyway, and fetches nothing more). `kernels lock`
//!   for a 0.17 runtime and `kernels download --explain` store every variant's
//!   blob there.
//! * **Offline** ([`cached_variant`]): the snapshot's
//!   `build/<variant>/metadata.json`, its content checked against the blob name
//!   it links to. Only variants that `kernels download` took are linked (a
//!   folder holding only `metadata.json` would be a variant to an offline
//!   runtime), so the others are [`CachedMetadata::NotInCache`].

use kernels_cache::{BlobId, RepoCache};
use kernels_types::metadata::{KernelsVersion, Metadata};
use kernels_types::wire::TreeEntry;
use kernels_types::{CommitId, Digest, Hasher};

/// One variant's `metadata.json` as the cache holds it ([`cached_variant`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CachedMetadata {
    /// Read, verified and parsed.
    Read(Box<Metadata>),
    /// The snapshot of the commit has no `build/<variant>/metadata.json`, or
    /// its blob is missing or does not match its name.
    NotInCache,
    /// The file is there but the model refuses it: the message names the
    /// file (`build/<variant>/metadata.json`) and the field.
    Invalid(String),
}

/// `build/<variant>/metadata.json` of `commit` from the snapshot in `repo`,
/// without a request. A snapshot link's blob must hash to the name it has
/// (the file of a cache in copy mode, which has no links, is read as it is).
/// The file is parsed as `runtime` reads it ([`Metadata::from_slice_for`];
/// `None`: the current runtime).
pub fn cached_variant(
    repo: &RepoCache,
    commit: &CommitId,
    variant: &str,
    runtime: Option<KernelsVersion>,
) -> CachedMetadata {
    let file = format!("build/{variant}/metadata.json");
    let Some(body) = cached_bytes(repo, commit, variant) else {
        return CachedMetadata::NotInCache;
    };
    match Metadata::from_slice_for(&body, runtime) {
        Ok(metadata) => CachedMetadata::Read(Box::new(metadata)),
        Err(problem) => CachedMetadata::Invalid(format!("`{file}` is invalid: {problem}")),
    }
}

/// The bytes of `build/<variant>/metadata.json` in the snapshot of `commit`,
/// the one cached read of a variant's metadata (download's warm path and
/// `verify`, `env`, `lock --check`): a link's blob must hash to its name,
/// a copy (cache without links) is read as it is; `None` when absent or
/// unreadable.
pub fn cached_bytes(repo: &RepoCache, commit: &CommitId, variant: &str) -> Option<Vec<u8>> {
    let file = format!("build/{variant}/metadata.json");
    match repo.linked_etag(commit.as_str(), &file) {
        Some(etag) => verified_blob(repo, &etag),
        None => repo
            .snapshot_path(commit.as_str(), &file)
            .ok()
            .filter(|path| path.is_file() && !path.is_symlink())
            .and_then(|path| fs_err::read(path).ok()),
    }
}

/// `build/<variant>/metadata.json` of the commit `entries` list (a recursive
/// listing), from the cache's `blobs/` by the blob id the listing gives, else
/// from the snapshot ([`cached_variant`]); no request. Parsed as `runtime`
/// reads it.
pub fn cached_blob(
    repo: &RepoCache,
    commit: &CommitId,
    entries: &[TreeEntry],
    variant: &str,
    runtime: Option<KernelsVersion>,
) -> CachedMetadata {
    let file = format!("build/{variant}/metadata.json");
    let blob = entries
        .iter()
        .find(|e| e.path == file && e.is_file() && e.lfs.is_none())
        .map(|e| BlobId {
            digest: e.oid,
            size: e.size,
        });
    let path = blob.map(|id| repo.blob_path(&id.etag()));
    if let (Some(id), Some(path)) = (blob, path)
        && kernels_cache::file_matches(&path, &id).unwrap_or(false)
        && let Ok(body) = fs_err::read(&path)
    {
        return match Metadata::from_slice_for(&body, runtime) {
            Ok(metadata) => CachedMetadata::Read(Box::new(metadata)),
            Err(problem) => CachedMetadata::Invalid(format!("`{file}` is invalid: {problem}")),
        };
    }
    cached_variant(repo, commit, variant, runtime)
}

/// The content of `blobs/<etag>` when it hashes to `etag`.
pub fn verified_blob(repo: &RepoCache, etag: &str) -> Option<Vec<u8>> {
    let digest = Digest::from_etag(etag).ok()?;
    let body = fs_err::read(repo.blob_path(etag)).ok()?;
    let mut hasher = Hasher::new(digest.kind(), body.len() as u64);
    hasher.update(&body);
    (hasher.finish() == digest).then_some(body)
}
