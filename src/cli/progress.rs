//! Progress on stderr, as uv draws it.
//!
//! On a terminal ([`ProgressMode::Bars`]): a spinner until the first kernel's
//! files are known, then one total bar (bytes, rate, ETA) and below it at most
//! [`MAX_FILE_BARS`] bars of files being fetched, labelled `owner/name: path`
//! and fitted to the terminal width; one line per finished kernel and every
//! log line (`-v`, through [`super::printer::LogWriter`]) is printed above the bars, never
//! through them. Elsewhere ([`ProgressMode::Lines`], also with `--no-progress`
//! or `HF_HUB_DISABLE_PROGRESS_BARS`): the same lines, no bar. Quiet: nothing.
//! Without colour (`NO_COLOR`) the bars carry no style codes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::printer::Printer;
use crate::install::{FileReporter, KernelReport, PlannedKernel, Reporter, plan};
use crate::variant::VariantWarning;
use kernels_hub::RetryNotice;
use kernels_types::repo_id::RepoId;

/// Files shown with their own bar at once; the others count in the total only.
pub const MAX_FILE_BARS: usize = 3;

/// Width assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// How progress is shown ([`Printer::progress_mode`] decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A total bar and a few file bars (stderr is a terminal).
    Bars,
    /// One line per finished kernel.
    Lines,
    /// Nothing.
    Quiet,
}

/// The terminal's width in columns.
fn terminal_width() -> usize {
    console::Term::stderr()
        .size_checked()
        .map_or(DEFAULT_WIDTH, |(_, cols)| usize::from(cols))
        .max(20)
}

/// A spinner with a message, drawn while it lives (on a terminal only), e.g.
/// while `kernels lock` resolves.
#[derive(Debug)]
pub struct Spinner {
    printer: Printer,
    bar: Option<ProgressBar>,
}

impl Spinner {
    /// Starts a spinner saying `message` when `mode` is [`ProgressMode::Bars`].
    pub fn start(printer: &Printer, mode: ProgressMode, message: &str) -> Spinner {
        let printer = printer.clone();
        if mode != ProgressMode::Bars {
            return Spinner { printer, bar: None };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let bar = multi.add(ProgressBar::new_spinner());
        bar.set_style(spinner_style(printer.color()));
        bar.set_message(fit(message, terminal_width().saturating_sub(3)));
        bar.enable_steady_tick(Duration::from_millis(100));
        printer.draw(&multi);
        Spinner {
            printer,
            bar: Some(bar),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            self.printer.undraw();
        }
    }
}

/// Shared progress state of one download run.
#[derive(Debug, Clone)]
pub struct Progress {
    printer: Printer,
    mode: ProgressMode,
    multi: MultiProgress,
    /// A spinner until the first kernel is planned, then the total bar.
    overall: ProgressBar,
    color: bool,
    width: usize,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    /// File bars drawn now.
    file_bars: usize,
    /// Whether the total bar has replaced the spinner.
    started: bool,
    /// Kernels of the run ([`Reporter::start`]), 0 when unknown.
    kernels: usize,
    started_at: Instant,
}

/// The bar of one file being fetched (a no-op unless it got one of the
/// [`MAX_FILE_BARS`] slots). Bytes it added to the total are taken back if it
/// is dropped before [`FileBar::done`] (the fetch failed and will be retried
/// or reported).
#[derive(Debug)]
pub struct FileBar {
    bar: Option<ProgressBar>,
    overall: ProgressBar,
    state: Arc<Mutex<State>>,
    counted: u64,
    done: bool,
}

impl Progress {
    /// Progress in `mode`, styled with colours when the printer allows them,
    /// as wide as the terminal.
    pub fn new(printer: &Printer, mode: ProgressMode) -> Progress {
        Progress::with_target(
            printer,
            mode,
            terminal_width(),
            ProgressDrawTarget::stderr(),
        )
    }

    /// Progress drawn to `target`, `width` columns wide (tests draw to memory).
    pub fn with_target(
        printer: &Printer,
        mode: ProgressMode,
        width: usize,
        target: ProgressDrawTarget,
    ) -> Progress {
        let color = printer.color();
        let multi = MultiProgress::with_draw_target(match mode {
            ProgressMode::Bars => target,
            _ => ProgressDrawTarget::hidden(),
        });
        let overall = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::hidden());
        let progress = Progress {
            printer: printer.clone(),
            mode,
            multi,
            overall,
            color,
            width,
            state: Arc::new(Mutex::new(State {
                file_bars: 0,
                started: false,
                kernels: 0,
                started_at: Instant::now(),
            })),
        };
        if mode == ProgressMode::Bars {
            printer.draw(&progress.multi);
        }
        progress
    }

