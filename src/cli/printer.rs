//! Where the command line's output goes, decided once from the arguments
//! (uv's `printer.rs` is the model).
//!
//! [`main`](super::main) builds one [`Printer`] from `--quiet`, `-v`,
//! `--no-progress` / `HF_HUB_DISABLE_PROGRESS_BARS` and `NO_COLOR`, and every
//! command receives it. Nothing in `cli/` prints any other way:
//!
//! - [`Printer::data`] and [`Printer::data_raw`]: the command's result on
//!   stdout (paths, tables, JSON documents), printed even with `--quiet`;
//! - [`Printer::status`]: status lines, warnings and notes on stderr, none with
//!   `--quiet` (or while a JSON document owns the output, see
//!   [`Printer::quiet_if`]);
//! - [`Printer::error`]: error reports on stderr, always.
//!
//! Lines on stderr are printed above the progress bars being drawn, if any
//! ([`Printer::draw`] registers them), never through them.

// The one place the print macros are allowed (clippy.toml bans them elsewhere).
#![allow(clippy::disallowed_macros)]

use std::fmt::Display;
use std::io::Write;
use std::sync::{Arc, Mutex};

use indicatif::MultiProgress;
use kernels_types::text::escape_lines;

use super::progress::ProgressMode;

/// The output settings of one run, and the bars drawn now. Cheap to clone: the
/// clones share the slot of the bars being drawn.
#[derive(Debug, Clone)]
pub struct Printer {
    /// `--quiet` (or a JSON document on stdout): no status lines.
    quiet: bool,
    /// How many `-v` were given.
    verbosity: u8,
    /// Colours allowed (`NO_COLOR` unset).
    color: bool,
    /// Progress bars allowed on a terminal (no `--no-progress` and no true
    /// `HF_HUB_DISABLE_PROGRESS_BARS`).
    bars: bool,
    /// The bars being drawn now, if any: stderr lines suspend them.
    active: Arc<Mutex<Option<MultiProgress>>>,
}

/// What a [`Printer`] is built from (the global arguments and the environment).
#[derive(Debug, Clone, Copy, Default)]
pub struct PrinterOptions {
    /// `--quiet`.
    pub quiet: bool,
    /// The `-v` count.
    pub verbosity: u8,
    /// Colours allowed (`NO_COLOR` unset).
    pub color: bool,
    /// `--no-progress` or a true `HF_HUB_DISABLE_PROGRESS_BARS`.
    pub no_progress: bool,
}

impl Printer {
    /// The printer of one run.
    pub fn new(options: PrinterOptions) -> Printer {
        Printer {
            quiet: options.quiet,
            verbosity: options.verbosity,
            color: options.color,
            bars: !options.no_progress,
            active: Arc::new(Mutex::new(None)),
        }
    }

    /// The same printer, quiet as well when `quiet` (a command whose JSON
    /// document on stdout replaces its status lines).
    pub fn quiet_if(&self, quiet: bool) -> Printer {
        Printer {
            quiet: self.quiet || quiet,
            ..self.clone()
        }
    }

    /// Whether status lines are suppressed.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// How many `-v` were given.
    pub fn verbosity(&self) -> u8 {
        self.verbosity
    }

    /// Whether at least one `-v` was given.
    pub fn is_verbose(&self) -> bool {
        self.verbosity > 0
    }

    /// Whether colours are allowed (`NO_COLOR` unset).
    pub fn color(&self) -> bool {
        self.color
    }

    /// How progress is shown: nothing when quiet, bars when stderr is a
    /// terminal and bars are allowed, plain lines otherwise.
    pub fn progress_mode(&self) -> ProgressMode {
        use std::io::IsTerminal;
        if self.quiet {
            ProgressMode::Quiet
        } else if self.bars && std::io::stderr().is_terminal() {
            ProgressMode::Bars
        } else {
            ProgressMode::Lines
        }
    }

    /// Plain status lines, or nothing when quiet (for steps that never draw bars).
    pub fn lines_mode(&self) -> ProgressMode {
        if self.quiet {
            ProgressMode::Quiet
        } else {
            ProgressMode::Lines
        }
    }

    /// `text` and a newline on stdout, even when quiet. Control characters
    /// other than line feeds and tabs are shown escaped
    /// ([`kernels_types::text::escape_lines`]): names from the cache or a
    /// server never act on the terminal.
    pub fn data(&self, text: impl Display) {
        let text = text.to_string();
        let mut stdout = std::io::stdout().lock();
        written(writeln!(stdout, "{}", escape_lines(&text)), "stdout");
    }

