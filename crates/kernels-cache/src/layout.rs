//! Paths of the hub cache, snapshot links and ref files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kernels_types::RepoId;
use kernels_types::RepoType;

use kernels_types::{BlobId, CommitId, Digest};

use super::{BlobLock, CacheError, CacheWarning, fsx};

/// How the cache writer adapts to its file system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheOptions {
    /// Test only: every `symlink()` fails with this OS error number (`1`,
    /// `EPERM`, as on Windows without developer mode), with the path added as
    /// for a real failure (the number then found only inside).
    pub fail_symlinks: Option<i32>,
    /// Never create symlinks: snapshot files are copies (a new blob is moved
    /// into the snapshot), as `huggingface_hub` does with
    /// `HF_HUB_DISABLE_SYMLINKS` or where symlinks fail.
    pub disable_symlinks: bool,
    /// Test only: behave as on a file system without `flock`.
    pub assume_no_flock: bool,
}

/// What a [`HubCache`] learned about its file system while working, and the
/// warnings it owes its caller.
#[derive(Debug, Default)]
struct State {
    options: CacheOptions,
    no_flock: AtomicBool,
    no_symlinks: AtomicBool,
    warnings: Mutex<Vec<CacheWarning>>,
    /// Snapshot directories already swept of stale temporary names.
    swept: Mutex<std::collections::HashSet<PathBuf>>,
    /// Whether `CACHEDIR.TAG` was looked for (once per cache and process).
    tag_checked: AtomicBool,
    /// Directories this process created or checked with
    /// [`fsx::create_dir_inside`]: later calls cost one `lstat`.
    dirs: Mutex<std::collections::HashSet<PathBuf>>,
    /// `blobs/` directories with blobs renamed in since their last sync, and
    /// what of them is not yet durable.
    unsynced: Mutex<std::collections::HashMap<PathBuf, Unsynced>>,
    /// Held for the whole of [`RepoCache::sync_blob_names`]: a thread about
    /// to link waits for a sync another thread has taken the pending blobs
    /// of, instead of linking to blobs not yet durable.
    syncing: Mutex<()>,
}

/// What a `blobs/` directory holds that is not yet on disk (see
/// [`RepoCache::sync_blob_names`]). Ordered: `Data` covers `Names`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Unsynced {
    /// Blobs whose data was `fsync`ed, renamed in: the directory needs one.
    Names,
    /// Small blobs ([`crate::UNLOCKED_MAX`]) renamed in without an `fsync` of
    /// their own: the file system needs one `syncfs`.
    Data,
}

impl State {
    fn warn(&self, warning: CacheWarning) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }
}

/// The root of a Hugging Face hub cache (`Settings::cache_dir`).
#[derive(Debug, Clone)]
pub struct HubCache {
    root: PathBuf,
    state: Arc<State>,
}

/// One repository's folder inside a [`HubCache`].
#[derive(Debug, Clone)]
pub struct RepoCache {
    root: PathBuf,
    folder: String,
    state: Arc<State>,
}

/// How one snapshot file is present in the cache (see [`RepoCache::placement`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A relative symlink to its blob, which is present and verifies.
    Linked,
    /// A regular file (copy mode, `cp -rL`, `tar -h`) whose content verifies.
    Copied,
    /// Nothing is there.
    Absent,
    /// Something is there but it is not the expected content.
    Wrong,
}

impl HubCache {
    /// A cache rooted at `root`. Nothing is created until something is written.
    pub fn new(root: impl Into<PathBuf>) -> HubCache {
        HubCache::with_options(root, CacheOptions::default())
    }

