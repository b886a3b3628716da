//! Writing one blob: `.incomplete` file, streaming verification, atomic rename.

use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;

use std::path::Path;

use kernels_types::{BlobId, Digest, DigestKind, Hasher};

use super::{BlobLock, CacheError, RepoCache};
use crate::layout::Unsynced;
use crate::stream_hash::StreamHasher;

/// Hashes the file at `path` as `kind`, returning the digest and the number of
/// bytes read. Errors name the path.
pub fn hash_file(path: &Path, kind: DigestKind) -> std::io::Result<(Digest, u64)> {
    let mut file = fs_err::File::open(path)?;
    let size = file.metadata()?.len();
    let mut hasher = Hasher::new(kind, size);
    hasher.update_from(&mut file)?;
    let len = hasher.len();
    Ok((hasher.finish(), len))
}

/// Whether the file at `path` has exactly the size and digest of `blob`. A
/// missing file is `Ok(false)`; other read errors are returned.
pub fn file_matches(path: &Path, blob: &BlobId) -> std::io::Result<bool> {
    match fs_err::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == blob.size => {}
        Ok(_) => return Ok(false),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    }
    let (digest, len) = hash_file(path, blob.kind())?;
    Ok(len == blob.size && digest == blob.digest)
}

/// Blobs of at most this many bytes (16 KiB, one TLS record of plaintext)
/// are written without the `.locks/` file lock and without the shared
/// `.incomplete` name: an interrupted transfer of one loses too little to be
/// worth resuming, and the lock file would be a third inode per file. Their
/// content goes through a temporary name of this process and an atomic
/// rename of verified content, which a concurrent `huggingface_hub` download
/// of the same blob (renaming its own verified copy) cannot corrupt.
pub const UNLOCKED_MAX: u64 = 16 * 1024;

/// What a caller finds when it opens a blob for writing (see
/// [`RepoCache::open_blob`]).
#[derive(Debug)]
pub enum PartialBlob {
    /// `blobs/<etag>` exists and its size and digest verify: nothing to do.
    Complete,
    /// The blob must be (re)fetched; write the bytes from `writer.offset()` on.
    Missing(Box<BlobWriter>),
}

/// Streams content into `blobs/<etag>.incomplete` while hashing it, then
/// verifies size and digest and renames it to `blobs/<etag>`.
///
/// Partial data left by an interrupted run (ours or `huggingface_hub` ≤1.17,
/// which uses the same name under the same lock) is kept: the writer hashes it
/// and reports its length as [`BlobWriter::offset`], so the caller can ask for
/// the rest with a `Range` request; small blobs ([`UNLOCKED_MAX`]) use a name of
/// their own instead. Writes are plain blocking file writes; the
/// caller runs them from a task that may block briefly.
#[derive(Debug)]
pub struct BlobWriter {
    file: fs_err::File,
    partial: TempGuard,
    blob: PathBuf,
    expected: BlobId,
    hasher: StreamHasher,
    offset: u64,
    /// The cache, told of the rename (its directory is synced before a link).
    repo: RepoCache,
    _lock: Option<BlobLock>,
}

