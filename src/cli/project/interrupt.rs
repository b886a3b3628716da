//! Putting files back when a command that edited them is interrupted:
//! `kernels add` and `kernels remove` write `pyproject.toml`, then lock; Ctrl-C
//! (SIGINT) or SIGTERM while they lock restores `pyproject.toml` and
//! `kernels.lock` as a failed lock does, then exits as the shell expects of a
//! process ended by that signal (130 for SIGINT, 143 for SIGTERM).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::cli::printer::Printer;

/// A file as it was before the command: its bytes, or `None` when it did not
/// exist (it is removed again).
#[derive(Debug, Clone)]
pub struct Saved {
    /// The file.
    pub path: PathBuf,
    /// Its bytes before the command.
    pub bytes: Option<Vec<u8>>,
}

impl Saved {
    /// `path` as it is now.
    pub fn read(path: PathBuf) -> Saved {
        let bytes = fs_err::read(&path).ok();
        Saved { path, bytes }
    }

    /// Puts the file back, if it changed; whether it is as it was.
    pub fn restore(&self) -> bool {
        let now = fs_err::read(&self.path).ok();
        if now == self.bytes {
            return true;
        }
        match &self.bytes {
            Some(bytes) => kernels_cache::atomic::write_atomic(&self.path, bytes).is_ok(),
            None => fs_err::remove_file(&self.path).is_ok(),
        }
    }
}

/// While alive, SIGINT or SIGTERM puts the saved files back, prints `message`
/// as a status line and ends the process (exit 130 or 143). Once dropped (the
/// command finished, or restored the files itself), a signal only ends the
/// process.
pub struct RestoreOnSignal {
    saved: Arc<Mutex<Option<Vec<Saved>>>>,
}

impl RestoreOnSignal {
    /// Listens for the signals on a thread of its own (the handlers are in
    /// place when this returns) and arms the restore of `saved` until the guard is dropped.
    ///
    /// # Errors
    /// The handlers cannot be installed (no signal support).
    pub fn arm(
        saved: Vec<Saved>,
        message: String,
        printer: &Printer,
    ) -> std::io::Result<RestoreOnSignal> {
        let printer = printer.clone();
        let shared = Arc::new(Mutex::new(Some(saved)));
        let slot = Arc::clone(&shared);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let signals = runtime.block_on(async { Signals::install() })?;
        std::thread::spawn(move || {
            let code = runtime.block_on(signals.next());
            // Held while restoring, so `disarm` waits for it.
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(saved) = slot.take()
                && saved.iter().map(Saved::restore).fold(true, |a, b| a & b)
            {
                printer.status(&message);
            }
            std::process::exit(code);
        });
        Ok(RestoreOnSignal { saved: shared })
    }
}

impl Drop for RestoreOnSignal {
    fn drop(&mut self) {
        self.saved.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// The signals listened for.
#[cfg(unix)]
struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// Waits for one; the exit code for it (128 + the signal number).
    async fn next(mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => 130,
            _ = self.terminate.recv() => 143,
        }
    }
}

/// The signals listened for: Ctrl-C.
#[cfg(not(unix))]
struct Signals {
    ctrl_c: tokio::signal::windows::CtrlC,
}

#[cfg(not(unix))]
impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            ctrl_c: tokio::signal::windows::ctrl_c()?,
        })
    }

    /// Waits for Ctrl-C; the exit code for it.
    async fn next(mut self) -> i32 {
        self.ctrl_c.recv().await;
        130
    }
}
