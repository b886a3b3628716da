//! The digest of a blob being written: computed on the writing thread, or on
//! a thread of its own so that receiving, writing and hashing a large file
//! overlap on a machine with cores to spare.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;

use kernels_types::{Digest, Hasher};

/// Bytes handed to the hashing thread at a time (256 KiB, some 150 µs of
/// SHA-256 with SHA-NI): few enough hand-offs that waking the thread costs
/// little next to hashing the batch.
const BATCH: usize = 256 * 1024;

/// Batches queued for the hashing thread before the writer waits for it; with
/// the one being hashed and the one being filled, at most `QUEUED + 2`
/// batches (1 MiB) are held per blob, whatever the blob's size, so a download
/// of `--concurrency 8` holds at most 8 MiB of them (it held up to 48 MiB
/// with 1 MiB batches and 4 queued: issue 46, item 4).
const QUEUED: usize = 2;

/// An incremental digest of the bytes written so far.
pub(crate) enum StreamHasher {
    /// Hashed by the caller of [`StreamHasher::update`].
    Inline(Hasher),
    /// Hashed on a thread of its own ([`StreamHasher::hash_in_background`]).
    Background(Background),
}

pub(crate) struct Background {
    /// Bytes fed so far, hashed or queued.
    len: u64,
    /// The batch being filled.
    batch: Vec<u8>,
    /// Full batches to the thread; `None` once closed.
    full: Option<SyncSender<Vec<u8>>>,
    /// Hashed batches back from the thread, to be filled again.
    spent: Receiver<Vec<u8>>,
    /// The hashing thread: the hasher back once `full` is closed.
    thread: Option<JoinHandle<Hasher>>,
}

impl std::fmt::Debug for StreamHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamHasher::Inline(_) => write!(f, "Hasher({} bytes)", self.len()),
            StreamHasher::Background(_) => write!(f, "Hasher({} bytes, background)", self.len()),
        }
    }
}

impl StreamHasher {
    /// Bytes fed so far.
    pub(crate) fn len(&self) -> u64 {
        match self {
            StreamHasher::Inline(hasher) => hasher.len(),
            StreamHasher::Background(background) => background.len,
        }
    }

    /// Moves the hashing to a thread of its own, keeping what was fed. Stays
    /// inline when no thread can be started (or it already runs on one).
    pub(crate) fn hash_in_background(&mut self) {
        let StreamHasher::Inline(hasher) = self else {
            return;
        };
        let len = hasher.len();
        let mut moved = hasher.clone();
        let (full, batches) = sync_channel::<Vec<u8>>(QUEUED);
        let (give_back, spent) = sync_channel::<Vec<u8>>(QUEUED + 2);
        let spawned = std::thread::Builder::new()
            .name("kernels-hash".to_owned())
            .spawn(move || {
                for batch in batches {
                    moved.update(&batch);
                    let _ = give_back.try_send(batch);
                }
                moved
            });
        if let Ok(thread) = spawned {
            *self = StreamHasher::Background(Background {
                len,
                batch: Vec::with_capacity(BATCH),
                full: Some(full),
                spent,
                thread: Some(thread),
            });
        }
    }

    /// Feeds written bytes. In the background, waits only while
    /// [`QUEUED`] batches are already waiting to be hashed.
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        let background = match self {
            StreamHasher::Inline(hasher) => return hasher.update(bytes),
            StreamHasher::Background(background) => background,
        };
        background.len += bytes.len() as u64;
        while !bytes.is_empty() {
            let room = BATCH - background.batch.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            background.batch.extend_from_slice(now);
            bytes = later;
            if background.batch.len() == BATCH {
                background.send();
            }
        }
    }

    /// The digest of everything fed (after the thread has hashed it all).
    /// `None` when the hashing thread panicked.
    pub(crate) fn finish(self) -> Option<Digest> {
        match self {
            StreamHasher::Inline(hasher) => Some(hasher.finish()),
            StreamHasher::Background(mut background) => {
                if !background.batch.is_empty() {
                    background.send();
                }
                background.full = None;
                let hasher = background.thread.take()?.join().ok()?;
                Some(hasher.finish())
            }
        }
    }
}

impl Background {
    /// Queues the filled batch and takes an empty one (a hashed batch when
    /// one is back, else a new allocation).
    fn send(&mut self) {
        let mut next = match self.spent.try_recv() {
            Ok(mut batch) => {
                batch.clear();
                batch
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => Vec::with_capacity(BATCH),
        };
        std::mem::swap(&mut next, &mut self.batch);
        if let Some(full) = &self.full {
            // A closed channel means the thread is gone; `finish` reports it.
            let _ = full.send(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::DigestKind;

    fn inline(kind: DigestKind, size: u64) -> StreamHasher {
        StreamHasher::Inline(Hasher::new(kind, size))
    }

    #[test]
    fn background_hashing_gives_the_inline_digest() {
        // Uneven writes across batch boundaries, after bytes fed inline (a
        // resumed `.incomplete` file).
        let content: Vec<u8> = (0..(3 * BATCH + 12_345))
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        for kind in [DigestKind::Sha256, DigestKind::GitBlobSha1] {
            let size = content.len() as u64;
            let mut expected = inline(kind, size);
            expected.update(&content);
            let mut hasher = inline(kind, size);
            hasher.update(&content[..1000]);
            hasher.hash_in_background();
            assert!(matches!(hasher, StreamHasher::Background(_)));
            for piece in content[1000..].chunks(BATCH / 3 + 17) {
                hasher.update(piece);
            }
            assert_eq!(hasher.len(), size);
            assert_eq!(hasher.finish(), expected.finish());
        }
    }

    #[test]
    fn an_empty_background_hash_is_the_digest_of_nothing() {
        let mut hasher = inline(DigestKind::Sha256, 0);
        hasher.hash_in_background();
        assert_eq!(hasher.finish(), inline(DigestKind::Sha256, 0).finish());
    }
}
