//! Progress reporting on stderr: indicatif bars on a terminal (per file and
//! overall: bytes, rate, ETA), one plain line per finished kernel otherwise,
//! nothing when quiet. Without colour (`NO_COLOR`) the bars carry no style codes.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::install::{FileReporter, KernelReport, Reporter, plan};
use crate::variant::VariantWarning;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Bars per file plus an overall bar (stderr is a terminal).
    Bars,
    /// One line per finished kernel.
    Lines,
    /// Nothing.
    Quiet,
}

impl ProgressMode {
    /// Bars when stderr is a terminal, lines otherwise; quiet wins.
    pub fn detect(quiet: bool) -> ProgressMode {
        use std::io::IsTerminal;
        if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bars
        } else {
            ProgressMode::Lines
        }
    }
}

/// Shared progress state of one `download` run.
#[derive(Debug, Clone)]
pub struct Progress {
    mode: ProgressMode,
    multi: MultiProgress,
    overall: ProgressBar,
    color: bool,
}

/// The bar of one file being fetched (a no-op outside [`ProgressMode::Bars`]).
/// Bytes it added to the overall bar are taken back if it is dropped before
/// [`FileBar::done`] (the fetch failed and will be retried or reported).
#[derive(Debug)]
pub struct FileBar {
    bar: Option<ProgressBar>,
    overall: ProgressBar,
    counted: u64,
    done: bool,
}

impl Progress {
    /// Progress in `mode`, styled with colours when `color` (see
    /// [`crate::cli::settings::color_enabled`]); the overall bar starts at zero bytes.
    pub fn new(mode: ProgressMode, color: bool) -> Progress {
        let multi = MultiProgress::with_draw_target(match mode {
            ProgressMode::Bars => ProgressDrawTarget::stderr(),
            _ => ProgressDrawTarget::hidden(),
        });
        let overall = multi.add(ProgressBar::new(0));
        overall.set_style(style(OVERALL_TEMPLATE, color));
        overall.set_prefix("Downloading");
        Progress {
            mode,
            multi,
            overall,
            color,
        }
    }

    /// Adds `bytes` to the overall total (called once per planned kernel).
    pub fn add_total(&self, bytes: u64) {
        self.overall.inc_length(bytes);
    }

    /// Counts bytes that were already in the cache.
    pub fn cached(&self, bytes: u64) {
        self.overall.inc(bytes);
    }

    /// A bar for one file fetch of `size` bytes.
    pub fn file(&self, name: &str, size: u64) -> FileBar {
        let bar = (self.mode == ProgressMode::Bars).then(|| {
            let bar = self.multi.add(ProgressBar::new(size));
            bar.set_style(style(FILE_TEMPLATE, self.color));
            bar.set_message(name.to_owned());
            bar
        });
        FileBar {
            bar,
            overall: self.overall.clone(),
            counted: 0,
            done: false,
        }
    }

    /// Prints a status line (above the bars on a terminal; plain otherwise).
    pub fn line(&self, message: &str) {
        match self.mode {
            ProgressMode::Quiet => {}
            ProgressMode::Bars => self.multi.suspend(|| eprintln!("{message}")),
            ProgressMode::Lines => eprintln!("{message}"),
        }
    }

    /// Removes the overall bar.
    pub fn finish(&self) {
        self.overall.finish_and_clear();
    }
}

impl FileBar {
    /// `n` more bytes are present (received, or kept from an earlier run).
    pub fn inc(&mut self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
        self.overall.inc(n);
        self.counted += n;
    }

    /// The file is complete and verified.
    pub fn done(&mut self) {
        self.done = true;
    }
}

impl Reporter for Progress {
    fn add_total(&self, bytes: u64) {
        Progress::add_total(self, bytes);
    }

    fn cached(&self, bytes: u64) {
        Progress::cached(self, bytes);
    }

    fn file(&self, path: &str, size: u64) -> Box<dyn FileReporter> {
        Box::new(Progress::file(self, path, size))
    }

    fn kernel_done(&self, report: &KernelReport) {
        self.line(&status_line(report));
    }

    fn finish(&self) {
        Progress::finish(self);
    }

    fn warning(&self, warning: &VariantWarning) {
        self.line(&format!("warning: {warning}"));
    }
}

impl FileReporter for FileBar {
    fn inc(&mut self, n: u64) {
        FileBar::inc(self, n);
    }

    fn done(&mut self) {
        FileBar::done(self);
    }
}

/// `Downloaded owner/name@abcdef1: 2 variants, 7 files, 3.0 MiB (1.2 MiB fetched)`.
pub fn status_line(report: &KernelReport) -> String {
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("{n} {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    format!(
        "Downloaded {}: {}, {}, {} ({} fetched)",
        plan::label(&report.repo_id, &report.commit),
        plural(report.variants.len(), "variant"),
        plural(report.files, "file"),
        human_bytes(report.bytes),
        human_bytes(report.fetched_bytes),
    )
}

impl Drop for FileBar {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if !self.done {
            let pos = self.overall.position();
            self.overall.set_position(pos.saturating_sub(self.counted));
        }
    }
}

/// The overall bar: total bytes, rate and ETA over all files.
const OVERALL_TEMPLATE: &str = "{prefix:>12.bold.green} [{bar:30.cyan}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, ETA {eta})";

/// One bar per file being fetched: bytes, rate and ETA.
const FILE_TEMPLATE: &str = "{msg:40!} [{bar:20.cyan}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}";

/// `template` as is, or with every `.style` suffix of its `{key:…}` fields
/// removed when colours are off.
fn template(template: &str, color: bool) -> String {
    if color {
        return template.to_owned();
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map_or(rest.len(), |i| open + i);
        out.push_str(&rest[..open]);
        let field = &rest[open..close];
        match field.split_once(':') {
            Some((key, spec)) => {
                let spec = spec.split('.').next().unwrap_or_default();
                out.push_str(key);
                out.push(':');
                out.push_str(spec);
            }
            None => out.push_str(field),
        }
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

fn style(raw: &str, color: bool) -> ProgressStyle {
    ProgressStyle::with_template(&template(raw, color))
        .expect("valid static template")
        .progress_chars("=> ")
}

/// `1234567` → `1.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    indicatif::BinaryBytes(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_bytes_are_human() {
        for color in [true, false] {
            let _ = (style(OVERALL_TEMPLATE, color), style(FILE_TEMPLATE, color));
        }
        assert_eq!(
            template(OVERALL_TEMPLATE, false),
            "{prefix:>12} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, ETA {eta})"
        );
        assert!(template(FILE_TEMPLATE, false).contains("{msg:40!} [{bar:20}]"));
        assert_eq!(human_bytes(1536), "1.50 KiB");
        let progress = Progress::new(ProgressMode::Quiet, false);
        progress.add_total(10);
        let mut bar = progress.file("f", 10);
        bar.inc(4);
        assert_eq!(progress.overall.position(), 4);
        drop(bar);
        assert_eq!(
            progress.overall.position(),
            0,
            "a failed fetch gives its bytes back"
        );
    }
}
