//! How the install engine tells its caller what it is doing, without printing:
//! the caller (the CLI's progress renderer, or a test) implements [`Reporter`],
//! as uv's resolver and installer report through their `Reporter` traits.

use super::KernelReport;
use crate::variant::VariantWarning;

/// Events of one download run, in order: [`Reporter::add_total`] once per
/// planned kernel, [`Reporter::cached`] and [`Reporter::file`] while blobs are
/// placed, [`Reporter::kernel_done`] per finished kernel, then
/// [`Reporter::finish`]; [`Reporter::warning`] whenever choosing a kernel's
/// variants warns. Called from several tasks at once.
pub trait Reporter: Send + Sync {
    /// `bytes` more are planned (the sizes of every file a kernel needs).
    fn add_total(&self, bytes: u64);
    /// `bytes` of the planned total were already in the cache.
    fn cached(&self, bytes: u64);
    /// A fetch of the file at repo path `path` (`size` bytes) starts.
    fn file(&self, path: &str, size: u64) -> Box<dyn FileReporter>;
    /// A kernel is complete and verified.
    fn kernel_done(&self, report: &KernelReport);
    /// Every kernel was tried.
    fn finish(&self);
    /// Choosing a kernel's variants warned (the kernel goes on).
    fn warning(&self, warning: &VariantWarning);
}

/// Progress of one file fetch. Dropping it without [`FileReporter::done`] means
/// the attempt failed and its bytes no longer count.
pub trait FileReporter: Send {
    /// `n` more bytes are present (received, or kept from an earlier run).
    fn inc(&mut self, n: u64);
    /// The file is complete and verified.
    fn done(&mut self);
}

/// A [`Reporter`] that ignores every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoReporter;

impl Reporter for NoReporter {
    fn add_total(&self, _: u64) {}
    fn cached(&self, _: u64) {}
    fn file(&self, _: &str, _: u64) -> Box<dyn FileReporter> {
        Box::new(NoReporter)
    }
    fn kernel_done(&self, _: &KernelReport) {}
    fn finish(&self) {}
    fn warning(&self, _: &VariantWarning) {}
}

impl FileReporter for NoReporter {
    fn inc(&mut self, _: u64) {}
    fn done(&mut self) {}
}