impl RepoCache {
    /// Checks `blobs/<etag>`, first taking the blob lock for `expected`
    /// unless the blob is small ([`UNLOCKED_MAX`]).
    ///
    /// * Present with the right size and digest → [`PartialBlob::Complete`].
    /// * Present but wrong (corrupted, truncated) → a writer is returned; the bad
    ///   blob stays until [`BlobWriter::finish`] renames verified content over
    ///   it, so snapshot links never dangle even when the fetch fails.
    /// * Absent → a writer that resumes from a `blobs/<etag>.incomplete` left
    ///   behind by an interrupted download, if one exists, is not longer than
    ///   the expected size and the lock is held.
    ///
    /// Blocks while another process holds the lock.
    pub fn open_blob(&self, expected: &BlobId) -> Result<PartialBlob, CacheError> {
        let etag = expected.etag();
        let lock = match expected.size > UNLOCKED_MAX {
            true => Some(self.lock_blob(&etag)?),
            false => None,
        };
        let blob = self.blob_path(&etag);
        if self.blob_matches(expected)? {
            return Ok(PartialBlob::Complete);
        }
        // The first write of this process into `blobs/` also removes the
        // private names of killed writers (a SIGKILL skips the drop below).
        self.prepare_swept_dir(&self.blobs_dir())?;
        // Without an flock the shared `.incomplete` name could be written by two
        // processes at once: write a file of our own, unnamed until verified
        // (Linux `O_TMPFILE`, which a SIGKILL cannot leave behind), or else
        // named `.kernels-<pid>-<8hex>.tmp` (swept by a later run once its
        // process is gone) and removed when the writer is dropped unfinished.
        let (mut file, partial) = if lock.as_ref().is_some_and(BlobLock::is_held) {
            let path = self.incomplete_path(&etag);
            let file = super::fsx::open_rw_no_follow(&path, 0o644)?;
            (
                file,
                TempGuard {
                    path,
                    kind: TempKind::Shared,
                },
            )
        } else if let Some((file, path)) = super::fsx::open_unnamed(&self.blobs_dir()) {
            (
                file,
                TempGuard {
                    path,
                    kind: TempKind::Unnamed,
                },
            )
        } else {
            let path = super::layout::temp_name(&self.blobs_dir());
            let file = super::fsx::open_rw_no_follow(&path, 0o644)?;
            (
                file,
                TempGuard {
                    path,
                    kind: TempKind::Private,
                },
            )
        };
        let mut hasher = Hasher::new(expected.kind(), expected.size);
        let existing = match partial.kind {
            TempKind::Shared => file.metadata()?.len(),
            TempKind::Private | TempKind::Unnamed => 0,
        };
        if existing > expected.size {
            file.set_len(0)?;
        } else if existing > 0 {
            hasher.update_from(&mut file)?;
        }
        let offset = hasher.len();
        file.seek(SeekFrom::Start(offset))?;
        Ok(PartialBlob::Missing(Box::new(BlobWriter {
            file,
            partial,
            blob,
            expected: *expected,
            hasher: StreamHasher::Inline(hasher),
            offset,
            repo: self.clone(),
            _lock: lock,
        })))
    }
}

/// The file a writer fills, and what becomes of it if the writer is dropped
/// unfinished.
#[derive(Debug)]
struct TempGuard {
    /// Its name; for [`TempKind::Unnamed`] the `/proc/self/fd/<n>` link to
    /// the open file, valid while the writer holds it.
    path: PathBuf,
    kind: TempKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TempKind {
    /// `<etag>.incomplete` under the blob lock: kept for a later run to resume.
    Shared,
    /// `.kernels-<pid>-<8hex>.tmp`: removed on drop.
    Private,
    /// An `O_TMPFILE` inode with no name: gone when its descriptor closes.
    Unnamed,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if self.kind == TempKind::Private {
            let _ = fs_err::remove_file(&self.path);
        }
    }
}

impl BlobWriter {
    /// Bytes already present (from an earlier run) before any write.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// A write error; a full disk becomes [`CacheError::DiskFull`] with the
    /// figures (the partial data stays, so a later run resumes it).
    fn io_error(&self, err: std::io::Error) -> CacheError {
        if super::fsx::is_disk_full(&err) {
            let dir = self.blob.parent().unwrap_or(&self.blob).to_owned();
            return CacheError::DiskFull {
                available: super::fsx::free_space(&dir),
                needed: self.expected.size - self.hasher.len(),
                dir,
            };
        }
        err.into()
    }

    /// Hashes the rest of the content on a thread of its own, so that
    /// receiving and writing go on while it hashes (worth it for a large blob
    /// on a machine with cores to spare; on two cores the thread competes
    /// with the receiving one). Bytes already present stay hashed; memory is
    /// bounded (at most four 256 KiB batches) whatever the blob's size. Stays inline
    /// when no thread can be started.
    pub fn hash_in_background(&mut self) {
        self.hasher.hash_in_background();
    }

