//! Paths of the hub cache, snapshot links and ref files.

use std::path::{Path, PathBuf};

use kernels_types::RepoId;
use kernels_types::RepoType;

use kernels_types::{CommitId, Digest};

use super::{BlobLock, CacheError};

/// The root of a Hugging Face hub cache (`Settings::cache_dir`).
#[derive(Debug, Clone)]
pub struct HubCache {
    root: PathBuf,
}

/// One repository's folder inside a [`HubCache`].
#[derive(Debug, Clone)]
pub struct RepoCache {
    root: PathBuf,
    folder: String,
}

impl HubCache {
    /// A cache rooted at `root`. Nothing is created until something is written.
    pub fn new(root: impl Into<PathBuf>) -> HubCache {
        HubCache { root: root.into() }
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
        }
    }
}

/// Splits a repository path (`/`-separated) into components, rejecting anything
/// that could leave the snapshot directory: empty, `.` or `..` components, a
/// leading `/`, backslashes and NUL bytes.
fn components(path: &str) -> Result<Vec<&str>, CacheError> {
    let parts: Vec<&str> = path.split('/').collect();
    let bad = parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == ".." || p.contains(['\\', '\0']));
    if bad {
        return Err(CacheError::BadPath {
            path: path.to_owned(),
        });
    }
    Ok(parts)
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

/// Makes the new name of a directory entry durable (fsync of the directory).
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        fs_err::File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// A short random suffix for temp names next to their destination.
pub(crate) fn temp_suffix() -> String {
    format!("{:08x}", rand::random::<u32>())
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

    /// `<root>/<folder>/snapshots/<commit>`.
    pub fn snapshot_dir(&self, commit: &str) -> PathBuf {
        self.dir().join("snapshots").join(commit)
    }

    /// `<root>/<folder>/snapshots/<commit>/<path>` with `/` mapped to the OS
    /// separator. Errors when `commit` is not 40 (sha1) or 64 (sha256 repos)
    /// lowercase hex, or when `path` could escape the snapshot.
    pub fn snapshot_path(&self, commit: &str, path: &str) -> Result<PathBuf, CacheError> {
        if !CommitId::is_canonical(commit) {
            return Err(CacheError::BadCommit {
                commit: commit.to_owned(),
            });
        }
        let mut out = self.snapshot_dir(commit);
        out.extend(components(path)?);
        Ok(out)
    }

    /// Takes the inter-process lock of blob `etag` (see [`BlobLock`]); blocks
    /// until it is free.
    pub fn lock_blob(&self, etag: &str) -> Result<BlobLock, CacheError> {
        check_etag(etag)?;
        BlobLock::acquire(&self.lock_path(etag))
    }

    /// Makes `snapshots/<commit>/<path>` a relative symlink to `blobs/<etag>`.
    ///
    /// The blob must already be in place (a link never points at a missing
    /// blob). An existing identical link is kept as is; a different link or a
    /// regular file at that path is replaced atomically. Returns whether the
    /// link had to be created or changed.
    pub fn link(&self, commit: &str, path: &str, etag: &str) -> Result<bool, CacheError> {
        check_etag(etag)?;
        let pointer = self.snapshot_path(commit, path)?;
        let target = relative_link_target(path, etag)?;
        let blob = self.blob_path(etag);
        if !blob.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "cannot link `{}`: blob {} is not in the cache",
                    pointer.display(),
                    blob.display()
                ),
            )
            .into());
        }
        match fs_err::symlink_metadata(&pointer) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if std::fs::read_link(&pointer).is_ok_and(|t| t == target) {
                    return Ok(false);
                }
            }
            Ok(meta) if meta.is_dir() => return Err(CacheError::LinkBlocked(pointer)),
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err.into()),
        }
        let parent = pointer.parent().expect("snapshot path has a parent");
        fs_err::create_dir_all(parent)?;
        let name = pointer
            .file_name()
            .expect("snapshot path has a file name")
            .to_string_lossy();
        let tmp = parent.join(format!(".{name}.{}.tmp", temp_suffix()));
        symlink(&target, &tmp)?;
        if let Err(err) = fs_err::rename(&tmp, &pointer) {
            let _ = std::fs::remove_file(&tmp);
            return Err(err.into());
        }
        Ok(true)
    }

    /// Reads the snapshot link `snapshots/<commit>/<path>` and returns the blob
    /// name it points at, if it is a symlink into this folder's `blobs/`.
    pub fn linked_etag(&self, commit: &str, path: &str) -> Option<String> {
        let pointer = self.snapshot_path(commit, path).ok()?;
        let target = std::fs::read_link(pointer).ok()?;
        let etag = target.file_name()?.to_str()?.to_owned();
        (relative_link_target(path, &etag).ok()? == target).then_some(etag)
    }

    /// Records that `revision` (a branch or tag, possibly containing `/`) points
    /// at `commit`: writes `refs/<revision>` with exactly the 40 bytes of the
    /// commit id, no newline, via a temp file and rename, and only when the
    /// content changes. Commit-id revisions write nothing (as `huggingface_hub`).
    pub fn write_ref(&self, revision: &str, commit: &str) -> Result<(), CacheError> {
        if !CommitId::is_canonical(commit) {
            return Err(CacheError::BadCommit {
                commit: commit.to_owned(),
            });
        }
        if revision == commit {
            return Ok(());
        }
        let parts = components(revision).map_err(|_| CacheError::BadRef {
            revision: revision.to_owned(),
        })?;
        let mut path = self.dir().join("refs");
        path.extend(parts);
        if std::fs::read(&path).is_ok_and(|c| c == commit.as_bytes()) {
            return Ok(());
        }
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        crate::write_atomic(&path, commit.as_bytes())?;
        Ok(())
    }

    /// The commit stored in `refs/<revision>`, if any.
    pub fn read_ref(&self, revision: &str) -> Option<String> {
        let parts = components(revision).ok()?;
        let mut path = self.dir().join("refs");
        path.extend(parts);
        let content = std::fs::read_to_string(path).ok()?;
        CommitId::is_canonical(&content).then_some(content)
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    fs_err::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    fs_err::os::windows::fs::symlink_file(target, link)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(std::fs::read_to_string(&pointer).unwrap(), "x = 1\n");
        assert_eq!(
            repo.linked_etag(COMMIT, "build/v/x.py").as_deref(),
            Some(ETAG)
        );
        // A wrong link is replaced.
        std::fs::remove_file(&pointer).unwrap();
        symlink(Path::new("../nowhere"), &pointer).unwrap();
        assert!(repo.link(COMMIT, "build/v/x.py", ETAG).unwrap());
        assert_eq!(
            repo.linked_etag(COMMIT, "build/v/x.py").as_deref(),
            Some(ETAG)
        );
    }

    #[test]
    fn refs_are_40_bytes_and_skipped_for_commits() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        repo.write_ref(COMMIT, COMMIT).unwrap();
        assert!(!repo.dir().join("refs").exists());
        repo.write_ref("refs/heads/v1", COMMIT).unwrap();
        let bytes = std::fs::read(repo.dir().join("refs/refs/heads/v1")).unwrap();
        assert_eq!(bytes, COMMIT.as_bytes());
        assert_eq!(repo.read_ref("refs/heads/v1").as_deref(), Some(COMMIT));
        assert!(repo.write_ref("../x", COMMIT).is_err());
    }
}