    /// A cache rooted at `root` with explicit [`CacheOptions`].
    pub fn with_options(root: impl Into<PathBuf>, options: CacheOptions) -> HubCache {
        HubCache {
            root: root.into(),
            state: Arc::new(State {
                options,
                ..State::default()
            }),
        }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The folder of `repo_id` for `repo_type` (`kernels--owner--name` or
    /// `models--owner--name`, as `huggingface_hub.repo_folder_name`).
    pub fn repo(&self, repo_id: &RepoId, repo_type: RepoType) -> RepoCache {
        RepoCache {
            root: self.root.clone(),
            folder: repo_id.folder_name(repo_type.as_str()),
            state: self.state.clone(),
        }
    }

    /// The repository folder named `folder` (as found in the cache root, for
    /// [`crate::inventory`], which reads folder names rather than repository ids).
    pub(crate) fn folder(&self, folder: &str) -> RepoCache {
        RepoCache {
            root: self.root.clone(),
            folder: folder.to_owned(),
            state: self.state.clone(),
        }
    }

    /// The warnings collected so far (each once), emptied; the caller reports them.
    pub fn take_warnings(&self) -> Vec<CacheWarning> {
        std::mem::take(
            &mut *self
                .state
                .warnings
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// Whether new entries can be created in the cache root (or where it would be created).
    pub fn is_writable(&self) -> bool {
        fsx::is_writable(&self.root)
    }

    /// Bytes free for us on the cache's file system, when known.
    pub fn free_space(&self) -> Option<u64> {
        fsx::free_space(&self.root)
    }
}

/// Splits a repository path (`/`-separated) into components after checking it
/// with the one path rule, [`kernels_types::repo_path::check`]: nothing that
/// could leave the snapshot directory (empty, `.` or `..` components, a leading
/// `/`, backslashes, control characters, overlong names) is accepted.
pub(crate) fn components(path: &str) -> Result<Vec<&str>, CacheError> {
    kernels_types::repo_path::check(path).map_err(|_| CacheError::BadPath {
        path: path.to_owned(),
    })?;
    Ok(path.split('/').collect())
}

fn check_etag(etag: &str) -> Result<(), CacheError> {
    if Digest::from_etag(etag).is_ok() {
        Ok(())
    } else {
        Err(CacheError::BadEtag {
            etag: etag.to_owned(),
        })
    }
}

/// The symlink target of `snapshots/<commit>/<path>` pointing at `blobs/<etag>`,
/// relative to the link's directory: one `..` per path component plus one,
/// which is what `os.path.relpath(blob, dirname(pointer))` yields
/// (`README.md` → `../../blobs/<etag>`, `build/v/x.json` → `../../../../blobs/<etag>`).
///
/// Errors when `path` is not a plain relative path.
pub fn relative_link_target(path: &str, etag: &str) -> Result<PathBuf, CacheError> {
    let depth = components(path)?.len() + 1;
    let mut target = PathBuf::new();
    for _ in 0..depth {
        target.push("..");
    }
    target.push("blobs");
    target.push(etag);
    Ok(target)
}

/// The repository folder of `dir` when `dir` is a snapshot directory
/// (`<folder>/snapshots/<commit>`): where the blobs its links point at live.
pub fn snapshot_repo_dir(dir: &Path) -> Option<&Path> {
    let snapshots = dir.parent()?;
    (snapshots.file_name()? == "snapshots").then(|| snapshots.parent().unwrap_or(snapshots))
}

/// A short random suffix for temp names next to their destination.
pub(crate) fn temp_suffix() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// A temporary name in the destination's directory that never exceeds
/// `NAME_MAX` whatever the destination's own name length
/// (`.kernels-<pid>-<8hex>.tmp`). The process id lets a later run tell a name
/// left by a killed process ([`sweep_stale_temps`]) from one being written.
pub(crate) fn temp_name(dir: &Path) -> PathBuf {
    dir.join(format!(
        ".kernels-{}-{}.tmp",
        std::process::id(),
        temp_suffix()
    ))
}

/// Whether `name` is a temporary name of [`temp_name`]: a link or copy
/// that a process (this one or another) is about to rename into place, which
/// a walk of a snapshot directory must not count as one of its files.
pub fn is_temp_name(name: &str) -> bool {
    temp_name_pid(name).is_some()
}

/// The process id in a temporary name written by [`temp_name`].
fn temp_name_pid(name: &str) -> Option<u32> {
    let (pid, suffix) = name
        .strip_prefix(".kernels-")?
        .strip_suffix(".tmp")?
        .split_once('-')?;
    (suffix.len() == 8 && suffix.bytes().all(|b| b.is_ascii_hexdigit())).then_some(())?;
    pid.parse().ok()
}

/// Removes temporary names that a killed process left in `dir`, a snapshot
/// or receipts directory (a process that no longer exists wrote them): a
/// stray link in a snapshot would count as a file of the variant for
/// `kernels verify` and for the runtime's own hash check. A name whose writer runs in another PID namespace
/// may be taken for stale; its writer then links again ([`RepoCache::link`]).
pub(crate) fn sweep_stale_temps(dir: &Path) {
    let Ok(entries) = fs_err::read_dir(dir) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_name_pid) else {
            continue;
        };
        if pid != own && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = fs_err::remove_file(entry.path());
        }
    }
}

impl RepoCache {
    /// The folder name, for example `kernels--kernels-community--activation`.
    pub fn folder_name(&self) -> &str {
        &self.folder
    }