    /// Bytes present now.
    pub fn written(&self) -> u64 {
        self.hasher.len()
    }

    /// The expected blob.
    pub fn expected(&self) -> &BlobId {
        &self.expected
    }

    /// The file the content is being written to, complete once every byte
    /// is written: a caller with a rule of its own (a digest the blob's name
    /// does not carry) reads it there before [`BlobWriter::finish`].
    pub fn partial_path(&self) -> &Path {
        &self.partial.path
    }

    /// Drops the written data and its `.incomplete` file, for content a
    /// caller refuses (resuming it would not help); the blob stays absent.
    pub fn discard(self) -> Result<(), CacheError> {
        let BlobWriter { file, partial, .. } = self;
        drop(file);
        if partial.kind == TempKind::Unnamed {
            return Ok(());
        }
        match fs_err::remove_file(&partial.path) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err.into()),
            _ => Ok(()),
        }
    }

    /// Drops any partial data and starts again from byte 0 (for a server that
    /// answered a `Range` request with the whole body, or a failed verification).
    pub fn restart(&mut self) -> Result<(), CacheError> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        let background = matches!(self.hasher, StreamHasher::Background(_));
        self.hasher = StreamHasher::Inline(Hasher::new(self.expected.kind(), self.expected.size));
        if background {
            self.hasher.hash_in_background();
        }
        self.offset = 0;
        Ok(())
    }

    /// Appends a chunk. Fails once more bytes arrive than the expected size, so a
    /// misbehaving server cannot fill the disk.
    pub fn write(&mut self, chunk: &[u8], repo_path: &str) -> Result<(), CacheError> {
        let total = self.hasher.len() + chunk.len() as u64;
        if total > self.expected.size {
            // The data is wrong; keep nothing a later run would resume from.
            self.restart()?;
            return Err(CacheError::Mismatch {
                path: repo_path.to_owned(),
                kind: self.expected.kind(),
                expected: self.expected.etag(),
                actual: "(not computed: body too long)".to_owned(),
                expected_size: self.expected.size,
                actual_size: total,
            });
        }
        if let Err(err) = self.file.write_all(chunk) {
            return Err(self.io_error(err));
        }
        self.hasher.update(chunk);
        Ok(())
    }

    /// Verifies size and digest; on success fsyncs the data (a blob of more
    /// than [`UNLOCKED_MAX`] bytes, or any off Linux) and gives the file its
    /// name `blobs/<etag>`. Neither the directory nor a small blob's data is
    /// synced here: the next link into a snapshot of this repository syncs
    /// them first ([`RepoCache::place`]: one directory `fsync`, or one
    /// `syncfs` when small blobs are pending, for the whole batch), so no
    /// link is ever durable before its blob. On a mismatch the `.incomplete` file is
    /// deleted (its content is wrong, resuming it would not help) and
    /// [`CacheError::Mismatch`] names `repo_path`, both digests and sizes.
    pub fn finish(self, repo_path: &str) -> Result<(), CacheError> {
        let BlobWriter {
            file,
            partial,
            blob,
            expected,
            hasher,
            repo,
            ..
        } = self;
        let actual_size = hasher.len();
        let actual = hasher.finish();
        if actual_size != expected.size || actual != Some(expected.digest) {
            drop(file);
            if partial.kind != TempKind::Unnamed {
                let _ = fs_err::remove_file(&partial.path);
            }
            return Err(CacheError::Mismatch {
                path: repo_path.to_owned(),
                kind: expected.kind(),
                expected: expected.etag(),
                actual: actual.map_or_else(
                    || "(not computed: the hashing thread failed)".to_owned(),
                    |digest| digest.to_string(),
                ),
                expected_size: expected.size,
                actual_size,
            });
        }
        // A small blob's data is synced with its batch, before any link to it
        // ([`RepoCache::place`]'s one `syncfs`); a larger one's here.
        let batched = cfg!(target_os = "linux") && expected.size <= UNLOCKED_MAX;
        if !batched {
            file.sync_all()?;
        }
        if partial.kind == TempKind::Unnamed {
            super::fsx::name_unnamed(&partial.path, &blob)?;
        } else {
            drop(file);
            fs_err::rename(&partial.path, &blob)?;
        }
        repo.renamed_blob(match batched {
            true => Unsynced::Data,
            false => Unsynced::Names,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HubCache;
    use kernels_types::RepoType;

    fn digest(content: &[u8]) -> BlobId {
        let mut h = Hasher::new(DigestKind::Sha256, content.len() as u64);
        h.update(content);
        BlobId {
            digest: h.finish(),
            size: content.len() as u64,
        }
    }

    fn repo(root: &std::path::Path) -> RepoCache {
        HubCache::new(root).repo(&"acme/relu".parse().unwrap(), RepoType::Kernel)
    }

    #[test]
    fn writes_verifies_and_renames() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let d = digest(b"hello world");
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("blob should be missing")
        };
        assert_eq!(w.offset(), 0);
        w.write(b"hello ", "f").unwrap();
        w.write(b"world", "f").unwrap();
        w.finish("f").unwrap();
        assert!(!repo.incomplete_path(&d.etag()).exists());
        assert_eq!(
            fs_err::read(repo.blob_path(&d.etag())).unwrap(),
            b"hello world"
        );
        assert!(matches!(repo.open_blob(&d).unwrap(), PartialBlob::Complete));
        // A small blob takes no lock: no `.locks/` file, no temporary name left.
        assert!(!repo.lock_path(&d.etag()).exists());
        let names: Vec<_> = fs_err::read_dir(repo.blobs_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(d.etag())]);
    }

    /// A writer, hashing on a thread of its own when `background`.
    fn open_missing(repo: &RepoCache, d: &BlobId, background: bool) -> Box<BlobWriter> {
        let PartialBlob::Missing(mut w) = repo.open_blob(d).unwrap() else {
            panic!("blob should be missing")
        };
        if background {
            w.hash_in_background();
        }
        w
    }

    #[test]
    fn a_large_blob_is_locked_and_resumable() {
        for background in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let repo = repo(dir.path());
            let content: Vec<u8> = (0..4 * 1024 * 1024 + 4097)
                .map(|i| (i % 253) as u8)
                .collect();
            let d = digest(&content);
            let mut w = open_missing(&repo, &d, background);
            assert!(repo.lock_path(&d.etag()).exists());
            assert_eq!(w.partial_path(), repo.incomplete_path(&d.etag()));
            let (head, tail) = content.split_at(3 * 1024 * 1024);
            for chunk in head.chunks(16 * 1024) {
                w.write(chunk, "f").unwrap();
            }
            assert_eq!(
                fs_err::metadata(w.partial_path()).unwrap().len(),
                head.len() as u64
            );
            drop(w);
            // The shared `.incomplete` name stays for the next run to resume.
            let mut w = open_missing(&repo, &d, background);
            assert_eq!(w.offset(), head.len() as u64);
            for chunk in tail.chunks(10_000) {
                w.write(chunk, "f").unwrap();
            }
            w.finish("f").unwrap();
            assert_eq!(fs_err::read(repo.blob_path(&d.etag())).unwrap(), content);
        }
    }

    #[test]
    fn a_blob_that_differs_is_refused_and_removed() {
        for background in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let repo = repo(dir.path());
            let content = vec![7u8; 4 * 1024 * 1024];
            let d = digest(&content);
            let mut w = open_missing(&repo, &d, background);
            let mut wrong = content.clone();
            wrong[5] = 8;
            w.write(&wrong, "f").unwrap();
            assert!(matches!(w.finish("f"), Err(CacheError::Mismatch { .. })));
            assert!(!repo.blob_path(&d.etag()).exists());
            assert!(!repo.incomplete_path(&d.etag()).exists());
            // After a restart the writer hashes the new bytes the same way.
            let mut w = open_missing(&repo, &d, background);
            w.write(&wrong, "f").unwrap();
            w.restart().unwrap();
            w.write(&content, "f").unwrap();
            w.finish("f").unwrap();
            assert_eq!(fs_err::read(repo.blob_path(&d.etag())).unwrap(), content);
        }
    }

    #[test]
    fn resumes_partial_data_and_rejects_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        // Larger than UNLOCKED_MAX: locked, with a resumable `.incomplete`.
        let good: Vec<u8> = (0..UNLOCKED_MAX + 11).map(|i| (i % 249) as u8).collect();
        let mut bad = good.clone();
        bad[7] ^= 1;
        let d = digest(&good);
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        fs_err::write(repo.incomplete_path(&d.etag()), &good[..5]).unwrap();
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("blob should be missing")
        };
        assert_eq!(w.offset(), 5);
        w.write(&good[5..], "f").unwrap();
        w.finish("f").unwrap();

        // A corrupted blob is detected and replaced only by verified content.
        fs_err::write(repo.blob_path(&d.etag()), &bad).unwrap();
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("corrupted blob should be refetched")
        };
        w.write(&bad, "f").unwrap();
        let err = w.finish("build/x/f.so").unwrap_err().to_string();
        assert!(
            err.contains("build/x/f.so") && err.contains(&d.etag()),
            "{err}"
        );
        assert!(!repo.incomplete_path(&d.etag()).exists());
        assert!(repo.blob_path(&d.etag()).exists(), "links must not dangle");
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("corrupted blob should be refetched")
        };
        w.write(&good, "f").unwrap();
        w.finish("f").unwrap();
        assert_eq!(fs_err::read(repo.blob_path(&d.etag())).unwrap(), good);
    }

    fn blob_names(repo: &RepoCache) -> Vec<String> {
        let mut names: Vec<_> = fs_err::read_dir(repo.blobs_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_small_writer_that_never_finishes_leaves_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let d = digest(b"hello world");
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("blob should be missing")
        };
        w.write(b"hello", "f").unwrap();
        // What a SIGKILL does: no destructor runs.
        std::mem::forget(w);
        assert_eq!(blob_names(&repo), Vec::<String>::new());
    }

    #[test]
    fn a_small_blob_replaces_a_corrupted_one() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let d = digest(b"hello world");
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        fs_err::write(repo.blob_path(&d.etag()), b"hello WORLD").unwrap();
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("corrupted blob should be refetched")
        };
        // Readable at its path before it has a name (a caller's own check).
        w.write(b"hello world", "f").unwrap();
        assert_eq!(fs_err::read(w.partial_path()).unwrap(), b"hello world");
        w.finish("f").unwrap();
        assert_eq!(
            fs_err::read(repo.blob_path(&d.etag())).unwrap(),
            b"hello world"
        );
        assert_eq!(blob_names(&repo), [d.etag()]);
    }

    #[test]
    fn a_small_blob_ignores_a_shared_incomplete_file() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let d = digest(b"hello world");
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        // Another process may be writing the shared name under its lock.
        fs_err::write(repo.incomplete_path(&d.etag()), b"hel").unwrap();
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("blob should be missing")
        };
        assert_eq!(w.offset(), 0);
        assert_ne!(w.partial_path(), repo.incomplete_path(&d.etag()));
        w.write(b"hello world", "f").unwrap();
        w.finish("f").unwrap();
        assert_eq!(
            fs_err::read(repo.incomplete_path(&d.etag())).unwrap(),
            b"hel"
        );
    }

    #[test]
    fn too_long_body_fails_early() {
        let dir = tempfile::tempdir().unwrap();
        let repo = repo(dir.path());
        let d = digest(b"abc");
        let PartialBlob::Missing(mut w) = repo.open_blob(&d).unwrap() else {
            panic!("blob should be missing")
        };
        assert!(w.write(b"abcd", "f").is_err());
    }
}
