//! A blob body written and hashed off the receive path: the receiving task
//! gathers bytes into pieces and hands them over a bounded channel to a
//! thread of the blob's own, which writes each piece to the `.incomplete`
//! file and feeds it to the hasher.
//!
//! Memory stays flat: at most [`DEPTH`] pieces wait in the channel, one is
//! being written and one filled, each of [`PIECE`] bytes, and emptied pieces
//! come back to be filled again (no allocation per piece). A receiver that
//! outruns the disk or the hash blocks on the full channel.

use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use kernels_types::Hasher;

/// Bytes handed over at a time.
pub(crate) const PIECE: usize = 256 * 1024;

/// Pieces that may wait for the writing thread.
pub(crate) const DEPTH: usize = 4;

/// What the writing thread hands back when the pipe is closed: the file
/// and hasher it was given, with every piece it took written and hashed up to
/// its first write error.
pub(crate) struct Drained {
    pub file: fs_err::File,
    pub hasher: Hasher,
    pub error: Option<std::io::Error>,
}

/// The receiving end's half of a pipe.
///
/// Dropped unclosed (a writer given up), it still waits for the thread.
pub(crate) struct Pipe {
    full: Option<SyncSender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
    piece: Vec<u8>,
    worker: Option<JoinHandle<Drained>>,
}

impl std::fmt::Debug for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pipe({} bytes pending)", self.piece.len())
    }
}

impl Pipe {
    /// Starts the writing thread over `file` (positioned where the next byte
    /// goes) and `hasher` (fed with every byte before it). Errors: the thread
    /// could not be started.
    pub(crate) fn start(file: fs_err::File, hasher: Hasher) -> std::io::Result<Pipe> {
        let (full, pieces) = sync_channel::<Vec<u8>>(DEPTH);
        let (emptied, empty) = sync_channel::<Vec<u8>>(DEPTH + 2);
        let worker = std::thread::Builder::new()
            .name("kernels-blob-write".to_owned())
            .spawn(move || write_pieces(file, hasher, &pieces, &emptied))?;
        Ok(Pipe {
            full: Some(full),
            empty,
            piece: Vec::with_capacity(PIECE),
            worker: Some(worker),
        })
    }

    /// Appends `bytes`, handing over each full piece. `Err(())` when the
    /// writing thread stopped (a write error, returned by [`Pipe::close`]).
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Result<(), ()> {
        while !bytes.is_empty() {
            let take = (PIECE - self.piece.len()).min(bytes.len());
            self.piece.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.piece.len() == PIECE {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    fn hand_over(&mut self) -> Result<(), ()> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(PIECE));
        let piece = std::mem::replace(&mut self.piece, next);
        match &self.full {
            Some(full) => full.send(piece).map_err(|_| ()),
            None => Err(()),
        }
    }

    /// Hands over what is pending, waits until everything is written and
    /// returns the file and hasher; `None` once closed already.
    pub(crate) fn close(&mut self) -> Option<Drained> {
        if !self.piece.is_empty() {
            let _ = self.hand_over();
        }
        self.full = None;
        let worker = self.worker.take()?;
        Some(
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        )
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        self.piece.clear();
        self.close();
    }
}

/// The writing thread: every piece written, then hashed, then sent back
/// empty; stops at the first write error or when the sender is gone.
fn write_pieces(
    mut file: fs_err::File,
    mut hasher: Hasher,
    pieces: &Receiver<Vec<u8>>,
    emptied: &SyncSender<Vec<u8>>,
) -> Drained {
    for mut piece in pieces {
        if let Err(error) = file.write_all(&piece) {
            return Drained {
                file,
                hasher,
                error: Some(error),
            };
        }
        hasher.update(&piece);
        piece.clear();
        let _ = emptied.try_send(piece);
    }
    Drained {
        file,
        hasher,
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::DigestKind;

    #[test]
    fn every_byte_is_written_and_hashed_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        let file = fs_err::File::create(&path).unwrap();
        let mut pipe = Pipe::start(file, Hasher::new(DigestKind::Sha256, 0)).unwrap();
        let data: Vec<u8> = (0..(3 * PIECE + 123)).map(|i| (i % 251) as u8).collect();
        for chunk in data.chunks(7_001) {
            pipe.push(chunk).unwrap();
        }
        let drained = pipe.close().unwrap();
        assert!(pipe.close().is_none());
        assert!(drained.error.is_none());
        let mut want = Hasher::new(DigestKind::Sha256, 0);
        want.update(&data);
        assert_eq!(drained.hasher.len(), data.len() as u64);
        assert_eq!(drained.hasher.finish(), want.finish());
        drop(drained.file);
        assert_eq!(fs_err::read(&path).unwrap(), data);
    }
}
