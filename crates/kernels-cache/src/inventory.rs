//! What a hub cache holds (`kernels cache ls`) and removing what nothing needs
//! (`kernels cache prune`), like `hf cache ls` / `hf cache prune` and
//! `uv cache prune`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kernels_types::CommitId;
use serde::Serialize;

use super::{CacheError, HubCache, RepoCache, fsx};

/// One repository folder of the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoEntry {
    /// Folder name, `kernels--owner--name`.
    pub folder: String,
    /// `kernel`, `model`, … (from the folder prefix).
    pub repo_type: String,
    /// `owner/name`.
    pub repo_id: String,
    /// Bytes on disk: blobs plus snapshot files that are copies.
    pub size: u64,
    /// Bytes in `.incomplete` files.
    pub incomplete: u64,
    /// Cached revisions, sorted by commit.
    pub revisions: Vec<Revision>,
}

/// One `snapshots/<commit>` directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revision {
    /// The commit.
    pub commit: CommitId,
    /// Ref names (`refs/…`) pointing at it.
    pub refs: Vec<String>,
    /// Files in the snapshot.
    pub files: usize,
    /// Their size in bytes (followed links).
    pub size: u64,
    /// The build variants it holds: the directories under `build/` with at
    /// least one file whose names are variant names (as reference 0.19.1's
    /// `kernels cache ls` lists them), by name.
    pub variants: Vec<String>,
}

/// The build variant `file` of the snapshot `snapshot` belongs to: the
/// directory under `build/` holding it, when its name is a variant name.
fn variant_of(snapshot: &Path, file: &Path) -> Option<String> {
    let mut parts = file.strip_prefix(snapshot).ok()?.components();
    if parts.next()?.as_os_str() != "build" {
        return None;
    }
    let name = parts.next()?.as_os_str().to_str()?.to_owned();
    // A file directly in `build/` belongs to no variant.
    parts.next()?;
    kernels_types::variant_name::BuildVariant::parse(&name)
        .is_known()
        .then_some(name)
}

/// Splits `kernels--owner--name` into (`kernel`, `owner/name`).
fn parse_folder(folder: &str) -> Option<(String, String)> {
    let (kind, rest) = folder.split_once("--")?;
    let kind = kind.strip_suffix('s')?;
    let (owner, name) = rest.split_once("--")?;
    (!owner.is_empty() && !name.is_empty()).then(|| (kind.to_owned(), format!("{owner}/{name}")))
}

fn repo_folders(root: &Path) -> std::io::Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    let entries = match fs_err::read_dir(root) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !entry.file_type()?.is_dir() {
            continue;
        }
        if let Some((kind, id)) = parse_folder(&name) {
            out.push((name, kind, id));
        }
    }
    out.sort();
    Ok(out)
}

/// The ref names of `repo` grouped by the commit they hold ([`RepoCache::refs`]).
fn refs_by_commit(repo: &RepoCache) -> BTreeMap<CommitId, Vec<String>> {
    let mut out: BTreeMap<CommitId, Vec<String>> = BTreeMap::new();
    for r in repo.refs() {
        out.entry(r.commit).or_default().push(r.name);
    }
    out
}

