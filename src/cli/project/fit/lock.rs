//! The declared targets of `kernels lock` (`--cuda-capability` /
//! `--rocm-arch`, else `[tool.kernels] cuda-capabilities` / `rocm-archs`; lock
//! never asks the GPU) and what it says about the locked kernels that have no
//! variant for one ([`crate::lock::fit`]): warnings after locking, a failure of
//! `kernels lock --check` (online from the re-resolved lock's metadata,
//! offline from the cache).

use kernels_types::fit::Target;

use crate::cli::json::{FitCheckDoc, FitFindingDoc};
use crate::cli::printer::Printer;
use crate::lock::fit::FitFinding;
use crate::lock::manifest::Manifest;
use crate::variant::{TargetSource, Targets};

/// The targets `kernels lock` checks: `flags`, else the manifest's.
pub fn declared(flags: &[Target], manifest: &Manifest) -> Targets {
    Targets::resolve(
        flags,
        Some((&manifest.settings.targets, &manifest.path)),
        None,
    )
}

/// The fit of a lock on disk for its declared targets (`kernels lock --check`).
pub struct FitCheck {
    /// The targets.
    pub targets: Targets,
    /// What was found, in lock then target order.
    pub findings: Vec<FitFinding>,
    /// Whether the findings come from the cache (`--offline`), where an
    /// unchecked variant is one whose metadata is not there yet.
    pub from_cache: bool,
}

impl FitCheck {
    /// Whether some kernel certainly has no variant for a target.
    pub fn has_gap(&self) -> bool {
        self.findings.iter().any(FitFinding::is_gap)
    }

    /// The `fit` object of `kernels lock --check --format json`.
    pub fn doc(&self) -> FitCheckDoc {
        FitCheckDoc {
            targets: self
                .targets
                .list
                .iter()
                .map(crate::lock::fit::target_id)
                .collect(),
            description: self.targets.to_string(),
            ok: !self.has_gap(),
            findings: self.findings.iter().map(FitFindingDoc::new).collect(),
        }
    }
}

/// How to fix a kernel without a variant for `target` from `source`.
fn fix(finding: &FitFinding, source: &TargetSource) -> String {
    let drop = match (source, &finding.target) {
        (TargetSource::Flags, Target::Cuda(c)) => format!("drop `--cuda-capability {c}`"),
        (TargetSource::Flags, Target::Rocm(a)) => format!("drop `--rocm-arch {a}`"),
        (TargetSource::Manifest(path), Target::Cuda(c)) => format!(
            "drop \"{c}\" from `cuda-capabilities` in [tool.kernels] of {}",
            path.display()
        ),
        (TargetSource::Manifest(path), Target::Rocm(a)) => format!(
            "drop \"{a}\" from `rocm-archs` in [tool.kernels] of {}",
            path.display()
        ),
        _ => "drop the target".to_owned(),
    };
    format!(
        "lock a version that has builds for it (`kernels variants {} --all-versions` lists them), or {drop}",
        finding.repo_id
    )
}

/// The warnings of a `kernels lock` that resolved: one per finding, each gap
/// with its fix.
pub fn print_outcome(printer: &Printer, found: &[FitFinding], targets: &Targets) {
    for finding in found.iter().filter(|f| f.is_gap()) {
        printer.status(format_args!("warning: {finding}"));
        printer.status(format_args!("  hint: {}", fix(finding, &targets.source)));
    }
    for line in crate::lock::fit::unchecked_lines(found) {
        printer.status(format_args!("warning: {line}"));
    }
}

/// The findings of `kernels lock --check` on stderr: with `check`, each gap is
/// an error and a closing line says the check failed; findings that could not
/// be checked are one note per kernel and reason, and, from the cache, one
/// closing note with the commands that fill it.
pub fn print_findings(printer: &Printer, fit: &FitCheck, check: bool) {
    for finding in fit.findings.iter().filter(|f| f.is_gap()) {
        let level = if check { "error" } else { "warning" };
        printer.error(format_args!("{level}: {finding}"));
        printer.error(format_args!(
            "  hint: {}",
            fix(finding, &fit.targets.source)
        ));
    }
    let unchecked = crate::lock::fit::unchecked_lines(&fit.findings);
    for line in &unchecked {
        printer.error(format_args!("note: {line}"));
    }
    // Said once: the cache may fill; a variant the Hub has without readable
    // metadata stays unknown, so online there is nothing to run.
    if fit.from_cache && !unchecked.is_empty() {
        printer.error(
            "note: `kernels lock --check` without --offline checks what the cache cannot tell, and so does this check after `kernels download`",
        );
    }
    let mut kernels: Vec<&str> = fit
        .findings
        .iter()
        .filter(|f| f.is_gap())
        .map(|f| f.kernel.as_str())
        .collect();
    kernels.dedup();
    if check && !kernels.is_empty() {
        printer.error(format_args!(
            "the check fails: {} no variant for a declared target ({})",
            match kernels.len() {
                1 => "1 locked kernel has".to_owned(),
                n => format!("{n} locked kernels have"),
            },
            fit.targets
        ));
    }
}