    /// `<root>/<folder>`.
    pub fn dir(&self) -> PathBuf {
        self.root.join(&self.folder)
    }

    /// `<root>/<folder>/blobs`.
    pub fn blobs_dir(&self) -> PathBuf {
        self.dir().join("blobs")
    }

    /// `<root>/<folder>/blobs/<etag>`.
    pub fn blob_path(&self, etag: &str) -> PathBuf {
        self.blobs_dir().join(etag)
    }

    /// `<root>/<folder>/blobs/<etag>.incomplete`: the only place partial data lives.
    pub fn incomplete_path(&self, etag: &str) -> PathBuf {
        self.blobs_dir().join(format!("{etag}.incomplete"))
    }

    /// `<root>/.locks/<folder>/<etag>.lock`.
    pub fn lock_path(&self, etag: &str) -> PathBuf {
        self.root
            .join(".locks")
            .join(&self.folder)
            .join(format!("{etag}.lock"))
    }

    /// `<root>/<folder>/snapshots`.
    pub fn snapshots_dir(&self) -> PathBuf {
        self.dir().join("snapshots")
    }

    /// `<root>/<folder>/snapshots/<commit>`.
    pub fn snapshot_dir(&self, commit: &str) -> PathBuf {
        self.snapshots_dir().join(commit)
    }

    /// `<root>/<folder>/snapshots/<commit>/<path>` with `/` mapped to the OS
    /// separator. Errors when `commit` is not 40 (sha1) or 64 (sha256 repos)
    /// lowercase hex, or when `path` could escape the snapshot.
    pub fn snapshot_path(&self, commit: &str, path: &str) -> Result<PathBuf, CacheError> {
        if !CommitId::is_canonical(commit) {
            return Err(CacheError::BadCommit {
                value: commit.to_owned(),
            });
        }
        let mut out = self.snapshot_dir(commit);
        out.extend(components(path)?);
        Ok(out)
    }

    /// Takes the inter-process lock of blob `etag` (see [`BlobLock`]); blocks
    /// until it is free. On a file system without `flock` the lock is not held
    /// ([`BlobLock::is_held`]) and [`CacheWarning::NoFlock`] is recorded once.
    pub fn lock_blob(&self, etag: &str) -> Result<BlobLock, CacheError> {
        check_etag(etag)?;
        let path = self.lock_path(etag);
        let use_flock =
            !self.state.options.assume_no_flock && !self.state.no_flock.load(Ordering::Relaxed);
        let (lock, unsupported) = BlobLock::acquire(&self.root, &path, use_flock)?;
        if unsupported || self.state.options.assume_no_flock {
            self.state.no_flock.store(true, Ordering::Relaxed);
            self.state.warn(CacheWarning::NoFlock {
                dir: path.parent().unwrap_or(&self.root).to_owned(),
            });
        }
        Ok(lock)
    }

    /// Creates `dir` (inside this cache) without following a symlink that
    /// leads out of it. Every write into the cache goes through here, so the
    /// first one of a process also tags the root ([`crate::ensure_tag`]).
    ///
    /// A directory this process already checked costs one `lstat` on later
    /// calls (still a real directory, not a link planted since); anything
    /// else there is checked component by component again.
    pub(crate) fn create_dir(&self, dir: &Path) -> Result<(), CacheError> {
        let known = || self.state.dirs.lock().unwrap_or_else(|e| e.into_inner());
        if known().contains(dir) && fs_err::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        fsx::create_dir_inside(&self.root, dir)?;
        known().insert(dir.to_owned());
        if !self.state.tag_checked.swap(true, Ordering::Relaxed) {
            crate::ensure_tag(&self.root);
        }
        Ok(())
    }