    /// Time since this progress was created.
    pub fn elapsed(&self) -> Duration {
        self.state
            .lock()
            .map_or(Duration::ZERO, |s| s.started_at.elapsed())
    }

    /// A run over `kernels` kernels starts: the spinner says so.
    pub fn start(&self, kernels: usize) {
        if let Ok(mut state) = self.state.lock() {
            state.kernels = kernels;
        }
        if self.mode != ProgressMode::Bars || kernels == 0 {
            return;
        }
        let bar = self.multi.add(self.overall.clone());
        bar.set_style(spinner_style(self.color));
        bar.set_message(fit(
            &format!("Listing the files of {}", plural(kernels, "kernel")),
            self.width.saturating_sub(3),
        ));
        bar.enable_steady_tick(Duration::from_millis(100));
    }

    /// Adds `bytes` to the total; the first planned bytes turn the spinner into
    /// the total bar.
    pub fn add_total(&self, bytes: u64) {
        self.overall.inc_length(bytes);
        if self.mode != ProgressMode::Bars || bytes == 0 {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if !state.started {
            state.started = true;
            if state.kernels == 0 {
                // No `start` event: the bar was never added.
                self.multi.add(self.overall.clone());
            }
            self.overall.disable_steady_tick();
            self.overall
                .set_style(style(&overall_template(self.width), self.color));
            self.overall.set_prefix("Downloading");
            self.overall.set_message("");
        }
    }

    /// Counts bytes that were already in the cache.
    pub fn cached(&self, bytes: u64) {
        self.overall.inc(bytes);
    }

    /// A bar for one file fetch of `size` bytes of `repo_id`, when a slot is free.
    pub fn file(&self, repo_id: &RepoId, name: &str, size: u64) -> FileBar {
        let bar = (self.mode == ProgressMode::Bars)
            .then(|| {
                let mut state = self.state.lock().ok()?;
                if state.file_bars >= MAX_FILE_BARS {
                    return None;
                }
                state.file_bars += 1;
                let (template, label_width) = file_template(self.width);
                let bar = self.multi.add(ProgressBar::new(size));
                bar.set_style(style(&template, self.color));
                bar.set_message(fit_label(repo_id.as_str(), name, label_width));
                Some(bar)
            })
            .flatten();
        FileBar {
            bar,
            overall: self.overall.clone(),
            state: self.state.clone(),
            counted: 0,
            done: false,
        }
    }

    /// Prints a status line (above the bars on a terminal; plain otherwise).
    pub fn line(&self, message: &str) {
        match self.mode {
            ProgressMode::Quiet => {}
            ProgressMode::Bars => self.printer.error_above(&self.multi, message),
            // Above a spinner of another step, if one is drawn.
            ProgressMode::Lines => self.printer.error(message),
        }
    }

    /// Removes the bars.
    pub fn finish(&self) {
        self.overall.finish_and_clear();
        let _ = self.multi.clear();
        if self.mode == ProgressMode::Bars {
            self.printer.undraw();
        }
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

impl Drop for FileBar {
    fn drop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            if let Ok(mut state) = self.state.lock() {
                state.file_bars = state.file_bars.saturating_sub(1);
            }
        }
        if !self.done {
            let pos = self.overall.position();
            self.overall.set_position(pos.saturating_sub(self.counted));
        }
    }
}

impl Reporter for Progress {
    fn start(&self, kernels: usize) {
        Progress::start(self, kernels);
    }

    fn kernel_planned(&self, planned: &PlannedKernel) {
        Progress::add_total(self, planned.bytes);
    }

    fn cached(&self, bytes: u64) {
        Progress::cached(self, bytes);
    }

    fn file(&self, repo_id: &RepoId, path: &str, size: u64) -> Box<dyn FileReporter> {
        Box::new(Progress::file(self, repo_id, path, size))
    }

    fn retry(&self, retry: &RetryNotice) {
        self.line(&retry_line(
            retry.file.as_deref().unwrap_or(&retry.url),
            retry,
        ));
    }

