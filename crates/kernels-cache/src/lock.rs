//! Inter-process blob locks compatible with Python's `filelock`.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::CacheError;

/// An exclusive lock on `.locks/<folder>/<etag>.lock`, held while one blob is
/// checked or written.
///
/// It is an `flock(LOCK_EX)` (std [`File::lock`]), the same primitive
/// Python's `filelock.FileLock` and the `hf-hub` crate use, so a concurrent
/// `huggingface_hub` download of the same blob waits for us and vice versa. The
/// lock file stays on disk (as Python leaves it); stale lock files are harmless
/// because the kernel drops the lock when its holder exits. Released on drop.
#[derive(Debug)]
pub struct BlobLock {
    _file: File,
    path: PathBuf,
}

impl BlobLock {
    /// Creates the lock file if needed and blocks until the lock is ours.
    pub(crate) fn acquire(path: &Path) -> Result<BlobLock, CacheError> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let mut options = fs_err::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use fs_err::os::unix::fs::OpenOptionsExt;
            options.mode(0o664);
        }
        let file = options.open(path)?;
        let (file, _) = file.into_parts();
        file.lock().map_err(|err| {
            std::io::Error::new(
                err.kind(),
                format!("cannot lock `{}`: {err}", path.display()),
            )
        })?;
        Ok(BlobLock {
            _file: file,
            path: path.to_owned(),
        })
    }

    /// Path of the lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".locks/f/abc.lock");
        let first = BlobLock::acquire(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let path2 = path.clone();
        let waiter = std::thread::spawn(move || {
            let _second = BlobLock::acquire(&path2).unwrap();
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