    /// Records that a verified blob was renamed into `blobs/`, with what of
    /// it is not yet durable: see [`RepoCache::sync_blob_names`].
    pub(crate) fn renamed_blob(&self, what: Unsynced) {
        let mut unsynced = self
            .state
            .unsynced
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let entry = unsynced.entry(self.blobs_dir()).or_insert(what);
        *entry = (*entry).max(what);
    }

    /// Makes the blobs renamed into `blobs/` since its last sync durable
    /// before anything links to them: the durability rule of docs/cache.md
    /// (a blob's data and name, then a link to it). Names alone cost one
    /// `fsync` of the directory; small blobs written without an `fsync` of
    /// their own cost one `syncfs` of the file system for the whole batch
    /// (what `sync` does, for one file system), one I/O wait instead of one
    /// per file. Threads linking at once wait for each other's sync, so none
    /// links to a blob whose sync another thread has started and not finished.
    fn sync_blob_names(&self) -> Result<(), CacheError> {
        let dir = self.blobs_dir();
        let _syncing = self.state.syncing.lock().unwrap_or_else(|e| e.into_inner());
        let pending = {
            let mut unsynced = self
                .state
                .unsynced
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            unsynced.remove(&dir)
        };
        let synced = match pending {
            None => Ok(()),
            Some(Unsynced::Names) => kernels_fs::sync_dir(&dir),
            Some(Unsynced::Data) => kernels_fs::sync_file_system(&dir),
        };
        if let (Err(err), Some(what)) = (synced, pending) {
            self.renamed_blob(what);
            return Err(err.into());
        }
        Ok(())
    }

    /// Whether snapshot files are copies rather than links (symlinks disabled
    /// or found unsupported).
    pub fn copy_mode(&self) -> bool {
        self.state.options.disable_symlinks || self.state.no_symlinks.load(Ordering::Relaxed)
    }

    /// Whether `blobs/<etag>` is a regular file (or a link into this cache,
    /// such as `huggingface_hub` 1.32's shared store) with exactly the size and
    /// digest of `blob`. A link leading out of the cache never matches.
    pub fn blob_matches(&self, blob: &BlobId) -> std::io::Result<bool> {
        let path = self.blob_path(&blob.etag());
        match fs_err::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if !fsx::resolves_inside(&self.root, &path) {
                    return Ok(false);
                }
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(err) => return Err(err),
        }
        crate::file_matches(&path, blob)
    }

    /// Whether the real path of `path` stays inside this cache.
    pub fn resolves_inside(&self, path: &Path) -> bool {
        fsx::resolves_inside(&self.root, path)
    }

    /// Whether the blob file `blobs/<etag>` is a symlink whose real path leaves
    /// the cache (planted; never trusted).
    pub fn blob_escapes(&self, etag: &str) -> bool {
        let path = self.blob_path(etag);
        fs_err::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
            && !fsx::resolves_inside(&self.root, &path)
    }