/// Lists the repositories of the cache with their revisions and sizes.
pub fn list(cache: &HubCache) -> Result<Vec<RepoEntry>, CacheError> {
    let mut out = Vec::new();
    for (folder, repo_type, repo_id) in repo_folders(cache.root())? {
        let repo = cache.folder(&folder);
        let refs = refs_by_commit(&repo);
        let mut size = 0;
        let mut incomplete = 0;
        if let Ok(entries) = fs_err::read_dir(repo.blobs_dir()) {
            for entry in entries.filter_map(Result::ok) {
                let Ok(meta) = entry.metadata() else { continue };
                if entry.file_name().to_string_lossy().ends_with(".incomplete") {
                    incomplete = u64::saturating_add(incomplete, meta.len());
                } else if meta.is_file() {
                    size = u64::saturating_add(size, meta.len());
                }
            }
        }
        let mut revisions = Vec::new();
        if let Ok(entries) = fs_err::read_dir(repo.snapshots_dir()) {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let (mut files, mut rev_size) = (0, 0);
                let mut variants = BTreeSet::new();
                for file in walkdir::WalkDir::new(entry.path())
                    .into_iter()
                    .filter_map(Result::ok)
                    .filter(|e| !e.file_type().is_dir())
                {
                    files += 1;
                    if let Some(name) = variant_of(entry.path().as_path(), file.path()) {
                        variants.insert(name);
                    }
                    if let Ok(meta) = fs_err::metadata(file.path()) {
                        rev_size = u64::saturating_add(rev_size, meta.len());
                        if file.file_type().is_file() {
                            size = u64::saturating_add(size, meta.len());
                        }
                    }
                }
                // A folder not named by a commit id is no revision (its
                // copied files still count towards the repository's size).
                let Ok(commit) = name.parse::<CommitId>() else {
                    continue;
                };
                revisions.push(Revision {
                    refs: refs.get(&commit).cloned().unwrap_or_default(),
                    commit,
                    files,
                    size: rev_size,
                    variants: variants.into_iter().collect(),
                });
            }
        }
        revisions.sort_by(|a, b| a.commit.cmp(&b.commit));
        out.push(RepoEntry {
            folder,
            repo_type,
            repo_id,
            size,
            incomplete,
            revisions,
        });
    }
    Ok(out)
}

/// One kernel repository as reference 0.19.1's `kernels cache ls --json`
/// (`_internals/cli/cache.py`, over `huggingface_hub.scan_cache_dir`) lists
/// it; the fields in its key order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VersionedRepo {
    /// `owner/name`.
    pub repo_id: String,
    /// Bytes of the distinct blobs its snapshots' files resolve to.
    pub size_on_disk: u64,
    /// Latest access time of those blobs, seconds since the epoch (the
    /// repository folder's own when there is none).
    pub last_accessed: f64,
    /// Latest modification time of those blobs, seconds since the epoch (the
    /// repository folder's own when there is none).
    pub last_modified: f64,
    /// Its revisions a `vN` ref points at, one per ref, by `N` then ref name.
    pub versions: Vec<CachedVersion>,
}

/// One `vN` ref of a [`VersionedRepo`] and the snapshot it points at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CachedVersion {
    /// The ref name, `v1`.
    pub version: String,
    /// Bytes of the distinct blobs the snapshot's files resolve to.
    pub size_on_disk: u64,
    /// Latest access time of those blobs (the snapshot folder's own when it
    /// holds no file), seconds since the epoch.
    pub last_accessed: f64,
    /// Latest modification time of those blobs (likewise), seconds since the epoch.
    pub last_modified: f64,
    /// Its build variants with at least one file, by name.
    pub variants: Vec<String>,
}

/// `(access, modification)` time of `meta` in seconds since the epoch, summed
/// as CPython's `os.stat` does (`sec + nsec * 1e-9`), so both print the same.
fn epoch_times(meta: &std::fs::Metadata) -> (f64, f64) {
    let secs = |time: std::io::Result<std::time::SystemTime>| {
        time.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |d| {
                d.as_secs() as f64 + f64::from(d.subsec_nanos()) * 1e-9
            })
    };
    (secs(meta.accessed()), secs(meta.modified()))
}

/// `N` of a version ref `vN` (decimal digits only), as reference 0.19.1's
/// `_version_number`.
fn version_number(name: &str) -> Option<u128> {
    let digits = name.strip_prefix('v')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits for u128 still makes a version, sorted last.
    Some(digits.parse().unwrap_or(u128::MAX))
}

/// The blobs (resolved path to metadata) of a snapshot, and its variants.
type SnapshotBlobs = (BTreeMap<PathBuf, std::fs::Metadata>, Vec<String>);

