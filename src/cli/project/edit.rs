//! Editing `pyproject.toml`, then locking (`kernels add`, `kernels remove`,
//! `kernels lock --breaking`): when locking fails or is interrupted, both
//! `pyproject.toml` and `kernels.lock` are put back byte for byte.

use std::path::Path;
use std::process::ExitCode;

use kernels_cache::atomic::write_atomic;

use crate::cli::GlobalArgs;
use crate::cli::printer::Printer;
use crate::cli::project::interrupt::{RestoreOnSignal, Saved};

/// An edit of `pyproject.toml` by `kernels add`, `kernels remove` or
/// `kernels lock --breaking`.
pub struct Edit<'a> {
    /// The manifest's path.
    pub path: &'a Path,
    /// Its text before the edit.
    pub old_text: &'a str,
    /// Its text after the edit.
    pub new_text: &'a str,
    /// What the edit did, one status line each, printed once it is written.
    pub status: &'a [String],
}

/// Writes the edited manifest and runs `lock` (which locks the project,
/// writing `lock_path`); when it fails, or on Ctrl-C, puts `pyproject.toml`
/// and `kernels.lock` back as they were. Under `--frozen` only the manifest
/// is edited (as `uv add --frozen`).
pub fn edit_then_lock(
    edit: &Edit<'_>,
    lock_path: &Path,
    global: &GlobalArgs,
    printer: &Printer,
    lock: impl FnOnce() -> miette::Result<ExitCode>,
) -> miette::Result<ExitCode> {
    let &Edit {
        path,
        old_text,
        new_text,
        status,
    } = edit;
    let write = |bytes: &[u8], file: &Path| {
        write_atomic(file, bytes).map_err(|err| {
            miette::miette!(
                code = "kernels::add::write",
                help = "check that the project directory is writable",
                "cannot write {}: {err}",
                file.display()
            )
        })
    };
    let saved = [
        Saved {
            path: path.to_owned(),
            bytes: Some(old_text.as_bytes().to_vec()),
        },
        Saved::read(lock_path.to_owned()),
    ];
    let left_as_they_were = format!(
        "{} and {} were left as they were",
        path.display(),
        lock_path.display()
    );
    // Ctrl-C from here to the end of locking puts both back too.
    let guard = RestoreOnSignal::arm(
        saved.to_vec(),
        format!("Interrupted: {left_as_they_were}"),
        printer,
    )
    .map_err(|err| miette::miette!("cannot listen for Ctrl-C: {err}"))?;
    if new_text != old_text {
        write(new_text.as_bytes(), path)?;
    }
    for line in status {
        printer.status(line);
    }
    if global.frozen {
        printer.status("--frozen: kernels.lock was not updated; run `kernels lock` to update it");
        return Ok(ExitCode::SUCCESS);
    }
    let result = lock();
    drop(guard);
    let failed = !matches!(result, Ok(code) if code == ExitCode::SUCCESS);
    if failed && saved.iter().map(Saved::restore).fold(true, |a, b| a & b) {
        printer.status(format_args!("Locking failed: {left_as_they_were}"));
    }
    result
}