    /// How `snapshots/<commit>/<path>` holds `blob`: a link to a verified
    /// blob, a regular file with the right content (copy-mode caches,
    /// `cp -rL` and `tar -h` copies), nothing, or something else.
    pub fn placement(
        &self,
        commit: &str,
        path: &str,
        blob: &BlobId,
    ) -> Result<Placement, CacheError> {
        let pointer = self.snapshot_path(commit, path)?;
        let meta = match fs_err::symlink_metadata(&pointer) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Placement::Absent);
            }
            Err(err) => return Err(err.into()),
        };
        if meta.file_type().is_symlink() {
            let ok = self.linked_etag(commit, path).as_deref() == Some(blob.etag().as_str())
                && self.blob_matches(blob)?;
            return Ok(if ok {
                Placement::Linked
            } else {
                Placement::Wrong
            });
        }
        if meta.is_file() && crate::file_matches(&pointer, blob)? {
            return Ok(Placement::Copied);
        }
        Ok(Placement::Wrong)
    }

    /// Makes `snapshots/<commit>/<path>` a relative symlink to `blobs/<etag>`
    /// (see [`RepoCache::place`]).
    pub fn link(&self, commit: &str, path: &str, etag: &str) -> Result<bool, CacheError> {
        self.place(commit, path, etag, false)
    }

    /// Makes `snapshots/<commit>/<path>` a relative symlink to `blobs/<etag>`,
    /// or, without symlink support, a copy of the blob, exactly as
    /// `huggingface_hub`'s `_create_symlink`: a blob just downloaded
    /// (`new_blob`) is moved into the snapshot, an existing one is copied.
    ///
    /// The blob must already be in place (a link never points at a missing
    /// blob). An existing identical link is kept as is; a different link or a
    /// regular file at that path is replaced atomically (a temp name, then a
    /// rename, which replaces a planted link itself, never its target). Returns
    /// whether anything had to be created or changed.
    pub fn place(
        &self,
        commit: &str,
        path: &str,
        etag: &str,
        new_blob: bool,
    ) -> Result<bool, CacheError> {
        check_etag(etag)?;
        let pointer = self.snapshot_path(commit, path)?;
        let target = relative_link_target(path, etag)?;
        let blob = self.blob_path(etag);
        let blob_meta = self.present_blob(&blob, &pointer)?;
        let absent = match fs_err::symlink_metadata(&pointer) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if fs_err::read_link(&pointer).is_ok_and(|t| t == target) {
                    return Ok(false);
                }
                false
            }
            Ok(meta) if meta.is_dir() => return Err(CacheError::LinkBlocked(pointer)),
            Ok(_) => false,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => true,
            Err(err) => return Err(err.into()),
        };
        let parent = pointer.parent().ok_or_else(|| CacheError::BadPath {
            path: path.to_owned(),
        })?;
        self.sync_blob_names()?;
        self.prepare_swept_dir(parent)?;
        if !self.copy_mode() && self.symlink_into_place(&target, parent, &pointer, absent)? {
            return Ok(true);
        }
        // Copy mode.
        if new_blob && blob_meta.is_file() {
            fs_err::rename(&blob, &pointer)?;
        } else {
            let tmp = temp_name(parent);
            if let Err(err) = fs_err::copy(&blob, &tmp).and_then(|_| fs_err::rename(&tmp, &pointer))
            {
                let _ = fs_err::remove_file(&tmp);
                return Err(err.into());
            }
        }
        Ok(true)
    }

    /// Copy mode, after [`RepoCache::place`] failed because `blobs/<etag>` is
    /// gone: a concurrent writer of this cache moved the blob into a snapshot
    /// file of its own (any variant of `commit`), as `huggingface_hub` does
    /// with a new blob. Keeps `snapshots/<commit>/<path>` if it already holds
    /// `blob`'s content, or else copies it (a temp name, then a rename) from
    /// the first regular file of the commit's snapshot that does. Returns
    /// whether `path` now holds the content, verified by size and digest;
    /// `false` leaves the caller's error standing. Reads only files of
    /// `blob`'s size.
    pub fn place_from_snapshot(
        &self,
        commit: &str,
        path: &str,
        blob: &BlobId,
    ) -> Result<bool, CacheError> {
        if self.placement(commit, path, blob)? == Placement::Copied {
            return Ok(true);
        }
        let pointer = self.snapshot_path(commit, path)?;
        let parent = pointer.parent().ok_or_else(|| CacheError::BadPath {
            path: path.to_owned(),
        })?;
        let candidates = walkdir::WalkDir::new(self.snapshot_dir(commit))
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file() && e.path() != pointer)
            .filter(|e| !is_temp_name(&e.file_name().to_string_lossy()))
            .filter(|e| e.metadata().is_ok_and(|m| m.len() == blob.size));
        for source in candidates {
            if !crate::file_matches(source.path(), blob)? {
                continue;
            }
            self.prepare_swept_dir(parent)?;
            let tmp = temp_name(parent);
            if let Err(err) =
                fs_err::copy(source.path(), &tmp).and_then(|_| fs_err::rename(&tmp, &pointer))
            {
                let _ = fs_err::remove_file(&tmp);
                tracing::debug!("copying {} to {path}: {err}", source.path().display());
                continue;
            }
            if self.placement(commit, path, blob)? == Placement::Copied {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The metadata of `blob` (not followed), which must be a regular file or
    /// a link that stays inside the cache; otherwise the error says that
    /// `pointer` cannot be linked.
    fn present_blob(&self, blob: &Path, pointer: &Path) -> Result<std::fs::Metadata, CacheError> {
        let meta = fs_err::symlink_metadata(blob).ok();
        let ok = match &meta {
            Some(m) if m.file_type().is_symlink() => fsx::resolves_inside(&self.root, blob),
            Some(m) => m.is_file(),
            None => false,
        };
        match meta {
            Some(meta) if ok => Ok(meta),
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "cannot link `{}`: blob {} is not in the cache",
                    pointer.display(),
                    blob.display()
                ),
            )
            .into()),
        }
    }

    /// Creates `dir` (a snapshot or `blobs/` directory) and, the first time
    /// this process writes there (Linux), removes the temporary names killed
    /// processes left.
    pub(crate) fn prepare_swept_dir(&self, dir: &Path) -> Result<(), CacheError> {
        self.create_dir(dir)?;
        if cfg!(target_os = "linux")
            && self
                .state
                .swept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(dir.to_owned())
        {
            sweep_stale_temps(dir);
        }
        Ok(())
    }

    /// Replaces `pointer` by a symlink to `target` (a temporary name in
    /// `parent`, then a rename). Where nothing was at `pointer` (`absent`) the
    /// link is made there directly: `symlink(2)` creates it whole, so no
    /// reader sees a partial one, and it fails rather than replace an entry
    /// that appeared meanwhile, which then takes the rename. Returns `false`
    /// when the file system has no symlinks ([`CacheWarning::NoSymlinks`] is
    /// recorded; the caller copies).
    fn symlink_into_place(
        &self,
        target: &Path,
        parent: &Path,
        pointer: &Path,
        absent: bool,
    ) -> Result<bool, CacheError> {
        if absent {
            match self.symlink(target, pointer) {
                Ok(()) => return Ok(true),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(err) if fsx::is_unsupported(&err) => {
                    self.no_symlinks(err);
                    return Ok(false);
                }
                Err(err) => return Err(err.into()),
            }
        }
        let tmp = temp_name(parent);
        match self.symlink(target, &tmp) {
            Ok(()) => {}
            Err(err) if fsx::is_unsupported(&err) => {
                self.no_symlinks(err);
                return Ok(false);
            }
            Err(err) => return Err(err.into()),
        }
        let renamed = match fs_err::rename(&tmp, pointer) {
            // Another process took our name for a stale one: link again.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.symlink(target, &tmp)?;
                fs_err::rename(&tmp, pointer)
            }
            other => other,
        };
        if let Err(err) = renamed {
            let _ = fs_err::remove_file(&tmp);
            return Err(err.into());
        }
        Ok(true)
    }

    /// Switches to copy mode after `symlink()` failed with `err` (unsupported);
    /// of threads linking at once, only the first to switch warns.
    fn no_symlinks(&self, err: std::io::Error) {
        if self.state.no_symlinks.swap(true, Ordering::Relaxed) {
            return;
        }
        self.state.warn(CacheWarning::NoSymlinks {
            dir: self.root.clone(),
            reason: err.to_string(),
        });
    }

    /// Creates the symlink `link` to `target`, or fails as
    /// [`CacheOptions::fail_symlinks`] asks.
    fn symlink(&self, target: &Path, link: &Path) -> std::io::Result<()> {
        match self.state.options.fail_symlinks {
            Some(code) => Err(symlink_error(link, std::io::Error::from_raw_os_error(code))),
            None => symlink(target, link),
        }
    }

    /// Reads the snapshot link `snapshots/<commit>/<path>` and returns the blob
    /// name it points at, if it is a symlink into this folder's `blobs/`.
    pub fn linked_etag(&self, commit: &str, path: &str) -> Option<String> {
        let pointer = self.snapshot_path(commit, path).ok()?;
        let target = fs_err::read_link(pointer).ok()?;
        let etag = target.file_name()?.to_str()?.to_owned();
        (relative_link_target(path, &etag).ok()? == target).then_some(etag)
    }
}

