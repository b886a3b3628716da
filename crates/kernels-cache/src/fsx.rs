//! File-system primitives that never follow a link planted in the cache, and
//! the environment facts (flock, symlinks, free space) the writer adapts to.

use std::fs::File;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use super::CacheError;

/// `O_NOFOLLOW`: opening a path whose last component is a symlink fails.
#[cfg(unix)]
fn no_follow(options: &mut fs_err::OpenOptions) {
    use fs_err::os::unix::fs::OpenOptionsExt;
    options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
}

#[cfg(not(unix))]
fn no_follow(_: &mut fs_err::OpenOptions) {}

/// Opens (creating if needed) a regular file for reading and writing without
/// following a symlink at `path`. A symlink or other non-file found there is
/// removed first (it can only have been planted: the cache never creates one
/// at such a name), so the data lands in the cache and nowhere else.
pub(crate) fn open_rw_no_follow(path: &Path, mode: u32) -> Result<fs_err::File, CacheError> {
    if let Ok(meta) = fs_err::symlink_metadata(path)
        && !meta.file_type().is_file()
    {
        if meta.is_dir() {
            return Err(CacheError::NotAFile(path.to_owned()));
        }
        tracing::warn!("removing `{}`: not a regular file", path.display());
        fs_err::remove_file(path)?;
    }
    let mut options = fs_err::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    no_follow(&mut options);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(options.open(path)?)
}

