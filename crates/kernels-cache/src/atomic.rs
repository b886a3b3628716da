//! The one atomic-write scheme of `kernels`: temporary file in the same
//! directory, `fsync`, rename, directory `fsync`.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically: the data goes to a temporary file in the
/// same directory, is flushed to disk (`fsync`), and is then renamed over `path`.
/// Readers see either the old file or the complete new one, never a partial write.
/// The directory must exist. On Unix the new file keeps the permission bits of the
/// file it replaces, or gets 0644 when there was none.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// [`write_atomic`] for content produced by `write`, which streams into the
/// temporary file (for example a zip archive); nothing is renamed when it fails.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
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
        .map_err(|err| with_path(err, dir))?;
    write(tmp.as_file_mut()).map_err(|err| with_path(err, tmp.path()))?;
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
    #[cfg(unix)]
    if let Ok(dir) = fs_err::File::open(dir) {
        // Make the rename durable; failure here does not undo the write.
        let _ = dir.sync_all();
    }
    Ok(())
}

fn with_path(err: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{}: {err}", path.display()))
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
}
