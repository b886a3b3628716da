//! Small mirror files held in memory, so that answering one costs an `lstat`
//! on the runtime thread instead of an open, a read and a close on the
//! blocking pool (issue 26: ~6 futex calls a request before).
//!
//! * Only files of at most [`MAX_FILE`] bytes, [`BUDGET`] bytes in all; a
//!   file that does not fit evicts held ones (in no particular order) first.
//! * One cache per loaded mirror ([`crate::App`]): a reload starts empty.
//! * A hit is only served while the file is what was read: every hit compares
//!   the path's `lstat` (device, inode, size, modification and change times)
//!   with the `fstat` taken around the read. A file replaced, rewritten or
//!   turned into a symbolic link since is read again, through
//!   [`content::open_confined`], which refuses links.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use bytes::Bytes;

use crate::content;

/// Largest file held in memory, in bytes.
pub(crate) const MAX_FILE: u64 = 256 * 1024;
/// Bytes held in memory over every file.
pub(crate) const BUDGET: usize = 64 << 20;

/// What identifies one version of a file: an unchanged stamp means unchanged
/// bytes (a write moves the modification time, a rename the inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    #[cfg(unix)]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    fn of(meta: &std::fs::Metadata) -> Stamp {
        let nanos = |t: std::io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or((0, 0), |d| {
                    (d.as_secs() as i64, i64::from(d.subsec_nanos()))
                })
        };
        Stamp {
            device: 0,
            inode: 0,
            size: meta.len(),
            modified: nanos(meta.modified()),
            changed: nanos(meta.created()),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    bytes: Bytes,
    stamp: Stamp,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<PathBuf, Entry>,
    bytes: usize,
}

/// The small-file cache of one loaded mirror (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct SmallFiles {
    state: Mutex<State>,
}

impl SmallFiles {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes of `path` when held and the file is unchanged since; a
    /// changed file is dropped.
    fn hit(&self, path: &Path) -> Option<Bytes> {
        let entry = self.lock().entries.get(path).cloned()?;
        let now = fs_err::symlink_metadata(path).ok();
        if now.is_some_and(|m| m.is_file() && Stamp::of(&m) == entry.stamp) {
            return Some(entry.bytes);
        }
        let mut state = self.lock();
        if let Some(gone) = state.entries.remove(path) {
            state.bytes -= gone.bytes.len();
        }
        None
    }

    /// Holds `bytes` as the content of `path` at `stamp`, evicting other
    /// files while over [`BUDGET`].
    fn insert(&self, path: PathBuf, bytes: Bytes, stamp: Stamp) {
        let mut state = self.lock();
        if let Some(old) = state.entries.remove(&path) {
            state.bytes -= old.bytes.len();
        }
        while state.bytes + bytes.len() > BUDGET {
            let Some(victim) = state.entries.keys().next().cloned() else {
                return;
            };
            if let Some(gone) = state.entries.remove(&victim) {
                state.bytes -= gone.bytes.len();
            }
        }
        state.bytes += bytes.len();
        state.entries.insert(path, Entry { bytes, stamp });
    }

    /// A body of bytes `start..start + len` of the mirror file `path` (`size`
    /// bytes when the mirror was loaded, at most [`MAX_FILE`]): from memory
    /// when held and unchanged, else read whole in one blocking task and held.
    /// A file that is shorter now than `size` ends the body with an error.
    pub(crate) fn body(self: &Arc<Self>, path: &Path, size: u64, start: u64, len: u64) -> Body {
        let range = start as usize..(start + len) as usize;
        if let Some(bytes) = self.hit(path) {
            return Body::from(bytes.slice(range));
        }
        let (cache, path) = (self.clone(), path.to_owned());
        Body::from_stream(futures_util::stream::once(async move {
            let owned = path.clone();
            let (bytes, stamp) = content::blocking(move || read_whole(&owned, size)).await?;
            if let Some(stamp) = stamp {
                cache.insert(path, bytes.clone(), stamp);
            }
            Ok::<_, std::io::Error>(bytes.slice(range))
        }))
    }
}

/// The first `size` bytes of the mirror file `path`, with its stamp when it
/// did not change during the read and is exactly `size` bytes long (else the
/// bytes are served once and not held).
fn read_whole(path: &Path, size: u64) -> std::io::Result<(Bytes, Option<Stamp>)> {
    let file = content::open_confined(path)?;
    let before = Stamp::of(&file.metadata()?);
    let mut bytes = Vec::with_capacity(size as usize);
    (&file).take(size).read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < size {
        return Err(std::io::Error::other(format!(
            "{} is {} bytes now, {size} when the mirror was loaded; reload the mirror",
            path.display(),
            bytes.len()
        )));
    }
    let after = Stamp::of(&file.metadata()?);
    let stamp = (before == after && before.size == size).then_some(before);
    Ok((Bytes::from(bytes), stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(path: &Path) -> Stamp {
        Stamp::of(&fs_err::symlink_metadata(path).unwrap())
    }

    #[test]
    fn a_hit_needs_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        fs_err::write(&path, b"old").unwrap();
        let cache = SmallFiles::default();
        let (bytes, stamp) = read_whole(&path, 3).unwrap();
        cache.insert(path.clone(), bytes, stamp.unwrap());
        assert_eq!(cache.hit(&path).as_deref(), Some(&b"old"[..]));
        // Replaced by rename: another inode, so read again.
        let next = dir.path().join("a.py.new");
        fs_err::write(&next, b"new").unwrap();
        fs_err::rename(&next, &path).unwrap();
        assert_eq!(cache.hit(&path), None);
        assert_eq!(cache.lock().bytes, 0);
    }

    #[test]
    fn the_budget_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        fs_err::write(&path, b"x").unwrap();
        let stamp = stamp_of(&path);
        let cache = SmallFiles::default();
        let big = Bytes::from(vec![0u8; BUDGET / 3 + 1]);
        for i in 0..5 {
            cache.insert(dir.path().join(i.to_string()), big.clone(), stamp);
        }
        let state = cache.lock();
        assert_eq!(state.entries.len(), 2);
        assert_eq!(state.bytes, 2 * big.len());
    }

    #[test]
    fn a_file_shorter_than_loaded_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short");
        fs_err::write(&path, b"ab").unwrap();
        let err = read_whole(&path, 5).unwrap_err();
        assert!(err.to_string().contains("reload the mirror"), "{err}");
    }
}