    fn kernel_done(&self, report: &KernelReport) {
        // On a terminal the line fits its width; piped, it is whole.
        let version = report.version.as_deref();
        let width = match self.mode {
            ProgressMode::Bars => self.width.saturating_sub(1),
            // Plain lines (`--no-progress`) fit a terminal too; piped, whole.
            _ => line_width(),
        };
        let line = status_line_within(report, version, width);
        self.line(&line);
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

/// `warning: acme/relu: build/x.so: connection refused; retrying in 2 s (1/5)`,
/// where `what` names the file, or the endpoint of an API call.
pub fn retry_line(what: &str, retry: &RetryNotice) -> String {
    format!(
        "warning: {}: {}; retrying in {} ({}/{})",
        what,
        retry.reason,
        human_wait(retry.wait),
        retry.attempt,
        retry.max
    )
}

/// `2 s`, `0.5 s`.
fn human_wait(wait: Duration) -> String {
    let secs = wait.as_secs_f64();
    if secs >= 10.0 || secs.fract() == 0.0 {
        format!("{} s", secs.round())
    } else {
        format!("{secs:.1} s")
    }
}

/// `n word` or `n words`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The variants of a kernel line: their names when there are at most two,
/// else their number.
fn variants_text(variants: &[String]) -> String {
    match variants {
        [] => "no variant".to_owned(),
        [one] => one.clone(),
        [a, b] => format!("{a}, {b}"),
        many => plural(many.len(), "variant"),
    }
}

/// One line per finished kernel:
/// `Downloaded owner/name@abcdef1: torch-universal, 7 files, 3.00 MiB (1.20 MiB fetched)`;
/// `Cached owner/name@…: …` when nothing was fetched, no figure in parentheses when
/// everything was.
pub fn status_line(report: &KernelReport) -> String {
    status_line_within(report, report.version.as_deref(), usize::MAX)
}

/// Whether the run fetched nothing for the kernel, which was complete in the
/// cache already (the `Cached …` line rather than `Downloaded …`).
pub fn is_cached(report: &KernelReport) -> bool {
    report.fetched_bytes == 0 && report.bytes > 0
}

/// [`status_line`] with the kernel's `version` when known (`owner/name v1
/// (abcdef1)`, as `kernels lock` names it, else `owner/name@abcdef1`), in at
/// most `width` characters (a terminal's columns, so that the line never
/// wraps): the first of these that fits, else the last cut with `…`: the full
/// line; the variants as a count; without the file count; without the fetched
/// figure; without the variants; without the version; without the verb;
/// `owner/name@abcdef1: 3.00 MiB`.
pub fn status_line_within(report: &KernelReport, version: Option<&str>, width: usize) -> String {
    let cached = is_cached(report);
    let verb = if cached { "Cached" } else { "Downloaded" };
    let fetched = if cached || report.fetched_bytes >= report.bytes {
        String::new()
    } else {
        format!(" ({} fetched)", human_bytes(report.fetched_bytes))
    };
    let label = match version {
        Some(v) => format!("{} {v} ({})", report.repo_id, report.commit.short()),
        None => plan::label(&report.repo_id, &report.commit),
    };
    let size = human_bytes(report.bytes);
    let files = plural(report.files, "file");
    let count = plural(report.variants.len(), "variant");
    let candidates = [
        format!(
            "{verb} {label}: {}, {files}, {size}{fetched}",
            variants_text(&report.variants)
        ),
        format!("{verb} {label}: {count}, {files}, {size}{fetched}"),
        format!("{verb} {label}: {count}, {size}{fetched}"),
        format!("{verb} {label}: {count}, {size}"),
        format!("{verb} {label}: {size}"),
        format!(
            "{verb} {}: {size}",
            plan::label(&report.repo_id, &report.commit)
        ),
        format!("{label}: {size}"),
        format!("{}: {size}", plan::label(&report.repo_id, &report.commit)),
    ];
    first_fitting(&candidates, width)
}

/// The first of `candidates` (most detailed first, at least one) that is at
/// most `width` characters long, else the last cut to `width` with `…`.
pub fn first_fitting(candidates: &[String], width: usize) -> String {
    let fits = |line: &&String| line.chars().count() <= width;
    match candidates.iter().find(fits) {
        Some(line) => line.clone(),
        None => {
            let last = candidates.last().map(String::as_str).unwrap_or_default();
            let cut: String = last.chars().take(width.saturating_sub(1)).collect();
            format!("{cut}…")
        }
    }
}

/// The width a status line on stderr may take without wrapping: the
/// terminal's columns less one, or unlimited when stderr is not a terminal
/// (piped output keeps whole lines).
pub fn line_width() -> usize {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        terminal_width().saturating_sub(1)
    } else {
        usize::MAX
    }
}

/// The last line of a download run:
/// `Downloaded 6 kernels (730 MiB) in 3.2s into ~/.cache/huggingface/hub`.
pub fn summary_line(done: &[KernelReport], elapsed: Duration, cache: &str) -> String {
    let bytes = kernels_types::size::total(done.iter().map(|r| r.bytes));
    let fetched = kernels_types::size::total(done.iter().map(|r| r.fetched_bytes));
    let what = plural(done.len(), "kernel");
    let time = human_duration(elapsed);
    if fetched == 0 {
        format!(
            "Checked {what} ({}, all cached) in {time} in {cache}",
            human_bytes(bytes)
        )
    } else if fetched >= bytes {
        format!(
            "Downloaded {what} ({}) in {time} into {cache}",
            human_bytes(bytes)
        )
    } else {
        format!(
            "Downloaded {what} ({}, {} fetched) in {time} into {cache}",
            human_bytes(bytes),
            human_bytes(fetched)
        )
    }
}

/// `3.2s`, `12ms`.
pub fn human_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The total bar fitted to `width`: its bar 10 to 30 columns wide, and the
/// rate only from 80 columns on.
fn overall_template(width: usize) -> String {
    if width >= 80 {
        let bar = width.saturating_sub(65).clamp(10, 30);
        format!(
            "{{prefix:>11.bold.cyan}} [{{bar:{bar}.cyan}}] {{binary_bytes}}/{{binary_total_bytes}} ({{binary_bytes_per_sec}}, ETA {{eta}})"
        )
    } else {
        let bar = width.saturating_sub(50).clamp(5, 30);
        format!(
            "{{prefix:>11.bold.cyan}} [{{bar:{bar}.cyan}}] {{binary_bytes}}/{{binary_total_bytes}} ETA {{eta}}"
        )
    }
}

/// A file bar and the width of its `repo: file` label (at most 120 columns on a wide terminal, 60 on a narrow one):
/// indent 2, label, `[bar]` from 100 columns on, `123.45 KiB/123.45 KiB` (21),
/// and a spare column.
fn file_template(width: usize) -> (String, usize) {
    if width >= 100 {
        let label = (width - (2 + 1 + 22 + 1 + 21 + 1)).min(120);
        (
            "  {msg} [{bar:20.cyan}] {binary_bytes}/{binary_total_bytes}".to_owned(),
            label,
        )
    } else {
        let label = width.saturating_sub(2 + 1 + 21 + 1).clamp(10, 60);
        (
            "  {msg} {binary_bytes}/{binary_total_bytes}".to_owned(),
            label,
        )
    }
}

/// `repo: path` in exactly `width` columns: padded, or shortened so that the
/// file name stays visible: directories first (`owner/name: …/_ops.so`), then
/// the middle of the file name.
pub fn fit_label(repo: &str, path: &str, width: usize) -> String {
    let full = format!("{repo}: {path}");
    if full.chars().count() <= width {
        return format!("{full:<width$}");
    }
    fit_label_with(repo, path, width)
        .or_else(|| fit_label_with(repo.rsplit('/').next().unwrap_or(repo), path, width))
        .unwrap_or_else(|| fit(&full, width))
}

fn fit_label_with(repo: &str, path: &str, width: usize) -> Option<String> {
    let head = format!("{repo}: ");
    let head_len = head.chars().count();
    let name = path.rsplit('/').next().unwrap_or(path);
    let name_len = name.chars().count();
    if head_len + 2 + name_len <= width {
        // As much of the directories as fits, cut at their start.
        let keep = width - head_len - 1;
        let tail = skip_chars(path, path.chars().count() - keep);
        return Some(format!("{head}…{tail}"));
    }
    if head_len + 12 <= width {
        let room = width - head_len - 1;
        let front = room / 2;
        let back = room - front;
        let start: String = name.chars().take(front).collect();
        let end = skip_chars(name, name_len - back);
        return Some(format!("{head}{start}…{end}"));
    }
    None
}

/// `text` in at most `width` columns, its end replaced by `…` when cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn skip_chars(text: &str, n: usize) -> String {
    text.chars().skip(n).collect()
}

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
        .expect("valid template")
        .progress_chars("=> ")
}