/// The blobs (resolved paths, with their metadata) the files of `snapshot`
/// resolve to, and its variants.
fn snapshot_blobs(snapshot: &Path) -> Result<SnapshotBlobs, CacheError> {
    let mut blobs = BTreeMap::new();
    let mut variants = BTreeSet::new();
    for file in walkdir::WalkDir::new(snapshot)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
    {
        if let Some(name) = variant_of(snapshot, file.path()) {
            variants.insert(name);
        }
        let blob = fs_err::canonicalize(file.path())?;
        let meta = fs_err::metadata(&blob)?;
        if !meta.is_dir() {
            blobs.insert(blob, meta);
        }
    }
    Ok((blobs, variants.into_iter().collect()))
}

/// [`snapshot_blobs`] of every folder in `snapshots/`, by folder name.
fn snapshots_blobs(dir: &Path) -> Result<BTreeMap<String, SnapshotBlobs>, CacheError> {
    let mut out = BTreeMap::new();
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(err) => return Err(err.into()),
    };
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            let name = entry.file_name().to_string_lossy().into_owned();
            out.insert(name, snapshot_blobs(&entry.path())?);
        }
    }
    Ok(out)
}

/// Latest `(access, modification)` time of `blobs`, or `fallback`'s.
fn latest(
    blobs: &BTreeMap<PathBuf, std::fs::Metadata>,
    fallback: &Path,
) -> Result<(f64, f64), CacheError> {
    if blobs.is_empty() {
        return Ok(epoch_times(&fs_err::metadata(fallback)?));
    }
    let times = blobs.values().map(epoch_times);
    Ok(times.fold((f64::MIN, f64::MIN), |(a, m), (ta, tm)| {
        (a.max(ta), m.max(tm))
    }))
}

/// The kernel repositories of the cache with a `vN` ref, by repository id, as
/// reference 0.19.1's `kernels cache ls --json` lists them ([`VersionedRepo`]).
///
/// # Errors
/// A snapshot file that cannot be resolved or read.
pub fn versioned(cache: &HubCache) -> Result<Vec<VersionedRepo>, CacheError> {
    let mut out = Vec::new();
    for (folder, repo_type, repo_id) in repo_folders(cache.root())? {
        if repo_type != "kernel" {
            continue;
        }
        let repo = cache.folder(&folder);
        let mut refs: Vec<(u128, String, CommitId)> = repo
            .refs()
            .into_iter()
            .filter_map(|r| Some((version_number(&r.name)?, r.name, r.commit)))
            .collect();
        if refs.is_empty() {
            continue;
        }
        refs.sort();
        let snapshots = snapshots_blobs(&repo.snapshots_dir())?;
        // A ref to a missing snapshot makes the repository corrupt: the
        // reference's scan skips it with a warning.
        if refs
            .iter()
            .any(|(_, _, commit)| !snapshots.contains_key(commit.as_str()))
        {
            continue;
        }
        let mut versions = Vec::new();
        for (_, version, commit) in refs {
            let (blobs, variants) = &snapshots[commit.as_str()];
            let snapshot = repo.snapshots_dir().join(commit.as_str());
            let (last_accessed, last_modified) = latest(blobs, &snapshot)?;
            versions.push(CachedVersion {
                version,
                size_on_disk: blobs.values().map(std::fs::Metadata::len).sum(),
                last_accessed,
                last_modified,
                variants: variants.clone(),
            });
        }
        let all: BTreeMap<_, _> = snapshots
            .into_values()
            .flat_map(|(blobs, _)| blobs)
            .collect();
        let (last_accessed, last_modified) = latest(&all, &cache.root().join(&folder))?;
        out.push(VersionedRepo {
            repo_id,
            size_on_disk: all.values().map(std::fs::Metadata::len).sum(),
            last_accessed,
            last_modified,
            versions,
        });
    }
    out.sort_by(|a, b| a.repo_id.cmp(&b.repo_id));
    Ok(out)
}

