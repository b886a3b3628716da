//! How the install engine tells its caller what it is doing, without printing:
//! the caller (the CLI's progress renderer, or a test) implements [`Reporter`],
//! as uv's resolver and installer report through their `Reporter` traits.

use super::report::KernelReport;
use crate::variant::VariantWarning;
use kernels_hub::RetryNotice;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

/// Events of one download run, in order: [`Reporter::start`] once,
/// [`Reporter::kernel_planned`] once per kernel whose files are known,
/// [`Reporter::cached`] and [`Reporter::file`] while blobs are placed
/// ([`Reporter::retry`] before a fetch is tried again),
/// [`Reporter::kernel_done`] per finished kernel, then [`Reporter::finish`];
/// [`Reporter::warning`] whenever choosing a kernel's variants warns. Called
/// from several tasks at once.
pub trait Reporter: Send + Sync {
    /// A run over `kernels` kernels begins (their files are not known yet).
    fn start(&self, kernels: usize) {
        let _ = kernels;
    }
    /// The files of a kernel are known: `bytes` more are planned (the sizes
    /// of every file it needs).
    fn kernel_planned(&self, planned: &PlannedKernel);
    /// `bytes` of the planned total were already in the cache.
    fn cached(&self, bytes: u64);
    /// A fetch of the file at repo path `path` of `repo_id` (`size` bytes) starts.
    fn file(&self, repo_id: &RepoId, path: &str, size: u64) -> Box<dyn FileReporter>;
    /// A failed file download will be tried again after a pause
    /// ([`RetryNotice::file`] names the file).
    fn retry(&self, retry: &RetryNotice) {
        let _ = retry;
    }
    /// A kernel is complete and verified.
    fn kernel_done(&self, report: &KernelReport);
    /// Every kernel was tried.
    fn finish(&self);
    /// Choosing a kernel's variants warned (the kernel goes on).
    fn warning(&self, warning: &VariantWarning);
}

/// A kernel whose files are known ([`Reporter::kernel_planned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedKernel {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Selected variants, sorted.
    pub variants: Vec<String>,
    /// Files to link.
    pub files: usize,
    /// Their total size in bytes.
    pub bytes: u64,
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
    fn kernel_planned(&self, _: &PlannedKernel) {}
    fn cached(&self, _: u64) {}
    fn file(&self, _: &RepoId, _: &str, _: u64) -> Box<dyn FileReporter> {
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