    /// `text` and a newline on stdout, flushed, even when quiet; a closed
    /// stdout is ignored (a server keeps serving when its reader goes away).
    pub fn data_lenient(&self, text: impl Display) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }

    /// `text` as it is on stdout, even when quiet.
    pub fn data_raw(&self, text: impl Display) {
        let mut stdout = std::io::stdout().lock();
        written(write!(stdout, "{text}"), "stdout");
    }

    /// `line` and a newline on stderr unless quiet, above the bars; escaped
    /// as [`Printer::data`] escapes.
    pub fn status(&self, line: impl Display) {
        if !self.quiet {
            self.error(escape_lines(&line.to_string()));
        }
    }

    /// `text` as it is on stderr unless quiet, above the bars.
    pub fn status_raw(&self, text: impl Display) {
        if !self.quiet {
            self.stderr_text(&text.to_string());
        }
    }

    /// `line` and a newline on stderr, even when quiet (errors), above the bars.
    pub fn error(&self, line: impl Display) {
        self.stderr_text(&format!("{line}\n"));
    }

    /// `line` and a newline on stderr, even when quiet, above `multi` (bars
    /// that are drawn whether or not they are registered with [`Printer::draw`]).
    pub fn error_above(&self, multi: &MultiProgress, line: impl Display) {
        multi.suspend(|| written(writeln!(std::io::stderr(), "{line}"), "stderr"));
    }

    /// Writes `text` on stderr, suspending the bars drawn now, if any.
    fn stderr_text(&self, text: &str) {
        let write = || written(std::io::stderr().write_all(text.as_bytes()), "stderr");
        match self.drawn() {
            Some(multi) => multi.suspend(write),
            None => write(),
        }
    }

    /// The bars drawn now, if any.
    fn drawn(&self) -> Option<MultiProgress> {
        self.active.lock().ok().and_then(|active| active.clone())
    }

    /// `multi` is drawn from now on: stderr lines go above it.
    pub fn draw(&self, multi: &MultiProgress) {
        if let Ok(mut active) = self.active.lock() {
            *active = Some(multi.clone());
        }
    }

    /// No bars are drawn any more.
    pub fn undraw(&self) {
        if let Ok(mut active) = self.active.lock() {
            *active = None;
        }
    }

    /// The `tracing` writer of `-v`: log lines above the bars.
    pub fn log_writer(&self) -> LogWriter {
        LogWriter {
            printer: self.clone(),
        }
    }

    /// How the Hub client's events ("rate limited by the Hub, waiting N s")
    /// are shown: one line on stderr per event, even when quiet.
    pub fn hub_events(&self) -> kernels_hub::EventSink {
        let printer = self.clone();
        kernels_hub::EventSink::new(move |event| printer.error(event))
    }
}

/// A `tracing` writer that prints above the bars being drawn (log lines of
/// `-v` would otherwise be drawn through them and lost).
#[derive(Debug, Clone)]
pub struct LogWriter {
    printer: Printer,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let write = || std::io::stderr().write_all(buf);
        match self.printer.drawn() {
            Some(multi) => multi.suspend(write)?,
            None => write()?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// The outcome of a write to `stream`: a reader that went away (`kernels … |
/// head`) ends the process quietly with exit code 1, as command-line tools do on
/// a closed pipe (files already in the cache stay valid: every blob is renamed
/// into place only once verified); any other failure to print is a bug-level
/// failure, as it is for `println!`.
fn written(result: std::io::Result<()>, stream: &str) {
    match result {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(1),
        Err(err) => panic!("failed printing to {stream}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_decides_the_progress_mode_and_sticks() {
        let printer = Printer::new(PrinterOptions {
            verbosity: 2,
            ..PrinterOptions::default()
        });
        assert!(!printer.is_quiet() && printer.is_verbose());
        assert_eq!(printer.lines_mode(), ProgressMode::Lines);
        let json = printer.quiet_if(true);
        assert!(json.is_quiet());
        assert_eq!(json.progress_mode(), ProgressMode::Quiet);
        assert!(json.quiet_if(false).is_quiet(), "quiet is never undone");
        assert_eq!(json.verbosity(), 2);
    }
}