fn spinner_style(color: bool) -> ProgressStyle {
    ProgressStyle::with_template(&template("{spinner:.cyan} {msg}", color))
        .expect("valid template")
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ")
}

/// `1234567` → `1.18 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    indicatif::BinaryBytes(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_parse_and_bytes_are_human() {
        for color in [true, false] {
            for width in [40, 80, 200] {
                let _ = style(&overall_template(width), color);
                let _ = style(&file_template(width).0, color);
            }
        }
        assert_eq!(
            template(&overall_template(80), false),
            "{prefix:>11} [{bar:15}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, ETA {eta})"
        );
        assert_eq!(human_bytes(1536), "1.50 KiB");
        let printer = Printer::new(crate::cli::printer::PrinterOptions::default());
        let progress = Progress::new(&printer, ProgressMode::Quiet);
        progress.add_total(10);
        let repo: RepoId = "acme/relu".parse().unwrap();
        let mut bar = progress.file(&repo, "f", 10);
        bar.inc(4);
        assert_eq!(progress.overall.position(), 4);
        drop(bar);
        assert_eq!(
            progress.overall.position(),
            0,
            "a failed fetch gives its bytes back"
        );
    }

    #[test]
    fn labels_fit_and_keep_the_file_name() {
        let path = "build/torch28-cxx11-cu128-x86_64-linux/paged_attention/_paged_attention_0123abc.abi3.so";
        let label = fit_label("kernels-community/paged-attention", path, 44);
        assert_eq!(label.chars().count(), 44, "{label}");
        assert_eq!(label, "paged-attention: _paged_attent…23abc.abi3.so");
        assert!(label.ends_with(".abi3.so"), "{label}");
        let label = fit_label("acme/relu", path, 44);
        assert_eq!(label, "acme/relu: _paged_attention…_0123abc.abi3.so");
        let label = fit_label("acme/relu", path, 56);
        assert!(
            label.starts_with("acme/relu: …")
                && label.ends_with("/_paged_attention_0123abc.abi3.so"),
            "{label}"
        );
        assert_eq!(label.chars().count(), 56);
        assert_eq!(fit_label("a/b", "x.py", 10), "a/b: x.py ");
        assert_eq!(fit("abcdef", 4), "abc…");
    }

    #[test]
    fn summary_and_retry_lines() {
        let report = |bytes, fetched| KernelReport {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "1".repeat(40).parse().unwrap(),
            variants: vec!["torch-universal".to_owned()],
            files: 2,
            bytes,
            fetched_bytes: fetched,
            fetched_blobs: 1,
            version: None,
            fit: Default::default(),
            signatures: Default::default(),
            file_hashes: Default::default(),
        };
        let cache = "~/.cache/huggingface/hub";
        assert_eq!(
            summary_line(&[report(2048, 2048)], Duration::from_millis(3200), cache),
            "Downloaded 1 kernel (2.00 KiB) in 3.2s into ~/.cache/huggingface/hub"
        );
        assert_eq!(
            summary_line(
                &[report(2048, 0), report(2048, 0)],
                Duration::from_millis(12),
                cache
            ),
            "Checked 2 kernels (4.00 KiB, all cached) in 12ms in ~/.cache/huggingface/hub"
        );
        assert_eq!(
            status_line(&report(2048, 1024)),
            "Downloaded acme/relu@1111111: torch-universal, 2 files, 2.00 KiB (1.00 KiB fetched)"
        );
        let fitted = |width| status_line_within(&report(2048, 1024), None, width);
        assert_eq!(fitted(83), status_line(&report(2048, 1024)));
        assert_eq!(
            fitted(80),
            "Downloaded acme/relu@1111111: 1 variant, 2 files, 2.00 KiB (1.00 KiB fetched)"
        );
        assert_eq!(
            fitted(75),
            "Downloaded acme/relu@1111111: 1 variant, 2.00 KiB (1.00 KiB fetched)"
        );
        assert_eq!(
            fitted(60),
            "Downloaded acme/relu@1111111: 1 variant, 2.00 KiB"
        );
        assert_eq!(fitted(45), "Downloaded acme/relu@1111111: 2.00 KiB");
        assert_eq!(fitted(30), "acme/relu@1111111: 2.00 KiB");
        assert_eq!(
            status_line_within(&report(2048, 2048), Some("v1"), usize::MAX),
            "Downloaded acme/relu v1 (1111111): torch-universal, 2 files, 2.00 KiB"
        );
        assert_eq!(fitted(10), "acme/relu…");
        for width in 1..120 {
            assert!(fitted(width).chars().count() <= width, "{width}");
        }
        let retry = RetryNotice {
            url: "http://h/kernels/acme/relu/resolve/1/build/x.so".to_owned(),
            file: Some("acme/relu: build/x.so".to_owned()),
            reason: "connection refused".to_owned(),
            wait: Duration::from_secs(2),
            attempt: 1,
            max: 5,
        };
        assert_eq!(
            retry_line("acme/relu: build/x.so", &retry),
            "warning: acme/relu: build/x.so: connection refused; retrying in 2 s (1/5)"
        );
    }
}