/// What `prune` keeps beyond what is referenced: with `keep_only`, the
/// snapshots of the listed repository folders that are not among its
/// `(folder, commit)` pairs are removed first (with the refs pointing at them).
#[derive(Debug, Clone, Default)]
pub struct PruneOptions {
    /// `(folder, commit)` pairs to keep; folders not named are left alone.
    pub keep_only: Option<BTreeSet<(String, CommitId)>>,
    /// Only report what would be removed.
    pub dry_run: bool,
}

/// What `prune` removed (or would remove).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PruneReport {
    /// Removed snapshot directories.
    pub snapshots: Vec<PathBuf>,
    /// Removed ref files.
    pub refs: Vec<PathBuf>,
    /// Removed `.incomplete` files.
    pub incomplete: Vec<PathBuf>,
    /// Removed blobs no snapshot links to.
    pub blobs: Vec<PathBuf>,
    /// Bytes freed.
    pub freed: u64,
    /// Files left because another process holds their blob lock.
    pub busy: Vec<PathBuf>,
    /// Removed runtime receipts (`.verified-kernels/…`) whose variant
    /// directory is no longer in the cache.
    pub runtime_receipts: Vec<PathBuf>,
}

/// Removes stale `.incomplete` files, blobs no snapshot references and the
/// runtime's receipts of variants no longer in the cache (see
/// [`PruneOptions`] for dropping snapshots). A file is removed only while its
/// blob lock is ours, taken without waiting: a file another process is writing
/// or linking is left alone and reported in [`PruneReport::busy`].
pub fn prune(cache: &HubCache, options: &PruneOptions) -> Result<PruneReport, CacheError> {
    let mut report = PruneReport::default();
    for (folder, _, _) in repo_folders(cache.root())? {
        let repo = cache.folder(&folder);
        if let Some(keep) = &options.keep_only
            && keep.iter().any(|(f, _)| *f == folder)
        {
            drop_snapshots(&repo, keep, options.dry_run, &mut report)?;
        }
        prune_blobs(cache, &repo, options.dry_run, &mut report)?;
    }
    // After the snapshots went: a receipt vouches for a variant directory.
    for path in cache.orphan_runtime_receipts() {
        if !options.dry_run {
            fs_err::remove_file(&path)?;
        }
        report.runtime_receipts.push(path);
    }
    Ok(report)
}

/// Removes the snapshots of `repo` that `keep` (`(folder, commit)` pairs) does
/// not name, with the refs pointing at them and their receipts.
fn drop_snapshots(
    repo: &RepoCache,
    keep: &BTreeSet<(String, CommitId)>,
    dry_run: bool,
    report: &mut PruneReport,
) -> Result<(), CacheError> {
    let folder = repo.folder_name().to_owned();
    let refs = refs_by_commit(repo);
    if let Ok(entries) = fs_err::read_dir(repo.snapshots_dir()) {
        for entry in entries.filter_map(Result::ok) {
            let commit = entry.file_name().to_string_lossy().into_owned();
            let kept = commit
                .parse::<CommitId>()
                .is_ok_and(|c| keep.contains(&(folder.clone(), c)));
            if kept {
                continue;
            }
            report.snapshots.push(entry.path());
            let named = commit.parse::<CommitId>().ok();
            for name in named.and_then(|c| refs.get(&c)).into_iter().flatten() {
                report.refs.push(repo.refs_dir().join(name));
            }
            if !dry_run {
                fs_err::remove_dir_all(entry.path())?;
                // Its receipts vouch for nothing any more.
                let _ = fs_err::remove_dir_all(repo.receipts_dir(&commit));
            }
        }
    }
    if !dry_run {
        for path in &report.refs {
            let _ = fs_err::remove_file(path);
        }
    }
    Ok(())
}

/// The blob names the snapshot links of `repo` point at.
fn referenced_blobs(repo: &RepoCache) -> BTreeSet<String> {
    walkdir::WalkDir::new(repo.snapshots_dir())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path_is_symlink())
        .filter_map(|entry| {
            let target = fs_err::read_link(entry.path()).ok()?;
            Some(target.file_name()?.to_string_lossy().into_owned())
        })
        .collect()
}

