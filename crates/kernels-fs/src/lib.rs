//! The one atomic-write scheme of `kernels`: a temporary file in the same
//! directory, `fsync`, rename, directory `fsync`. Readers see either the old
//! file or the complete new one, never a partial write, and a completed write
//! survives a power loss.
//!
//! It is a crate of its own because both the hub cache (`kernels-cache`: ref
//! files, and through it `kernels.lock`, `pyproject.toml` and wheels) and the
//! mirror writer (`kernels-serve`) use it, and neither depends on the other.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tempfile::NamedTempFile;

/// Why [`write_atomic_with`] failed. Either way nothing was renamed: the
/// destination is as it was and the temporary file is removed.
#[derive(Debug)]
pub enum AtomicError<E> {
    /// Creating, syncing or renaming the temporary file failed (the message
    /// names the path).
    Io(io::Error),
    /// The caller's `write` failed.
    Write(E),
}

impl AtomicError<io::Error> {
    /// The error, whichever step it came from.
    pub fn into_io(self) -> io::Error {
        match self {
            AtomicError::Io(err) | AtomicError::Write(err) => err,
        }
    }
}

/// Writes `bytes` to `path` atomically (see [`write_atomic_with`]). An error
/// names the file it concerns.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, |tmp| {
        tmp.write_all(bytes)
            .map_err(|err| with_path(err, tmp.path()))
    })
    .map_err(AtomicError::into_io)
}

/// Writes what `write` produces to `path` atomically: `write` streams into a
/// temporary file in the same directory (for example a zip archive), which is
/// flushed to disk (`fsync`) and renamed over `path`; then the directory is
/// synced so that the rename is durable. Nothing is renamed when `write` fails.
///
/// The directory must exist. On Unix the new file keeps the permission bits of
/// the file it replaces, or gets 0644 when there was none.
pub fn write_atomic_with<E>(
    path: &Path,
    write: impl FnOnce(&mut File) -> Result<(), E>,
) -> Result<(), AtomicError<E>> {
    replace(path, |tmp| write(tmp.as_file_mut()))
}

/// Makes the new names of entries in `dir` durable (fsync of the directory;
/// nothing to do off Unix).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    fs_err::File::open(dir).and_then(|dir| dir.sync_all())?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Flushes everything written to the file system that holds `dir`
/// (`syncfs(2)` on Linux, the data and metadata of every file on it) and waits
/// for it: one call for a batch of files written without an `fsync` each.
/// Elsewhere (no `syncfs`) it syncs `dir` only, which then falls short of
/// covering the files' data; callers there `fsync` each file.
pub fn sync_file_system(dir: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let dir = fs_err::File::open(dir)?;
        rustix::fs::syncfs(&dir).map_err(io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    sync_dir(dir)
}

fn replace<E>(
    path: &Path,
    write: impl FnOnce(&mut NamedTempFile) -> Result<(), E>,
) -> Result<(), AtomicError<E>> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // A fixed short prefix: the temporary name never exceeds NAME_MAX, whatever
    // the length of the destination's name.
    let mut tmp = tempfile::Builder::new()
        .prefix(".kernels-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|err| AtomicError::Io(with_path(err, dir)))?;
    write(&mut tmp).map_err(AtomicError::Write)?;
    persist(tmp, path).map_err(AtomicError::Io)?;
    // Make the rename durable; failure here does not undo the write.
    let _ = sync_dir(dir);
    Ok(())
}

/// Syncs the complete temporary file, gives it its mode and renames it to `path`.
fn persist(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.as_file()
        .sync_all()
        .map_err(|err| with_path(err, tmp.path()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs_err::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|err| with_path(err, tmp.path()))?;
    }
    tmp.persist(path)
        .map_err(|err| with_path(err.error, path))?;
    Ok(())
}

fn with_path(err: io::Error, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kernels.lock");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs_err::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs_err::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let long = dir.path().join("x".repeat(250));
        write_atomic(&long, b"long").unwrap();
        assert_eq!(fs_err::read(&long).unwrap(), b"long");
    }

    #[test]
    fn a_failed_write_renames_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("repo.toml");
        write_atomic(&path, b"old").unwrap();
        let result = write_atomic_with(&path, |file| {
            file.write_all(b"half")?;
            Err::<(), io::Error>(io::Error::other("stopped"))
        });
        assert!(matches!(result, Err(AtomicError::Write(_))));
        assert_eq!(fs_err::read(&path).unwrap(), b"old");
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_0644_and_replaced_files_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        write_atomic(&path, b"1").unwrap();
        let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o644);
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&path, b"2").unwrap();
        assert_eq!(mode(&path), 0o600);
    }
}