/// Creates the symlink `link` to `target`. Not through `fs_err`, whose error
/// drops the OS error number that [`fsx::is_unsupported`] needs (`EPERM`):
/// the path is added with [`fsx::with_context`], which keeps it.
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    let made = std::os::windows::fs::symlink_file(target, link);
    made.map_err(|err| symlink_error(link, err))
}

/// The error of creating the symlink `link`: the OS error with the path.
fn symlink_error(link: &Path, err: std::io::Error) -> std::io::Error {
    let message = format!("failed to create symlink {}", link.display());
    fsx::with_context(message, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `symlink()` refused with `EPERM` (issue 24: Windows without developer
    /// mode, some network file systems), with the path added: the file
    /// is copied, as with `HF_HUB_DISABLE_SYMLINKS`, and the cache says so once.
    #[test]
    fn symlinks_refused_with_eperm_fall_back_to_copies() {
        let dir = tempfile::tempdir().unwrap();
        let options = CacheOptions {
            fail_symlinks: Some(1),
            ..CacheOptions::default()
        };
        let cache = HubCache::with_options(dir.path(), options);
        let repo = cache.repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        let etag = "a".repeat(64);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        fs_err::create_dir_all(repo.blob_path(&etag).parent().unwrap()).unwrap();
        fs_err::write(repo.blob_path(&etag), b"so").unwrap();
        for path in ["build/x.so", "build/y.so"] {
            assert!(repo.place(commit, path, &etag, false).unwrap());
            let file = repo.snapshot_path(commit, path).unwrap();
            let meta = fs_err::symlink_metadata(&file).unwrap();
            assert!(meta.is_file(), "{}", file.display());
            assert_eq!(fs_err::read(&file).unwrap(), b"so");
        }
        let warnings = cache.take_warnings();
        assert!(
            matches!(warnings.as_slice(), [CacheWarning::NoSymlinks { .. }]),
            "{warnings:?}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn stale_temporary_names_of_dead_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".kernels-4294967294-0123abcd.tmp");
        let ours = temp_name(dir.path());
        let other = dir.path().join(".kernels-notes.tmp");
        for path in [&dead, &ours, &other] {
            std::os::unix::fs::symlink("../../blobs/x", path).unwrap();
        }
        assert_eq!(
            temp_name_pid(ours.file_name().unwrap().to_str().unwrap()),
            Some(std::process::id())
        );
        sweep_stale_temps(dir.path());
        assert!(fs_err::symlink_metadata(&dead).is_err());
        assert!(fs_err::symlink_metadata(&ours).is_ok());
        assert!(fs_err::symlink_metadata(&other).is_ok());
    }

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    const ETAG: &str = "7d4290a117a4ddcc11daae7ea675841033830c8f";

    fn repo(root: &Path) -> RepoCache {
        HubCache::new(root).repo(&"acme/relu".parse().unwrap(), RepoType::Kernel)
    }

    #[test]
    fn link_targets_match_relpath() {
        assert_eq!(
            relative_link_target("README.md", ETAG).unwrap(),
            Path::new("../../blobs").join(ETAG)
        );
        assert_eq!(
            relative_link_target("build/torch-cuda/metadata.json", ETAG).unwrap(),
            Path::new("../../../../blobs").join(ETAG)
        );
        assert!(relative_link_target("build/../x", ETAG).is_err());
        assert!(relative_link_target("/etc/passwd", ETAG).is_err());
        assert!(relative_link_target("a//b", ETAG).is_err());
    }

    #[test]
    fn folder_names_follow_repo_type() {
        let cache = HubCache::new("/c");
        let id: RepoId = "acme/relu".parse().unwrap();
        assert_eq!(
            cache.repo(&id, RepoType::Kernel).folder_name(),
            "kernels--acme--relu"
        );
        assert_eq!(
            cache.repo(&id, RepoType::Model).folder_name(),
            "models--acme--relu"
        );
    }

    #[test]
    fn link_requires_blob_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        assert!(repo.link(COMMIT, "build/v/x.py", ETAG).is_err());
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        fs_err::write(repo.blob_path(ETAG), "x = 1\n").unwrap();
        assert!(repo.link(COMMIT, "build/v/x.py", ETAG).unwrap());
        assert!(!repo.link(COMMIT, "build/v/x.py", ETAG).unwrap());
        let pointer = repo.snapshot_path(COMMIT, "build/v/x.py").unwrap();
        assert_eq!(fs_err::read_to_string(&pointer).unwrap(), "x = 1\n");
        assert_eq!(
            repo.linked_etag(COMMIT, "build/v/x.py").as_deref(),
            Some(ETAG)
        );
        // A wrong link is replaced.
        fs_err::remove_file(&pointer).unwrap();
        symlink(Path::new("../nowhere"), &pointer).unwrap();
        assert!(repo.link(COMMIT, "build/v/x.py", ETAG).unwrap());
        assert_eq!(
            repo.linked_etag(COMMIT, "build/v/x.py").as_deref(),
            Some(ETAG)
        );
    }
}