/// Opens a file with no name in `dir` (Linux `O_TMPFILE`, mode `0o644` less
/// the umask) and returns it with the `/proc/self/fd/<n>` path that reads it
/// and that [`name_unnamed`] links into place. A process killed before that
/// leaves nothing behind. `None` where the kernel, the file system or a
/// missing `/proc` does not allow it: the caller writes a named file instead.
#[cfg(target_os = "linux")]
pub(crate) fn open_unnamed(dir: &Path) -> Option<(fs_err::File, PathBuf)> {
    use rustix::fs::{Mode, OFlags};
    static PROC_FD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC_FD.get_or_init(|| Path::new("/proc/self/fd").is_dir()) {
        return None;
    }
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let fd = rustix::fs::open(dir, flags, Mode::from_raw_mode(0o644)).ok()?;
    let path = PathBuf::from(format!(
        "/proc/self/fd/{}",
        rustix::fd::AsRawFd::as_raw_fd(&fd)
    ));
    Some((
        fs_err::File::from_parts(File::from(fd), dir.join("(unnamed)")),
        path,
    ))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_unnamed(_: &Path) -> Option<(fs_err::File, PathBuf)> {
    None
}

/// Gives the unnamed file open at `fd_path` (from [`open_unnamed`]) the name
/// `dest`. Where `dest` exists (a blob that failed its check, or one a
/// concurrent writer finished first) the file is linked under a temporary
/// name and renamed over it, so `dest` is never missing meanwhile.
#[cfg(target_os = "linux")]
pub(crate) fn name_unnamed(fd_path: &Path, dest: &Path) -> Result<(), CacheError> {
    use rustix::fs::{AtFlags, CWD, linkat};
    let link = |to: &Path| {
        linkat(CWD, fd_path, CWD, to, AtFlags::SYMLINK_FOLLOW)
            .map_err(|err| with_context(format!("naming `{}`", to.display()), err.into()))
    };
    match link(dest) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == ErrorKind::AlreadyExists => {
            let dir = dest.parent().unwrap_or(Path::new("."));
            let tmp = crate::layout::temp_name(dir);
            link(&tmp)?;
            fs_err::rename(&tmp, dest).inspect_err(|_| {
                let _ = fs_err::remove_file(&tmp);
            })?;
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn name_unnamed(_: &Path, _: &Path) -> Result<(), CacheError> {
    unreachable!("open_unnamed returns None off Linux")
}

/// `err` with `message` in front (the path it is about), its OS error number
/// kept as its source, where [`os_code`] finds it. `fs_err`'s errors name the
/// path too but drop the number (their `source()` is `None`), so a call whose
/// errno decides what to do next (`symlink()` refused with `EPERM`) is made
/// with `std` and wrapped here.
pub(crate) fn with_context(message: String, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), Context(message, err))
}

/// An OS error with the message of [`with_context`].
#[derive(Debug)]
struct Context(String, std::io::Error);

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl std::error::Error for Context {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}

/// The operating system's error number of `err`, also when it is wrapped
/// ([`with_context`], or `std::io::Error::new` around an error whose chain of
/// sources holds one): the chain is searched for the first error that has one.
pub(crate) fn os_code(err: &std::io::Error) -> Option<i32> {
    if let Some(code) = err.raw_os_error() {
        return Some(code);
    }
    let mut next: Option<&(dyn std::error::Error + 'static)> = err
        .get_ref()
        .map(|inner| inner as &(dyn std::error::Error + 'static));
    while let Some(cause) = next {
        if let Some(code) = cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(code);
        }
        next = cause.source();
    }
    None
}

/// Whether an I/O error means "this file system cannot do that" (flock or
/// symlink not implemented, or refused as `EPERM`: Windows without developer
/// mode, some network file systems), as opposed to a real failure. The error
/// number is looked for through wrappers ([`os_code`]).
pub(crate) fn is_unsupported(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        use rustix::io::Errno;
        let code = os_code(err);
        [Errno::NOSYS, Errno::OPNOTSUPP, Errno::NOLCK, Errno::PERM]
            .iter()
            .any(|e| code == Some(e.raw_os_error()))
            || err.kind() == ErrorKind::Unsupported
    }
    #[cfg(not(unix))]
    {
        err.kind() == ErrorKind::Unsupported || err.kind() == ErrorKind::PermissionDenied
    }
}

/// Whether an I/O error means the file system or directory is not writable.
pub fn is_read_only(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    if os_code(err) == Some(rustix::io::Errno::ROFS.raw_os_error()) {
        return true;
    }
    err.kind() == ErrorKind::PermissionDenied || err.kind() == ErrorKind::ReadOnlyFilesystem
}

/// Whether an I/O error means the disk is full (or a quota is exhausted).
pub fn is_disk_full(err: &std::io::Error) -> bool {
    if err.kind() == ErrorKind::StorageFull || err.kind() == ErrorKind::QuotaExceeded {
        return true;
    }
    #[cfg(unix)]
    if os_code(err) == Some(rustix::io::Errno::NOSPC.raw_os_error()) {
        return true;
    }
    false
}

/// Creates `dir` (below `root`) component by component without following a
/// symlink that would lead outside `root`: every existing component is checked
/// with `lstat`, and a symlinked component is accepted only when its real path
/// stays inside the real path of `root`. `root` itself may be a symlink (the
/// user chose it); it is created when missing.
pub(crate) fn create_dir_inside(root: &Path, dir: &Path) -> Result<(), CacheError> {
    let rel = dir.strip_prefix(root).map_err(|_| CacheError::Escapes {
        path: dir.to_owned(),
        real: dir.to_owned(),
        root: root.to_owned(),
    })?;
    if !root.is_dir() {
        fs_err::create_dir_all(root)?;
    }
    let real_root = fs_err::canonicalize(root)?;
    let mut current = root.to_owned();
    for component in rel.components() {
        let Component::Normal(name) = component else {
            return Err(CacheError::BadPath {
                path: rel.display().to_string(),
            });
        };
        current.push(name);
        match fs_err::symlink_metadata(&current) {
            Ok(meta) if meta.is_dir() => {}
            Ok(meta) if meta.file_type().is_symlink() => {
                let real = fs_err::canonicalize(&current)?;
                if !real.starts_with(&real_root) || !real.is_dir() {
                    return Err(CacheError::Escapes {
                        path: current,
                        real,
                        root: real_root,
                    });
                }
            }
            Ok(_) => return Err(CacheError::NotADirectory(current)),
            Err(err) if err.kind() == ErrorKind::NotFound => match fs_err::create_dir(&current) {
                Ok(()) => {}
                Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err.into()),
            },
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// Whether the real path of `path` stays inside the real path of `root`
/// (`false` when either cannot be resolved).
pub(crate) fn resolves_inside(root: &Path, path: &Path) -> bool {
    match (fs_err::canonicalize(root), fs_err::canonicalize(path)) {
        (Ok(root), Ok(real)) => real.starts_with(root),
        _ => false,
    }
}

/// The nearest existing ancestor of `path` (itself included).
pub fn existing_ancestor(path: &Path) -> PathBuf {
    let mut current = path.to_owned();
    loop {
        if current.exists() {
            return current;
        }
        if !current.pop() || current.as_os_str().is_empty() {
            return PathBuf::from(".");
        }
    }
}

/// Bytes available to an unprivileged writer on the file system holding
/// `path` (or its nearest existing ancestor); `None` when unknown.
pub fn free_space(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        let stat = rustix::fs::statvfs(existing_ancestor(path)).ok()?;
        Some(stat.f_bavail.saturating_mul(stat.f_frsize))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Whether a new entry could be created in `dir` (or, when it does not exist,
/// its nearest existing ancestor): `access(W_OK)` plus a read-only mount check.
pub fn is_writable(dir: &Path) -> bool {
    let dir = existing_ancestor(dir);
    #[cfg(unix)]
    {
        use rustix::fs::{Access, StatVfsMountFlags};
        if rustix::fs::statvfs(&dir).is_ok_and(|s| s.f_flag.contains(StatVfsMountFlags::RDONLY)) {
            return false;
        }
        rustix::fs::access(&dir, Access::WRITE_OK).is_ok()
    }
    #[cfg(not(unix))]
    {
        !fs_err::metadata(&dir).is_ok_and(|m| m.permissions().readonly())
    }
}

/// Takes an exclusive `flock` on `file`; `Ok(false)` when the file system does
/// not implement it.
pub(crate) fn try_flock(file: &File, path: &Path) -> Result<bool, CacheError> {
    match file.lock() {
        Ok(()) => Ok(true),
        Err(err) if is_unsupported(&err) => Ok(false),
        Err(err) => Err(std::io::Error::new(
            err.kind(),
            format!("cannot lock `{}`: {err}", path.display()),
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OS error number inside an error with context (issue 24): `EPERM`
    /// from a real call (a hard link to a directory is refused with `EPERM` on
    /// Linux, without privileges) is still recognised once the path is added.
    #[cfg(target_os = "linux")]
    #[test]
    fn wrapped_errno_is_found() {
        let dir = tempfile::tempdir().unwrap();
        #[allow(clippy::disallowed_methods)]
        let raw = std::fs::hard_link(dir.path(), dir.path().join("link")).unwrap_err();
        let err = with_context(format!("cannot link {}", dir.path().display()), raw);
        assert_eq!(err.raw_os_error(), None);
        assert_eq!(os_code(&err), Some(rustix::io::Errno::PERM.raw_os_error()));
        assert!(is_unsupported(&err));
        let plain = std::io::Error::other("no number");
        assert_eq!(os_code(&plain), None);
        assert!(!is_unsupported(&plain));
    }

    #[test]
    fn planted_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache");
        let outside = dir.path().join("outside");
        fs_err::create_dir_all(&root).unwrap();
        fs_err::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("blobs")).unwrap();
        let err = create_dir_inside(&root, &root.join("blobs/x")).unwrap_err();
        assert!(matches!(err, CacheError::Escapes { .. }), "{err}");
        assert!(!outside.join("x").exists());

        let victim = outside.join("victim");
        fs_err::write(&victim, b"keep").unwrap();
        let planted = root.join("f.incomplete");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        use std::io::Write;
        open_rw_no_follow(&planted, 0o644)
            .unwrap()
            .write_all(b"data")
            .unwrap();
        assert_eq!(fs_err::read(&victim).unwrap(), b"keep");
        assert_eq!(fs_err::read(&planted).unwrap(), b"data");

        // A link that stays inside the cache is fine.
        fs_err::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("inner")).unwrap();
        create_dir_inside(&root, &root.join("inner/y")).unwrap();
        assert!(root.join("real/y").is_dir());
    }
}
