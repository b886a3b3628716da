//! Inter-process blob locks compatible with Python's `filelock`.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{CacheError, fsx};

/// An exclusive lock on `.locks/<folder>/<etag>.lock`, held while one blob is
/// checked or written.
///
/// It is an `flock(LOCK_EX)` (std [`File::lock`]), the same primitive
/// Python's `filelock.FileLock` and the `hf-hub` crate use, so a concurrent
/// `huggingface_hub` download of the same blob waits for us and vice versa. The
/// lock file stays on disk (as Python leaves it); stale lock files are harmless
/// because the kernel drops the lock when its holder exits. Released on drop.
///
/// On a file system without `flock` (`ENOSYS`, `EOPNOTSUPP`, `ENOLCK`: some
/// network file systems) the lock is [`BlobLock::is_held`] `false`: the writer
/// then uses a temporary file of its own and a rename, so concurrent writers
/// never share partial data (see [`crate::CacheWarning::NoFlock`]).
#[derive(Debug)]
pub struct BlobLock {
    _file: Option<File>,
    path: PathBuf,
}

impl BlobLock {
    /// Creates the lock file if needed (never following a symlink planted at
    /// its name) and blocks until the lock is ours. `flock` is not attempted
    /// when `use_flock` is false. Returns the lock and whether `flock` turned
    /// out to be unsupported.
    pub(crate) fn acquire(
        root: &Path,
        path: &Path,
        use_flock: bool,
    ) -> Result<(BlobLock, bool), CacheError> {
        if let Some(parent) = path.parent() {
            fsx::create_dir_inside(root, parent)?;
        }
        let file = fsx::open_rw_no_follow(path, 0o664)?;
        let (file, _) = file.into_parts();
        let held = use_flock && fsx::try_flock(&file, path)?;
        let unsupported = use_flock && !held;
        Ok((
            BlobLock {
                _file: held.then_some(file),
                path: path.to_owned(),
            },
            unsupported,
        ))
    }

    /// Path of the lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an `flock` is actually held (false on file systems without it).
    pub fn is_held(&self) -> bool {
        self._file.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let path = dir.path().join(".locks/f/abc.lock");
        let (first, _) = BlobLock::acquire(&root, &path, true).unwrap();
        assert!(first.is_held());
        let (tx, rx) = std::sync::mpsc::channel();
        let path2 = path.clone();
        let waiter = std::thread::spawn(move || {
            let _second = BlobLock::acquire(&root, &path2, true).unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err()
        );
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        waiter.join().unwrap();
        assert!(path.exists());
    }
}