/// Removes the `.incomplete` files of `repo` and the blobs no snapshot links
/// to, each while its blob lock is ours.
fn prune_blobs(
    cache: &HubCache,
    repo: &RepoCache,
    dry_run: bool,
    report: &mut PruneReport,
) -> Result<(), CacheError> {
    let referenced = referenced_blobs(repo);
    let Ok(entries) = fs_err::read_dir(repo.blobs_dir()) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let incomplete = name.ends_with(".incomplete");
        if !incomplete && referenced.contains(&name) {
            continue;
        }
        let etag = name.split('.').next().unwrap_or_default();
        if kernels_types::Digest::from_etag(etag).is_err() {
            continue;
        }
        let path = repo.blobs_dir().join(&name);
        let size = fs_err::symlink_metadata(&path).map_or(0, |m| m.len());
        let Some(guard) = try_lock(cache.root(), &repo.lock_path(etag))? else {
            report.busy.push(path);
            continue;
        };
        if !dry_run {
            fs_err::remove_file(&path)?;
        }
        drop(guard);
        report.freed = report.freed.saturating_add(size);
        if incomplete {
            report.incomplete.push(path);
        } else {
            report.blobs.push(path);
        }
    }
    Ok(())
}

/// Takes the blob lock without waiting; `None` when another process holds it.
/// Where `flock` is unsupported the file counts as free.
fn try_lock(root: &Path, path: &Path) -> Result<Option<std::fs::File>, CacheError> {
    if let Some(parent) = path.parent() {
        fsx::create_dir_inside(root, parent)?;
    }
    let (file, _) = fsx::open_rw_no_follow(path, 0o664)?.into_parts();
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(err)) if fsx::is_unsupported(&err) => Ok(Some(file)),
        Err(std::fs::TryLockError::Error(err)) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::RepoType;

    #[test]
    fn prune_removes_leftovers_but_not_busy_or_linked_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo = cache.repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        let linked = "a".repeat(40);
        let orphan = "b".repeat(40);
        let busy = "c".repeat(64);
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        for name in [&linked, &orphan] {
            fs_err::write(repo.blob_path(name), b"x").unwrap();
        }
        fs_err::write(repo.incomplete_path(&orphan), b"part").unwrap();
        fs_err::write(repo.incomplete_path(&busy), b"part").unwrap();
        repo.link(&"1".repeat(40), "build/v/x.py", &linked).unwrap();
        repo.write_ref("v1", &"1".repeat(40)).unwrap();
        let listing = crate::ListingReceipt::default();
        repo.write_listing_receipt(&"1".repeat(40), &listing)
            .unwrap();
        let held = repo.lock_blob(&busy).unwrap();
        let listed = list(&cache).unwrap();
        assert_eq!(listed[0].repo_id, "acme/relu");
        assert_eq!(listed[0].revisions[0].refs, ["v1"]);
        assert_eq!(listed[0].incomplete, 8);

        let report = prune(&cache, &PruneOptions::default()).unwrap();
        assert_eq!(report.blobs, [repo.blob_path(&orphan)]);
        assert_eq!(report.incomplete, [repo.incomplete_path(&orphan)]);
        assert_eq!(report.busy, [repo.incomplete_path(&busy)]);
        assert!(repo.blob_path(&linked).exists());
        drop(held);

        let keep = PruneOptions {
            keep_only: Some(
                [(
                    repo.folder_name().to_owned(),
                    "2".repeat(40).parse().unwrap(),
                )]
                .into(),
            ),
            dry_run: false,
        };
        let report = prune(&cache, &keep).unwrap();
        assert_eq!(report.snapshots.len(), 1);
        assert!(!repo.blob_path(&linked).exists());
        assert!(!repo.dir().join("refs/v1").exists());
        assert!(!repo.receipts_dir(&"1".repeat(40)).exists());
        assert!(report.runtime_receipts.is_empty());
        assert!(!repo.incomplete_path(&busy).exists());
    }
}
