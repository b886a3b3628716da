//! The `--format json` documents, one type per schema of
//! `docs/json-output.md` (a test below checks every documented example
//! against a serialized value). Field order is key order on stdout.
//!
//! Commands build a document from what they report and print it with
//! [`Printer::json`] (pretty) or [`Printer::json_line`] (one line), as each
//! command always has.

use kernels_types::CommitId;
use std::path::Path;

use miette::Diagnostic;
use serde::Serialize;

use super::printer::Printer;
use crate::install::DryRunKernel;
use crate::install::explain::KernelExplanation;
use crate::lock::freshness::{CheckMode, Finding};
use crate::lock::inspect::{EntryStatus, RefAt, VersionInfo};
use crate::lock::project::Locked;
use crate::lock::sticky::Change;
use crate::variant::{EnvSources, TorchEnv};

/// `{code, message}`: why a command failed (the diagnostic code and the
/// message printed on stderr).
#[derive(Debug, Clone, Serialize)]
pub struct ErrorDoc {
    /// The diagnostic code, e.g. `kernels::lock::unreachable`.
    pub code: Option<String>,
    /// The error's message, for people.
    pub message: String,
}

impl ErrorDoc {
    /// The error object of `report`.
    pub fn of(report: &miette::Report) -> ErrorDoc {
        ErrorDoc {
            code: report.code().map(|c| c.to_string()),
            message: report.to_string(),
        }
    }
}

/// A failure object (`docs/json-output.md`, "Failures"): one kernel that
/// failed, with the diagnostic of its error.
#[derive(Debug, Clone, Serialize)]
pub struct FailureDoc {
    /// The kernel, `owner/name`.
    pub repo_id: String,
    /// The locked commit; `None` in `kernels lock`, which has not locked it.
    pub commit: Option<String>,
    /// The diagnostic code, e.g. `kernels::variant::not_found`.
    pub code: Option<String>,
    /// The error's message, for people.
    pub message: String,
}

impl FailureDoc {
    /// The failure of `repo_id` at `commit` (if locked) with `error`.
    pub fn new(repo_id: &impl ToString, commit: Option<String>, error: &dyn Diagnostic) -> Self {
        FailureDoc {
            repo_id: repo_id.to_string(),
            commit,
            code: error.code().map(|c| c.to_string()),
            message: error.to_string(),
        }
    }
}

/// `kernels lock --format json` (schema [`LockDoc::SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct LockDoc<'a> {
    /// [`LockDoc::SCHEMA`].
    pub schema: u32,
    /// `lock`.
    pub command: &'static str,
    /// The lock file path.
    pub lock_file: String,
    /// The format written (`None` when the command failed).
    pub format: Option<&'static str>,
    /// The format of the lock on disk before the run.
    pub previous_format: Option<&'static str>,
    /// Whether the file was written.
    pub written: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// What changes from the lock on disk.
    pub changes: &'a [Change],
    /// Every entry of the lock now.
    pub kernels: Vec<LockedEntryDoc>,
    /// The entries this run locked.
    pub locked: Vec<&'a Locked>,
    /// Warnings.
    pub warnings: &'a [String],
    /// Repo ids kept from a conflicted lock.
    pub kept: &'a [String],
    /// Why the command failed, if it did.
    pub error: Option<ErrorDoc>,
    /// The dependencies that could not be resolved.
    pub failed: Vec<FailureDoc>,
    /// The declared targets a locked kernel has no variant for (or cannot
    /// be checked for); empty without declared targets.
    pub fit: Vec<FitFindingDoc>,
}

impl LockDoc<'_> {
    /// The `schema` of `kernels lock --format json`; 2 since `locked[]` holds
    /// objects instead of status lines.
    pub const SCHEMA: u32 = 2;

    /// The document of a `kernels lock` that failed: `error`, `failed[]` and
    /// every other list empty.
    pub fn failed(
        lock_file: String,
        dry_run: bool,
        error: ErrorDoc,
        failed: Vec<FailureDoc>,
    ) -> LockDoc<'static> {
        LockDoc {
            schema: LockDoc::SCHEMA,
            command: "lock",
            lock_file,
            format: None,
            previous_format: None,
            written: false,
            dry_run,
            changes: &[],
            kernels: Vec::new(),
            locked: Vec::new(),
            warnings: &[],
            kept: &[],
            error: Some(error),
            failed,
            fit: Vec::new(),
        }
    }
}

/// One entry of `kernels[]` of [`LockDoc`].
#[derive(Debug, Serialize)]
pub struct LockedEntryDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit.
    pub commit: CommitId,
    /// The build variants (`None` in the `kernel-locks` format).
    pub variants: Option<Vec<String>>,
}

/// `kernels lock --check --format json` (schema [`CheckDoc::SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct CheckDoc<'a> {
    /// [`CheckDoc::SCHEMA`].
    pub schema: u32,
    /// `lock --check`.
    pub command: &'static str,
    /// The lock file path.
    pub lock_file: String,
    /// Offline (structural) or online (re-resolved).
    pub mode: CheckMode,
    /// Exactly when the exit code is 0.
    pub up_to_date: bool,
    /// Findings of kind `unverified`.
    pub unverified: usize,
    /// One per entry, then file-level ones.
    pub findings: &'a [Finding],
    /// Why the check could not be made, if so.
    pub error: Option<ErrorDoc>,
    /// The dependencies that could not be resolved.
    pub failed: Vec<FailureDoc>,
    /// Online only: what `kernels lock` would change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<&'a [Change]>,
    /// The fit of the declared targets, from cached metadata; absent
    /// without declared targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitCheckDoc>,
}

/// `fit` of [`CheckDoc`].
#[derive(Debug, Serialize)]
pub struct FitCheckDoc {
    /// The declared targets (`cuda:9.0`, `rocm:gfx942`).
    pub targets: Vec<String>,
    /// The targets and where they came from, for people.
    pub description: String,
    /// Whether every locked kernel has a variant for every target (or could
    /// not be checked).
    pub ok: bool,
    /// One per kernel and target without a variant, or not checkable.
    pub findings: Vec<FitFindingDoc>,
}

/// A locked kernel without a variant for a declared target, or one whose
/// metadata could not be read (`fit[]` of `kernels lock`, `fit.findings[]`
/// of `kernels lock --check`).
#[derive(Debug, Serialize)]
pub struct FitFindingDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// `owner/name@label`.
    pub kernel: String,
    /// `cuda:10.0`, `rocm:gfx942`.
    pub target: String,
    /// `no-variant` or `unchecked`.
    pub kind: &'static str,
    /// The rules that refuse the candidates (`archs`, `kernels-minver`,
    /// `python-depends`).
    pub rules: Vec<&'static str>,
    /// Each candidate variant with the reason it is refused, or, for
    /// `unchecked`, why its metadata could not be read.
    pub variants: Vec<FitVariantDoc>,
    /// The finding as the warning line says it.
    pub message: String,
}

/// `variants[]` of [`FitFindingDoc`].
#[derive(Debug, Serialize)]
pub struct FitVariantDoc {
    /// The variant directory.
    pub variant: String,
    /// Each refusal (or the reason it could not be read).
    pub reasons: Vec<String>,
}

impl FitFindingDoc {
    /// The document of `finding`.
    pub fn new(finding: &crate::lock::fit::FitFinding) -> Self {
        use crate::lock::fit::FindingKind;
        let (kind, variants) = match &finding.kind {
            FindingKind::NoVariant(refused) => (
                "no-variant",
                refused
                    .iter()
                    .map(|(variant, refusals)| FitVariantDoc {
                        variant: variant.clone(),
                        reasons: refusals.iter().map(ToString::to_string).collect(),
                    })
                    .collect(),
            ),
            FindingKind::Unchecked(unread) => (
                "unchecked",
                unread
                    .iter()
                    .map(|(variant, why)| FitVariantDoc {
                        variant: variant.clone(),
                        reasons: vec![why.clone()],
                    })
                    .collect(),
            ),
        };
        FitFindingDoc {
            repo_id: finding.repo_id.clone(),
            kernel: finding.kernel.clone(),
            target: crate::lock::fit::target_id(&finding.target),
            kind,
            rules: finding.rules(),
            variants,
            message: finding.to_string(),
        }
    }
}

impl CheckDoc<'_> {
    /// The `schema` of `kernels lock --check --format json`.
    pub const SCHEMA: u32 = 1;
}

/// `kernels download --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct DownloadDoc<'a> {
    /// 1.
    pub schema: u32,
    /// `download`.
    pub command: &'static str,
    /// The cache the kernels are in.
    pub cache_dir: &'a Path,
    /// The kernels now complete and verified in the cache.
    pub kernels: Vec<DownloadedDoc<'a>>,
    /// The kernels that failed.
    pub failed: Vec<FailureDoc>,
    /// Why the run stopped before any kernel, if it did.
    pub error: Option<ErrorDoc>,
    /// The runtime's variables set here under which it loads something other
    /// than the lock pins (`UNSTABLE_KERNELS_ALL_LATEST`, `LOCAL_KERNELS`);
    /// absent when none is set.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub runtime_overrides: &'a [crate::cli::settings::RuntimeOverride],
}

/// One kernel of [`DownloadDoc`].
#[derive(Debug, Serialize)]
pub struct DownloadedDoc<'a> {
    /// `owner/name`.
    pub repo_id: String,
    /// The ref the entry was locked from, else the release at the commit.
    pub version: Option<&'a str>,
    /// The locked commit.
    pub commit: CommitId,
    /// The variants in the cache.
    pub variants: &'a [String],
    /// Their files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes this run transferred.
    pub fetched_bytes: u64,
    /// Blobs this run transferred.
    pub fetched_blobs: usize,
    /// The fit of the candidate variants (see [`FitDoc`]).
    pub fit: FitDoc,
    /// The signature outcome of each variant placed, sorted by variant.
    pub signatures: Vec<PlacedSignatureDoc>,
}

/// One variant's signature as `download` accepted it: the reference's
/// outcome name (`Success`, `SignatureBundleMissing`) and, when signed, the
/// signer.
#[derive(Debug, Serialize)]
pub struct PlacedSignatureDoc {
    /// The variant.
    pub variant: String,
    /// The outcome name.
    pub outcome: &'static str,
    /// The signer, `null` when unsigned.
    pub signer: Option<SignerDoc>,
}

impl PlacedSignatureDoc {
    /// The document of `variant`'s `signature`.
    pub fn of(
        variant: &str,
        signature: &crate::install::signature::Signature,
    ) -> PlacedSignatureDoc {
        PlacedSignatureDoc {
            variant: variant.to_owned(),
            outcome: signature.outcome(),
            signer: signature.signer().map(SignerDoc::identity),
        }
    }
}

/// The fit of one kernel's variants by the target runtime's load-time rules:
/// the targets checked, the variants it would refuse (skipped candidates, a
/// cached variant `verify` found, or with `--all-variants` variants taken
/// anyway), one entry per rule, and its warnings.
#[derive(Debug, Serialize)]
pub struct FitDoc {
    /// The GPUs checked against; empty when the arch rule was not checked.
    pub targets: Vec<TargetDoc>,
    /// One entry per variant and rule.
    pub refused: Vec<RefusalDoc>,
    /// One entry per variant and warning.
    pub warnings: Vec<FitWarningDoc>,
}

/// One target of a [`FitDoc`].
#[derive(Debug, Serialize)]
pub struct TargetDoc {
    /// `cuda` or `rocm`.
    pub backend: &'static str,
    /// The capability (`9.0`) or GCN arch (`gfx942`).
    pub arch: String,
}

/// One refusal of a [`FitDoc`].
#[derive(Debug, Serialize)]
pub struct RefusalDoc {
    /// The variant.
    pub variant: String,
    /// `archs`, `kernels-minver` or `python-depends`.
    pub rule: &'static str,
    /// Why, naming the target.
    pub reason: String,
}

/// One warning of a [`FitDoc`].
#[derive(Debug, Serialize)]
pub struct FitWarningDoc {
    /// The variant.
    pub variant: String,
    /// The warning.
    pub warning: String,
}

impl FitDoc {
    /// The document of `fit`.
    pub fn of(fit: &crate::install::fit::KernelFit) -> FitDoc {
        use kernels_types::fit::Target;
        FitDoc {
            targets: fit
                .targets
                .iter()
                .map(|target| match target {
                    Target::Cuda(capability) => TargetDoc {
                        backend: "cuda",
                        arch: capability.to_string(),
                    },
                    Target::Rocm(arch) => TargetDoc {
                        backend: "rocm",
                        arch: arch.clone(),
                    },
                })
                .collect(),
            refused: fit
                .refused
                .iter()
                .flat_map(|r| {
                    r.refusals.iter().map(|refusal| RefusalDoc {
                        variant: r.variant.clone(),
                        rule: refusal.rule(),
                        reason: refusal.to_string(),
                    })
                })
                .collect(),
            warnings: fit
                .warnings
                .iter()
                .map(|w| FitWarningDoc {
                    variant: w.variant.clone(),
                    warning: w.warning.to_string(),
                })
                .collect(),
        }
    }
}

/// `kernels download --dry-run --format json` (schema
/// [`crate::install::DRY_RUN_SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct DryRunDoc<'a> {
    /// [`crate::install::DRY_RUN_SCHEMA`].
    pub schema: u32,
    /// `download --dry-run`.
    pub command: &'static str,
    /// The kernels that could be planned, in lock order.
    pub kernels: &'a [DryRunKernel],
    /// Distinct blobs that would be fetched, over all kernels.
    pub download_files: usize,
    /// Their bytes.
    pub download_bytes: u64,
    /// The kernels that could not be planned.
    pub failed: Vec<FailureDoc>,
}

/// `kernels download --explain --format json` (schema [`ExplainDoc::SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct ExplainDoc<'a> {
    /// [`ExplainDoc::SCHEMA`].
    pub schema: u32,
    /// `download --explain`.
    pub command: &'static str,
    /// The environment the variants are chosen for (`None` with
    /// `--variant` or `--all-variants`).
    pub environment: Option<String>,
    /// The target GPUs each variant's fit is checked for.
    pub targets: TargetsDoc,
    /// One explanation per kernel that could be listed.
    pub kernels: &'a [KernelExplanation],
    /// The kernels that could not be listed.
    pub failed: &'a [FailureDoc],
    /// The locked kernels with a local build and which source each loading
    /// API uses; absent when there is none.
    #[serde(skip_serializing_if = "no_local_sources")]
    pub local_sources: Option<&'a LocalSourcesDoc>,
}

/// Whether a document has no local sources to show.
fn no_local_sources(doc: &Option<&LocalSourcesDoc>) -> bool {
    doc.is_none_or(|d| d.is_empty())
}

impl ExplainDoc<'_> {
    /// The `schema` of `kernels download --explain --format json`.
    pub const SCHEMA: u32 = 1;
}

/// `kernels verify --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct VerifyDoc<'a> {
    /// 1.
    pub schema: u32,
    /// `verify`.
    pub command: &'static str,
    /// Exactly when the exit code is 0.
    pub ok: bool,
    /// The cache that was verified.
    pub cache_dir: &'a Path,
    /// One per locked kernel.
    pub kernels: Vec<VerifiedDoc>,
    /// Warnings about the variant choice.
    pub warnings: Vec<String>,
    /// Why nothing could be verified, if so.
    pub error: Option<ErrorDoc>,
    /// Only with several `[[tool.kernels.targets]]`: which environment the
    /// run judged (one run judges one), and the declared targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<JudgedDoc>,
}

/// The `judged` field of [`VerifyDoc`]: the environment a run judged when
/// `pyproject.toml` declares several targets.
#[derive(Debug, Serialize)]
pub struct JudgedDoc {
    /// The environment the variants were chosen for (`torch 2.8 (cxx11
    /// ABI), CPU only, x86_64-linux`); `null` when variants were named
    /// (`--all-variants`, `--variant`).
    pub environment: Option<String>,
    /// The declared targets that are environments, `targets[1] (torch 2.7 +
    /// cuda-12.6 (x86_64-linux))`, in file order.
    pub declared_targets: Vec<String>,
    /// The note of the text output: how to judge a declared target.
    pub note: String,
}

/// One kernel of [`VerifyDoc`].
#[derive(Debug, Serialize)]
pub struct VerifiedDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit.
    pub commit: CommitId,
    /// Whether every selected variant verified.
    pub ok: bool,
    /// The variants checked.
    pub variants: Vec<String>,
    /// Their files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// What differs from the lock.
    pub problems: Vec<ProblemDoc>,
    /// The fit of the checked variants by their cached metadata.json.
    pub fit: FitDoc,
}

/// One problem of a [`VerifiedDoc`].
#[derive(Debug, Serialize)]
pub struct ProblemDoc {
    /// Its kind, `not_cached`, `wrong_digest`, ….
    pub problem: String,
    /// The problem, for people.
    pub message: String,
}

/// `kernels check --format json` (schema [`CheckImportDoc::SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct CheckImportDoc<'a> {
    /// [`CheckImportDoc::SCHEMA`].
    pub schema: u32,
    /// `check`.
    pub command: &'static str,
    /// Exactly when the exit code is 0.
    pub ok: bool,
    /// The interpreter that imported the kernels (`None` when none ran).
    pub python: Option<&'a Path>,
    /// The `kernels` version installed there, if any.
    pub runtime: Option<&'a str>,
    /// `load_kernel` or `direct_import` (`None` when nothing was imported).
    pub mechanism: Option<&'a crate::check::Mechanism>,
    /// Whether the installed runtime reads the lock's format (`None` without
    /// an installed runtime); `false` fails the check.
    pub runtime_reads_lock: Option<bool>,
    /// The cache the kernels were imported from.
    pub cache_dir: &'a Path,
    /// The runtime's variables set here under which it loads something other
    /// than the lock pins (`UNSTABLE_KERNELS_ALL_LATEST`, `LOCAL_KERNELS`);
    /// absent when none is set.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub runtime_overrides: &'a [crate::cli::settings::RuntimeOverride],
    /// One per locked kernel, in lock order.
    pub kernels: Vec<CheckedKernelDoc<'a>>,
    /// Why nothing could be checked, if so.
    pub error: Option<ErrorDoc>,
    /// The imports of the local builds (`LOCAL_KERNELS`, `pyproject.toml`
    /// paths); absent when no locked kernel has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalCheckDoc<'a>>,
}

impl CheckImportDoc<'_> {
    /// The schema version.
    pub const SCHEMA: u32 = 1;
}

/// One kernel of [`CheckImportDoc`].
#[derive(Debug, Serialize)]
pub struct CheckedKernelDoc<'a> {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit.
    pub commit: &'a CommitId,
    /// `loaded`, `failed` (it raised, or the interpreter died on it),
    /// `not_run` (the interpreter died before it) or `not_cached` (not
    /// complete and verified in the cache).
    pub status: &'static str,
    /// Whether it imported.
    pub loaded: bool,
    /// The variant it loaded from (the one located, when it did not load).
    pub variant: Option<String>,
    /// That variant's directory in the cache.
    pub variant_path: Option<&'a Path>,
    /// `__name__` of the imported module.
    pub module: Option<&'a str>,
    /// The registered ops (`null` unless loaded).
    pub ops: Option<OpsDoc<'a>>,
    /// The exception's last line(s) and the traceback tail, when it failed.
    pub error: Option<ImportErrorDoc<'a>>,
    /// Why it is not ready in the cache (`not_cached`).
    pub problems: Vec<ProblemDoc>,
    /// Python warnings raised while importing it.
    pub warnings: &'a [String],
}

/// The registered ops of a [`CheckedKernelDoc`].
#[derive(Debug, Serialize)]
pub struct OpsDoc<'a> {
    /// `torch_ops` or `callables`.
    pub kind: &'a str,
    /// The `torch.ops` namespace, for `torch_ops`.
    pub namespace: Option<&'a str>,
    /// At most 64 names.
    pub names: &'a [String],
    /// How many in all.
    pub total: usize,
}

/// The Python error of a [`CheckedKernelDoc`].
#[derive(Debug, Serialize)]
pub struct ImportErrorDoc<'a> {
    /// `Type: message` (and any exception notes), clipped.
    pub message: &'a [String],
    /// The innermost traceback frames, clipped.
    pub traceback: &'a [String],
}

/// The target GPUs of a command and where they came from (`targets` of
/// `kernels env` and `kernels download --explain`).
#[derive(Debug, Serialize)]
pub struct TargetsDoc {
    /// Whether the arch rule is checked (some target is known).
    pub checked: bool,
    /// The targets, `cuda:9.0`, `rocm:gfx942`.
    pub targets: Vec<String>,
    /// `flags`, `manifest`, `device` or `not-checked`.
    pub source: &'static str,
    /// The `pyproject.toml` of `manifest`.
    pub path: Option<String>,
    /// The GPU's name, for `device`.
    pub device: Option<String>,
    /// For `not-checked`: `no-gpu`, `query-failed` or `not-asked`.
    pub reason: Option<&'static str>,
    /// For `query-failed`: the Python exception.
    pub error: Option<String>,
    /// The `Target GPUs` line of the text output.
    pub description: String,
}

impl TargetsDoc {
    /// The document of `targets`.
    pub fn new(targets: &crate::variant::Targets) -> Self {
        use crate::variant::{NotChecked, TargetSource};
        let mut doc = TargetsDoc {
            checked: targets.is_checked(),
            targets: targets
                .list
                .iter()
                .map(crate::lock::fit::target_id)
                .collect(),
            source: "not-checked",
            path: None,
            device: None,
            reason: None,
            error: None,
            description: targets.to_string(),
        };
        match &targets.source {
            TargetSource::Flags => doc.source = "flags",
            TargetSource::Manifest(path) => {
                doc.source = "manifest";
                doc.path = Some(path.display().to_string());
            }
            TargetSource::Device { name } => {
                doc.source = "device";
                doc.device = Some(name.clone());
            }
            TargetSource::NotChecked(NotChecked::NoGpu) => doc.reason = Some("no-gpu"),
            TargetSource::NotChecked(NotChecked::NotAsked) => doc.reason = Some("not-asked"),
            TargetSource::NotChecked(NotChecked::QueryFailed(error)) => {
                doc.reason = Some("query-failed");
                doc.error = Some(error.clone());
            }
        }
        doc
    }
}

/// `kernels env --format json` (schema [`EnvDoc::SCHEMA`]).
#[derive(Debug, Serialize)]
pub struct EnvDoc<'a> {
    /// [`EnvDoc::SCHEMA`].
    pub schema: u32,
    /// `env`.
    pub command: &'static str,
    /// This program's version.
    pub kernels_version: &'static str,
    /// The project's Python interpreter.
    pub python: &'a Path,
    /// The torch environment, `None` when torch cannot be asked.
    pub torch: Option<TorchDoc<'a>>,
    /// Why torch could not be asked.
    pub torch_error: Option<String>,
    /// The environment a 0.19+ runtime selects for where torch is missing
    /// and MLX reports a Metal device; absent otherwise (`torch` is then
    /// `null`, `torch_error` says torch is missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mlx_metal: Option<MlxMetalDoc<'a>>,
    /// The target runtime.
    pub target_runtime: TargetRuntimeDoc<'a>,
    /// The target GPUs the variants' fit is checked for.
    pub targets: TargetsDoc,
    /// The target's Python version and build, and where it came from.
    pub python_target: PythonTargetDoc<'a>,
    /// The cache.
    pub cache_dir: &'a Path,
    /// The Hub endpoint, its secrets removed (`kernels_types::text::redact`).
    pub endpoint: std::borrow::Cow<'a, str>,
    /// Whether no request may be made.
    pub offline: bool,
    /// The runtime's variables set here under which it loads something other
    /// than the lock pins (`UNSTABLE_KERNELS_ALL_LATEST`, `LOCAL_KERNELS`);
    /// absent when none is set.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub runtime_overrides: &'a [crate::cli::settings::RuntimeOverride],
    /// The locked kernels with a local build (`LOCAL_KERNELS`, a
    /// `pyproject.toml` path) and which source each loading API uses; absent
    /// when there is none.
    #[serde(skip_serializing_if = "LocalSourcesDoc::is_empty")]
    pub local_sources: &'a LocalSourcesDoc,
    /// Whether a token is set (never the token).
    pub token: bool,
    /// The variants of the project's lock, `None` without one.
    pub lock: Option<EnvLockDoc<'a>>,
}

impl EnvDoc<'_> {
    /// The `schema` of `kernels env --format json`.
    pub const SCHEMA: u32 = 1;
}

/// `torch` of [`EnvDoc`].
#[derive(Debug, Serialize)]
pub struct TorchDoc<'a> {
    /// `MAJOR.MINOR`.
    pub version: String,
    /// `cu126`, `cpu`, ….
    pub backend: String,
    /// The CUDA version.
    pub cuda: Option<&'a str>,
    /// The ROCm version.
    pub rocm: Option<&'a str>,
    /// The XPU version.
    pub xpu: Option<&'a str>,
    /// Apple Metal.
    pub metal: bool,
    /// The C++ ABI of torch.
    pub cxx11_abi: bool,
    /// `linux`, `darwin`, `windows`.
    pub os: String,
    /// `x86_64`, `aarch64`.
    pub arch: &'a str,
    /// The exact variant name of this environment.
    pub arch_variant: String,
    /// The variant names in the order they are preferred.
    pub preference: Vec<String>,
    /// Where each value came from.
    pub sources: &'a EnvSources,
}

impl<'a> TorchDoc<'a> {
    /// The document of `env`, whose runtime knows `noarch` variants when
    /// `noarch`.
    pub fn new(env: &'a TorchEnv, sources: &'a EnvSources, noarch: bool) -> Self {
        TorchDoc {
            version: format!("{}.{}", env.major, env.minor),
            backend: env.compute(),
            cuda: env.cuda.as_deref(),
            rocm: env.hip.as_deref(),
            xpu: env.xpu.as_deref(),
            metal: env.mps,
            cxx11_abi: env.cxx11_abi,
            os: env.system.to_lowercase(),
            arch: &env.machine,
            arch_variant: env.arch_variant(),
            preference: env.preference(noarch),
            sources,
        }
    }
}

/// `mlx_metal` of [`EnvDoc`]: the MLX-only environment (no torch) that
/// reference 0.19 selects variants for (`crate::variant::mlx_only`).
#[derive(Debug, Serialize)]
pub struct MlxMetalDoc<'a> {
    /// `metal`.
    pub backend: String,
    /// `darwin`.
    pub os: String,
    /// `platform.machine()`, `arm64` on Apple silicon.
    pub arch: &'a str,
    /// `platform.mac_ver()[0]`, `null` when empty.
    pub mac_version: Option<&'a str>,
    /// The `tvm_ffi` version, `null` when it is not importable.
    pub tvm_ffi: Option<&'a str>,
    /// The variant names in the order they are preferred (`kernels env`'s
    /// `Preferred` row).
    pub preference: Vec<String>,
    /// Where each value came from (`{"kind": "mlx", "detail": PYTHON}`).
    pub sources: &'a EnvSources,
}

impl<'a> MlxMetalDoc<'a> {
    /// The document of the MLX-only `env` under `rules`; `None` when `env`
    /// has torch.
    pub fn new(
        env: &'a TorchEnv,
        sources: &'a EnvSources,
        rules: crate::variant::VariantRules,
    ) -> Option<Self> {
        env.no_torch.then(|| MlxMetalDoc {
            backend: env.compute(),
            os: env.system.to_lowercase(),
            arch: &env.machine,
            mac_version: env.mac_version.as_deref(),
            tvm_ffi: env.tvm_ffi.as_deref(),
            preference: env.preferred(rules, true),
            sources,
        })
    }
}

/// `python_target` of [`EnvDoc`]: `version` (`"3.12"`, `null` when not
/// checked), `free_threaded`, `source` (`{kind, detail}` with kind `flag`,
/// `declared`, `interpreter`, `requires-python` or `not-checked`) and the
/// `Target Python` row as `description`.
#[derive(Debug, Serialize)]
pub struct PythonTargetDoc<'a> {
    /// The target.
    #[serde(flatten)]
    pub target: &'a crate::variant::python_target::PythonTarget,
    /// The text row.
    pub description: String,
}

/// `target_runtime` of [`EnvDoc`].
#[derive(Debug, Serialize)]
pub struct TargetRuntimeDoc<'a> {
    /// The runtime version, when known.
    pub version: Option<String>,
    /// `variant-hash` or `kernel-locks`.
    pub lock_format: &'static str,
    /// `kernel` or `model`.
    pub repo_type: &'static str,
    /// `kernels--` or `models--`.
    pub cache_prefix: &'static str,
    /// The `Target runtime: …` line without its head.
    pub description: &'a str,
    /// Set when the runtime is of a later minor line than the newest one
    /// modelled (`--target-runtime 0.25.0`, or an installed 0.25): what is
    /// assumed for it. `None` otherwise.
    pub newer_than_modelled: Option<NewerThanModelledDoc>,
}

/// `newer_than_modelled` of [`TargetRuntimeDoc`].
#[derive(Debug, Serialize)]
pub struct NewerThanModelledDoc {
    /// The target runtime, e.g. `0.25.0`.
    pub version: String,
    /// The newest release modelled, whose profile is used: `0.19.1`.
    pub assumed: String,
    /// The note printed on stderr, naming both and `kernels check`.
    pub note: String,
}

/// `lock` of [`EnvDoc`].
#[derive(Debug, Serialize)]
pub struct EnvLockDoc<'a> {
    /// The lock file.
    pub path: &'a Path,
    /// As in `kernels download --explain`.
    pub kernels: &'a [KernelExplanation],
    /// As in `kernels download --explain`.
    pub failed: &'a [FailureDoc],
    /// Why no choice could be made, if so.
    pub error: Option<&'a str>,
}

/// `kernels tree --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct TreeDoc {
    /// 1.
    pub schema: u32,
    /// `tree`.
    pub command: &'static str,
    /// One node per manifest dependency.
    pub dependencies: Vec<TreeNode>,
}

/// A node of [`TreeDoc`]: a locked entry, or a dependency that is not locked.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum TreeNode {
    /// A locked entry.
    Locked(Box<LockedNode>),
    /// `{"repo_id", "locked": null}`.
    NotLocked {
        /// `owner/name`.
        repo_id: String,
        /// Always `None`.
        locked: Option<RefAt>,
    },
}

/// A locked entry of [`TreeDoc`].
#[derive(Debug, Serialize)]
pub struct LockedNode {
    /// `owner/name`.
    pub repo_id: String,
    /// The requirement without TOML syntax.
    pub requirement: String,
    /// `version`, `specifier` or `revision`.
    pub requirement_kind: &'static str,
    /// `{label, commit}`.
    pub locked: RefAt,
    /// What it depends on (0.17 `kernel-depends`).
    pub dependencies: Vec<TreeNode>,
    /// With `--outdated`: `compatible`, `newest`, `outdated`, `status`, `error`.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub status: Option<NodeStatus>,
    /// Shown above already (`(*)` in text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeated: Option<bool>,
}

/// The `--outdated` fields of a [`LockedNode`], as in `kernels outdated`.
#[derive(Debug, Serialize)]
pub struct NodeStatus {
    /// What the requirement selects today.
    pub compatible: Option<RefAt>,
    /// The newest version.
    pub newest: Option<RefAt>,
    /// As `status` says; `None` when unknown.
    pub outdated: Option<bool>,
    /// `up_to_date`, `outdated` or `unknown`.
    pub status: crate::lock::inspect::Freshness,
    /// Why `unknown`.
    pub error: Option<crate::lock::inspect::CheckError>,
}

impl From<EntryStatus> for NodeStatus {
    fn from(status: EntryStatus) -> Self {
        NodeStatus {
            compatible: status.compatible,
            newest: status.newest,
            outdated: status.outdated,
            status: status.status,
            error: status.error,
        }
    }
}

/// `kernels outdated --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct OutdatedDoc<'a> {
    /// 1.
    pub schema: u32,
    /// `outdated`.
    pub command: &'static str,
    /// One per locked kernel.
    pub kernels: &'a [EntryStatus],
}

/// `kernels versions --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct VersionsDoc<'a> {
    /// 1.
    pub schema: u32,
    /// `versions`.
    pub command: &'static str,
    /// `owner/name`.
    pub repo_id: String,
    /// The environment the variants are matched for, if known.
    pub environment: Option<String>,
    /// One per `vN` branch and release tag.
    pub versions: Vec<VersionDoc<'a>>,
    /// Why the versions could not be read (then `versions` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDoc>,
}

/// One version of [`VersionsDoc`].
#[derive(Debug, Serialize)]
pub struct VersionDoc<'a> {
    /// `kind`, `name`, `version`, `commit`, `variants`.
    #[serde(flatten)]
    pub info: &'a VersionInfo,
    /// How many build variants it has.
    pub variant_count: usize,
    /// The variant this environment takes.
    pub matching: Matching,
}

/// `matching` of a [`VersionDoc`]: the variant name, `false` when none
/// matches, `null` when the environment is unknown.
#[derive(Debug)]
pub enum Matching {
    /// No environment to match.
    Unknown,
    /// No variant matches.
    None,
    /// This variant is taken.
    Variant(String),
}

impl Serialize for Matching {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Matching::Unknown => serializer.serialize_none(),
            Matching::None => serializer.serialize_bool(false),
            Matching::Variant(name) => serializer.serialize_str(name),
        }
    }
}

/// `kernels cache ls --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct CacheLsDoc<'a> {
    /// 1.
    pub schema: u32,
    /// `cache ls`.
    pub command: &'static str,
    /// The cache.
    pub cache_dir: &'a Path,
    /// Every repository in it.
    pub repos: &'a [kernels_cache::inventory::RepoEntry],
}

/// `kernels cache ls --json`: reference 0.19.1's document (no schema key),
/// keys in its order.
#[derive(Debug, Serialize)]
pub struct CacheVersionsDoc<'a> {
    /// The cache directory, resolved.
    pub cache_dir: &'a Path,
    /// Its kernel repositories with a `vN` ref, by id.
    pub repos: &'a [kernels_cache::inventory::VersionedRepo],
}

/// `kernels info --format json` (schema [`InfoDoc::SCHEMA`]): the keys of
/// reference 0.17.2's `kernels info --json` (`repo_id` and `revision`, or
/// `path`; `name` … `python_depends` only when a `metadata.json` was read;
/// `backends`), then `commit`, `targets` and `variants`.
#[derive(Debug, Serialize)]
pub struct InfoDoc<'a> {
    /// [`InfoDoc::SCHEMA`].
    pub schema: u32,
    /// `info`.
    pub command: &'static str,
    /// `owner/name` (Hub).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo_id: Option<String>,
    /// The revision described (Hub).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<&'a str>,
    /// The local repository, as given (local).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'a str>,
    /// The kernel-level fields of the first readable `metadata.json`.
    #[serde(flatten)]
    pub metadata: Option<InfoMetadataDoc<'a>>,
    /// The backends of the variants, sorted.
    pub backends: Vec<&'a str>,
    /// The variant this environment would load (reference 0.19.1's key);
    /// `null` when none can be told (the reason is a note on stderr).
    pub variant: Option<&'a str>,
    /// The commit the revision named (Hub).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<&'a CommitId>,
    /// What the fits were checked against.
    pub targets: InfoTargetsDoc,
    /// Every variant, by name.
    pub variants: Vec<InfoVariantDoc<'a>>,
    /// Every kernel it depends on, directly or not, sorted (reference
    /// 0.19.1's key).
    pub kernel_depends: Vec<String>,
    /// With `--dep-tree`: repository → its own dependencies, nested
    /// (reference 0.19.1's key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency_tree: Option<&'a DepTree>,
    /// The ABI of `variant`'s compiled files for the declared images; absent
    /// when no image is declared or no variant is told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant_abi: Option<&'a AbiVerdictDoc>,
}

/// A kernel's dependencies, nested: repository → what it depends on
/// (`kernels info --dep-tree`).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct DepTree(pub std::collections::BTreeMap<String, DepTree>);

impl DepTree {
    /// Every repository in the tree, sorted, each once.
    pub fn repos(&self) -> Vec<String> {
        let mut all = std::collections::BTreeSet::new();
        let mut stack = vec![self];
        while let Some(tree) = stack.pop() {
            for (repo, below) in &tree.0 {
                all.insert(repo.clone());
                stack.push(below);
            }
        }
        all.into_iter().collect()
    }
}

impl InfoDoc<'_> {
    /// The schema version.
    pub const SCHEMA: u32 = 1;
}

/// The kernel-level fields of an [`InfoDoc`], named as the reference names
/// them.
#[derive(Debug, Serialize)]
pub struct InfoMetadataDoc<'a> {
    /// `name`.
    pub name: Option<&'a str>,
    /// `version`.
    pub version: Option<u64>,
    /// `kernels-minver`, `X.Y.Z`.
    pub kernels_minver: Option<String>,
    /// `license`.
    pub license: Option<&'a str>,
    /// `upstream`.
    pub upstream: Option<&'a str>,
    /// `source`.
    pub source: Option<&'a str>,
    /// `python-depends`.
    pub python_depends: &'a [String],
}

/// `targets` of an [`InfoDoc`].
#[derive(Debug, Serialize)]
pub struct InfoTargetsDoc {
    /// `--cuda-capability` values.
    pub cuda_capabilities: Vec<String>,
    /// `--rocm-arch` values, without feature flags.
    pub rocm_archs: Vec<String>,
    /// `--target-runtime` (`null`: `kernels-minver` not checked).
    pub runtime: Option<String>,
}

/// One variant of an [`InfoDoc`].
#[derive(Debug, Serialize)]
pub struct InfoVariantDoc<'a> {
    /// The directory under `build/`.
    pub name: &'a str,
    /// Its backend as the 0.17.2 runtime reads the name.
    pub backend: &'a str,
    /// `backend.archs` of its `metadata.json`.
    pub archs: &'a [String],
    /// `ok`, `missing` or `invalid`.
    pub metadata: &'static str,
    /// Why an `invalid` one cannot be read.
    pub problem: Option<String>,
    /// Whether it fits (`null`: no `metadata.json` to check).
    pub fits: Option<bool>,
    /// Why not: `archs`, `kernels-minver`, `python-depends` or `metadata`.
    pub refusals: Vec<InfoRefusalDoc>,
    /// What the runtime would warn about (dirty provenance).
    pub warnings: Vec<String>,
}

/// One refusal of an [`InfoVariantDoc`].
#[derive(Debug, Serialize)]
pub struct InfoRefusalDoc {
    /// The rule.
    pub rule: &'static str,
    /// For people.
    pub message: String,
}

impl Printer {
    /// `doc` as indented JSON on stdout.
    pub fn json(&self, doc: &impl Serialize) {
        self.data(format_args!("{:#}", to_value(doc)));
    }

    /// `doc` as JSON on one line on stdout.
    pub fn json_line(&self, doc: &impl Serialize) {
        self.data(to_value(doc));
    }
}

/// `doc` as a JSON value (documents hold no map with non-string keys and no
/// float, so this cannot fail).
fn to_value(doc: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(doc).expect("a JSON document serializes")
}

/// The signer of a verified variant ([`kernels_trust::SignerIdentity`]).
#[derive(Debug, Serialize)]
pub struct SignerDoc {
    /// OIDC issuer of the certificate.
    pub issuer: String,
    /// Source repository URI.
    pub source_repository: Option<String>,
    /// Build-signer (workflow) URI with its ref.
    pub workflow: Option<String>,
    /// Commit of the signing workflow.
    pub workflow_commit: Option<String>,
    /// Rekor log index.
    pub log_index: Option<u64>,
}

impl SignerDoc {
    /// The signer of `outcome`, when it is a success.
    pub fn of(outcome: &kernels_trust::Outcome) -> Option<SignerDoc> {
        match outcome {
            kernels_trust::Outcome::Success(id) => Some(SignerDoc::identity(id)),
            _ => None,
        }
    }

    /// The document of a verified signer.
    pub fn identity(id: &kernels_trust::SignerIdentity) -> SignerDoc {
        SignerDoc {
            issuer: id.issuer.clone(),
            source_repository: id.source_repository.clone(),
            workflow: id.workflow.clone(),
            workflow_commit: id.workflow_commit.clone(),
            log_index: id.log_index,
        }
    }
}

/// One variant's signature check, in `kernels verify --signatures` and
/// `kernels audit` documents.
#[derive(Debug, Serialize)]
pub struct SignatureDoc {
    /// The variant directory name.
    pub variant: String,
    /// The reference's outcome name (`Success`, `SignatureBundleMissing`, …).
    pub outcome: &'static str,
    /// `accepted`, `unsigned` or `refused`.
    pub verdict: &'static str,
    /// The reason of a failure, or the signer of a success, for people.
    pub detail: Option<String>,
    /// The signer, for a success.
    pub signer: Option<SignerDoc>,
}

impl SignatureDoc {
    /// The document of `check`.
    pub fn of(check: &crate::signatures::cached::VariantCheck) -> SignatureDoc {
        SignatureDoc {
            variant: check.variant.clone(),
            outcome: check.outcome.name(),
            verdict: check.verdict.name(),
            detail: crate::signatures::outcome_detail(&check.outcome),
            signer: SignerDoc::of(&check.outcome),
        }
    }
}

/// `kernels verify --signatures --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct SignaturesDoc {
    /// 1.
    pub schema: u32,
    /// `verify --signatures`.
    pub command: &'static str,
    /// Exactly when the exit code is 0.
    pub ok: bool,
    /// `production`, or the `trusted_root.json` used.
    pub trust_root: String,
    /// Whether unsigned variants are refused.
    pub require_signed: bool,
    /// One per locked kernel.
    pub kernels: Vec<SignedKernelDoc>,
}

/// One kernel of [`SignaturesDoc`].
#[derive(Debug, Serialize)]
pub struct SignedKernelDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit.
    pub commit: CommitId,
    /// The cached variants checked (none: not in the cache).
    pub variants: Vec<SignatureDoc>,
}

/// `kernels audit --format json` (schema 1).
#[derive(Debug, Serialize)]
pub struct AuditDoc {
    /// 1.
    pub schema: u32,
    /// `audit`.
    pub command: &'static str,
    /// Exactly when the exit code is 0.
    pub ok: bool,
    /// `production`, or the `trusted_root.json` used.
    pub trust_root: String,
    /// Whether unsigned variants are refused.
    pub require_signed: bool,
    /// One per locked kernel.
    pub kernels: Vec<AuditKernelDoc>,
}

/// One kernel of [`AuditDoc`].
#[derive(Debug, Serialize)]
pub struct AuditKernelDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit.
    pub commit: CommitId,
    /// `kernel`, `model` (a model-type repository: a `models--` cache
    /// folder), or `null` when the cache holds no variant of the commit.
    pub repo_type: Option<&'static str>,
    /// `allow-listed` (`[tool.kernels] trust`) or `unknown` (offline).
    pub publisher: &'static str,
    /// The cached variants.
    pub variants: Vec<AuditVariantDoc>,
}

/// One variant of [`AuditKernelDoc`].
#[derive(Debug, Serialize)]
pub struct AuditVariantDoc {
    /// The signature check.
    #[serde(flatten)]
    pub signature: SignatureDoc,
    /// Whether `metadata.json` has a digest.
    pub digest: bool,
    /// Whether its provenance says the build was dirty; `null` without
    /// provenance.
    pub dirty: Option<bool>,
}

/// The problem's kind as a stable snake_case name (`dangling_link`, …): its
/// variant name.
pub fn problem_kind(problem: &crate::install::verify::Problem) -> String {
    let debug = format!("{problem:?}");
    let name = debug
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default();
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `production`, or the trust root file's path.
pub fn root_name(origin: &kernels_trust::root::TrustRootOrigin) -> String {
    match origin {
        kernels_trust::root::TrustRootOrigin::Production => "production".to_owned(),
        kernels_trust::root::TrustRootOrigin::File(path) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The JSON example under each `## …` heading of `docs/json-output.md`.
    fn examples() -> Vec<(String, serde_json::Value)> {
        let text = include_str!("../../docs/json-output.md");
        let mut out = Vec::new();
        let mut heading = String::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if let Some(h) = line.strip_prefix("## ") {
                heading = h.to_owned();
            } else if line == "```json" {
                let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
                let value = serde_json::from_str(&block.join("\n"))
                    .unwrap_or_else(|err| panic!("the example of {heading} is JSON: {err}"));
                out.push((heading.clone(), value));
            }
        }
        out
    }

    fn example(heading: &str) -> serde_json::Value {
        examples()
            .into_iter()
            .find(|(h, _)| h.starts_with(heading))
            .unwrap_or_else(|| panic!("docs/json-output.md has an example for {heading}"))
            .1
    }

    fn keys(value: &serde_json::Value) -> BTreeSet<String> {
        value
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The documented example and `doc` have the same keys, and the same
    /// `schema` and `command`; so do the first elements of the `nested`
    /// arrays where `doc` has one.
    fn matches(heading: &str, doc: &impl Serialize, nested: &[&str]) {
        let documented = example(heading);
        let actual = to_value(doc);
        assert_eq!(keys(&documented), keys(&actual), "{heading}");
        for field in ["schema", "command"] {
            assert_eq!(documented[field], actual[field], "{heading}: {field}");
        }
        for field in nested {
            let (Some(d), Some(a)) = (documented[field].get(0), actual[field].get(0)) else {
                panic!("{heading}: `{field}` has an element in the example and the test");
            };
            assert_eq!(keys(d), keys(a), "{heading}: {field}[]");
        }
    }

    /// A [`FitDoc`] with one element in each list.
    fn fit_doc() -> FitDoc {
        use crate::install::fit::{KernelFit, RefusedVariant, VariantFitWarning};
        use kernels_types::fit::{Capability, FitWarning, Refusal, Target};
        let nine = Target::Cuda(Capability::new(9, 0));
        FitDoc::of(&KernelFit {
            targets: vec![nine.clone()],
            refused: vec![RefusedVariant {
                variant: "torch-cuda".into(),
                refusals: vec![Refusal::Arch {
                    target: nine,
                    archs: vec!["8.0".into()],
                }],
            }],
            warnings: vec![VariantFitWarning {
                variant: "torch-cuda".into(),
                warning: FitWarning::Dirty {
                    sources: vec!["kernel"],
                },
            }],
            archs_unchecked: false,
            shadowing: Vec::new(),
        })
    }

    fn failure() -> FailureDoc {
        FailureDoc {
            repo_id: "acme/relu".to_owned(),
            commit: None,
            code: Some("kernels::hub::transport".to_owned()),
            message: "connection refused".to_owned(),
        }
    }

    #[test]
    fn lock_documents_match_the_schema() {
        let mut doc = LockDoc::failed("./kernels.lock".to_owned(), false, error(), Vec::new());
        doc.kernels.push(LockedEntryDoc {
            repo_id: "acme/relu".to_owned(),
            commit: "1".repeat(40).parse().unwrap(),
            variants: Some(vec!["torch-universal".to_owned()]),
        });
        doc.fit.push(FitFindingDoc::new(&gap()));
        matches("`kernels lock` (schema 2)", &doc, &["kernels", "fit"]);
        let documented = example("`kernels lock` (schema 2)");
        let actual = to_value(&doc);
        assert_eq!(
            keys(&documented["fit"][0]["variants"][0]),
            keys(&actual["fit"][0]["variants"][0])
        );
        assert_eq!(
            documented["fit"][0], actual["fit"][0],
            "the documented finding"
        );
        let findings = [];
        let changes = [];
        let check = CheckDoc {
            schema: CheckDoc::SCHEMA,
            command: "lock --check",
            lock_file: "./kernels.lock".to_owned(),
            mode: CheckMode::Online,
            up_to_date: true,
            unverified: 0,
            findings: &findings,
            error: None,
            failed: Vec::new(),
            changes: Some(&changes),
            fit: Some(FitCheckDoc {
                targets: vec!["cuda:9.0".to_owned()],
                description: String::new(),
                ok: false,
                findings: vec![FitFindingDoc::new(&gap())],
            }),
        };
        matches("`kernels lock --check`", &check, &[]);
        let documented = example("`kernels lock --check`");
        assert_eq!(keys(&documented["fit"]), keys(&to_value(&check)["fit"]));
    }

    /// The finding of the documented example.
    fn gap() -> crate::lock::fit::FitFinding {
        use kernels_types::fit::{Capability, Refusal, Target};
        let target = Target::Cuda(Capability::new(10, 0));
        crate::lock::fit::FitFinding {
            kernel: "kernels-community/relu@v1".to_owned(),
            repo_id: "kernels-community/relu".to_owned(),
            target: target.clone(),
            kind: crate::lock::fit::FindingKind::NoVariant(
                [(
                    "torch29-cxx11-cu128-x86_64-linux".to_owned(),
                    vec![Refusal::Arch {
                        target,
                        archs: vec!["8.0".to_owned(), "9.0".to_owned()],
                    }],
                )]
                .into(),
            ),
        }
    }

    fn error() -> ErrorDoc {
        ErrorDoc {
            code: Some("kernels::lock::offline".to_owned()),
            message: "offline".to_owned(),
        }
    }

    #[test]
    fn download_documents_match_the_schema() {
        let variants = ["torch-universal".to_owned()];
        let doc = DownloadDoc {
            schema: 1,
            command: "download",
            cache_dir: Path::new("/cache"),
            runtime_overrides: &[],
            kernels: vec![DownloadedDoc {
                repo_id: "acme/relu".to_owned(),
                version: Some("v1"),
                commit: "1".repeat(40).parse().unwrap(),
                variants: &variants,
                files: 1,
                bytes: 2,
                fetched_bytes: 2,
                fetched_blobs: 1,
                fit: fit_doc(),
                signatures: Vec::new(),
            }],
            failed: vec![failure()],
            error: None,
        };
        matches("`kernels download` (schema 1)", &doc, &["kernels"]);
        let documented = example("`kernels download` (schema 1)");
        let fit = &to_value(&doc)["kernels"][0]["fit"];
        assert_eq!(keys(&documented["kernels"][0]["fit"]), keys(fit), "fit");
        for field in ["targets", "refused", "warnings"] {
            assert_eq!(
                keys(&documented["kernels"][0]["fit"][field][0]),
                keys(&fit[field][0]),
                "fit.{field}[]"
            );
        }
        let failures = to_value(&doc)["failed"][0].clone();
        let documented: BTreeSet<String> = ["repo_id", "commit", "code", "message"]
            .map(String::from)
            .into();
        assert_eq!(keys(&failures), documented, "failure objects");
    }

    #[test]
    fn dry_run_and_explain_documents_match_the_schema() {
        let dry_run = DryRunDoc {
            schema: crate::install::DRY_RUN_SCHEMA,
            command: "download --dry-run",
            kernels: &[],
            download_files: 0,
            download_bytes: 0,
            failed: Vec::new(),
        };
        matches("`kernels download --dry-run`", &dry_run, &[]);
        let policy = crate::variant::FitPolicy {
            targets: crate::variant::Targets::resolve(
                &[],
                None,
                Some(&crate::variant::Device::Cuda {
                    name: "NVIDIA H200".to_owned(),
                    capability: (9, 0),
                }),
            ),
            runtime: None,
            modules: None,
            images: Vec::new(),
        };
        let metadata: kernels_types::metadata::Metadata =
            r#"{"backend": {"type": "cuda", "archs": ["8.0"]}}"#
                .parse()
                .unwrap();
        let variant = "torch27-cxx11-cu126-x86_64-linux";
        let kernels = [crate::install::explain::KernelExplanation {
            repo_id: "kernels-community/rotary".to_owned(),
            commit: "1".repeat(40).parse().unwrap(),
            chosen: vec![variant.to_owned()],
            variants: Vec::new(),
            newer: Some(Vec::new()),
            newer_error: None,
            fit: Some(vec![crate::install::variant_fit::VariantFit::of(
                variant, true, &metadata, &policy,
            )]),
        }];
        let explain = ExplainDoc {
            schema: ExplainDoc::SCHEMA,
            command: "download --explain",
            environment: None,
            targets: TargetsDoc::new(&policy.targets),
            kernels: &kernels,
            failed: &[],
            local_sources: None,
        };
        matches("`kernels download --explain`", &explain, &["kernels"]);
        let documented = example("`kernels download --explain`");
        let actual = to_value(&explain);
        assert_eq!(keys(&documented["targets"]), keys(&actual["targets"]));
        assert_eq!(documented["targets"], actual["targets"]);
        assert_eq!(
            documented["kernels"][0]["fit"][0], actual["kernels"][0]["fit"][0],
            "the documented fit"
        );
    }

    #[test]
    fn signature_documents_match_the_schema() {
        use crate::signatures::Verdict;
        use crate::signatures::cached::VariantCheck;
        let identity = kernels_trust::SignerIdentity {
            issuer: "https://token.actions.githubusercontent.com".to_owned(),
            source_repository: Some("https://github.com/huggingface/kernels-community".to_owned()),
            workflow: Some("build.yaml@refs/heads/main".to_owned()),
            workflow_commit: Some("5e1f7a9".to_owned()),
            log_index: Some(7),
        };
        let check = |outcome| VariantCheck {
            variant: "torch-cpu".to_owned(),
            dir: "/cache/v".into(),
            outcome,
            verdict: Verdict::Accepted,
        };
        let doc = SignaturesDoc {
            schema: 1,
            command: "verify --signatures",
            ok: true,
            trust_root: "production".to_owned(),
            require_signed: false,
            kernels: vec![SignedKernelDoc {
                repo_id: "acme/relu".to_owned(),
                commit: "1".repeat(40).parse().unwrap(),
                variants: vec![SignatureDoc::of(&check(kernels_trust::Outcome::Success(
                    identity,
                )))],
            }],
        };
        matches("`kernels verify --signatures`", &doc, &["kernels"]);
        let signer = &to_value(&doc)["kernels"][0]["variants"][0];
        let documented = &example("`kernels verify --signatures`")["kernels"][0]["variants"][0];
        assert_eq!(keys(signer), keys(documented));
        assert_eq!(keys(&signer["signer"]), keys(&documented["signer"]));
        let doc = AuditDoc {
            schema: 1,
            command: "audit",
            ok: true,
            trust_root: "production".to_owned(),
            require_signed: false,
            kernels: vec![AuditKernelDoc {
                repo_id: "acme/relu".to_owned(),
                commit: "1".repeat(40).parse().unwrap(),
                repo_type: Some("kernel"),
                publisher: "unknown",
                variants: vec![AuditVariantDoc {
                    signature: SignatureDoc::of(&check(
                        kernels_trust::Outcome::SignatureBundleMissing,
                    )),
                    digest: true,
                    dirty: None,
                }],
            }],
        };
        matches("`kernels audit`", &doc, &["kernels"]);
        let variant = &to_value(&doc)["kernels"][0]["variants"][0];
        assert_eq!(
            keys(variant),
            keys(&example("`kernels audit`")["kernels"][0]["variants"][0])
        );
    }

    #[test]
    fn verify_document_matches_the_schema() {
        let doc = VerifyDoc {
            schema: 1,
            command: "verify",
            ok: false,
            cache_dir: Path::new("/cache"),
            kernels: vec![VerifiedDoc {
                repo_id: "acme/relu".to_owned(),
                commit: "1".repeat(40).parse().unwrap(),
                ok: false,
                variants: Vec::new(),
                files: 0,
                bytes: 0,
                problems: vec![ProblemDoc {
                    problem: "not_cached".to_owned(),
                    message: "the kernel is not in the cache".to_owned(),
                }],
                fit: fit_doc(),
            }],
            warnings: Vec::new(),
            error: None,
            judged: None,
        };
        matches("`kernels verify`", &doc, &["kernels"]);
    }

    /// An `env` document of a CUDA 12.6 environment with a 0.17.2 profile and
    /// an empty lock, as JSON.
    fn env_document() -> serde_json::Value {
        let env = crate::variant::testing::env(Some("12.6"), "Linux", "x86_64");
        let sources = EnvSources {
            torch: crate::variant::EnvSource::Host,
            backend: crate::variant::EnvSource::Flag("--cuda-version"),
            cxx_abi: crate::variant::EnvSource::Default,
            platform: crate::variant::EnvSource::Host,
        };
        to_value(&EnvDoc {
            schema: EnvDoc::SCHEMA,
            command: "env",
            kernels_version: "0.1.0",
            python: Path::new(".venv/bin/python"),
            torch: Some(TorchDoc::new(&env, &sources, true)),
            torch_error: None,
            mlx_metal: None,
            target_runtime: TargetRuntimeDoc {
                version: Some("0.17.2".to_owned()),
                lock_format: "kernel-locks",
                repo_type: "kernel",
                cache_prefix: "kernels--",
                description: "kernels 0.17.2",
                newer_than_modelled: None,
            },
            targets: TargetsDoc::new(&crate::variant::Targets::resolve(
                &[],
                None,
                Some(&crate::variant::Device::None),
            )),
            python_target: PythonTargetDoc {
                target: &crate::variant::python_target::PythonTarget::resolve(&Default::default()),
                description: String::new(),
            },
            cache_dir: Path::new("/cache"),
            runtime_overrides: &[],
            local_sources: &LocalSourcesDoc::default(),
            endpoint: "https://huggingface.co".into(),
            offline: false,
            token: false,
            lock: Some(EnvLockDoc {
                path: Path::new("./kernels.lock"),
                kernels: &[],
                failed: &[],
                error: None,
            }),
        })
    }

    #[test]
    fn env_document_matches_the_schema() {
        let documented = example("`kernels env`");
        let actual = env_document();
        assert_eq!(keys(&documented), keys(&actual));
        for field in [
            "torch",
            "target_runtime",
            "targets",
            "python_target",
            "lock",
        ] {
            assert_eq!(keys(&documented[field]), keys(&actual[field]), "{field}");
        }
        assert_eq!(
            keys(&documented["torch"]["sources"]),
            keys(&actual["torch"]["sources"])
        );
    }

    #[test]
    fn mlx_only_env_document_matches_the_schema() {
        use crate::variant::mlx_only::MlxMetal;
        use crate::variant::{EnvSource, Generation, VariantRules};
        let mlx = MlxMetal {
            system: "Darwin".into(),
            machine: "arm64".into(),
            mac_version: Some("26.1".into()),
            tvm_ffi: None,
        };
        let env = mlx.env(Generation::V019, None).unwrap();
        let source = EnvSource::Mlx(std::path::PathBuf::from(".venv/bin/python"));
        let sources = EnvSources {
            torch: source.clone(),
            backend: source.clone(),
            cxx_abi: source.clone(),
            platform: source,
        };
        let rules = VariantRules {
            preference: crate::lock::profile::VariantPreference::ResolverMetalMacos26,
            generation: Generation::V019,
        };
        let actual = to_value(&MlxMetalDoc::new(&env, &sources, rules).unwrap());
        let documented = examples()
            .into_iter()
            .filter(|(h, _)| h.starts_with("`kernels env`"))
            .find_map(|(_, v)| v.get("mlx_metal").cloned())
            .expect("docs/json-output.md has an `mlx_metal` example");
        assert_eq!(actual, documented);
    }

    #[test]
    fn check_documents_match_the_schema() {
        let commit: CommitId = "1".repeat(40).parse().unwrap();
        let names = ["relu".to_owned()];
        let doc = CheckImportDoc {
            schema: CheckImportDoc::SCHEMA,
            command: "check",
            ok: false,
            python: Some(Path::new(".venv/bin/python")),
            runtime: Some("0.17.2"),
            mechanism: Some(&crate::check::Mechanism::LoadKernel),
            runtime_reads_lock: Some(true),
            cache_dir: Path::new("/cache"),
            runtime_overrides: &[],
            local: None,
            kernels: vec![CheckedKernelDoc {
                repo_id: "acme/relu".to_owned(),
                commit: &commit,
                status: "loaded",
                loaded: true,
                variant: Some("torch-cpu".to_owned()),
                variant_path: Some(Path::new("/cache/build/torch-cpu")),
                module: Some("_relu_cpu_1234567"),
                ops: Some(OpsDoc {
                    kind: "torch_ops",
                    namespace: Some("_relu_cpu_1234567"),
                    names: &names,
                    total: 1,
                }),
                error: Some(ImportErrorDoc {
                    message: &names,
                    traceback: &names,
                }),
                problems: Vec::new(),
                warnings: &[],
            }],
            error: None,
        };
        matches("`kernels check`", &doc, &["kernels"]);
        let documented = example("`kernels check`");
        let actual = to_value(&doc);
        for field in ["ops", "error"] {
            assert_eq!(
                keys(&documented["kernels"][0][field])
                    .union(&keys(&documented["kernels"][1][field]))
                    .cloned()
                    .collect::<BTreeSet<_>>(),
                keys(&actual["kernels"][0][field]),
                "{field}"
            );
        }
    }

    #[test]
    fn info_documents_match_the_schema() {
        let archs = ["8.0".to_owned()];
        let depends = ["einops".to_owned()];
        let commit: CommitId = "2".repeat(40).parse().unwrap();
        let doc = InfoDoc {
            schema: InfoDoc::SCHEMA,
            command: "info",
            repo_id: Some("acme/fit".to_owned()),
            revision: Some("v2"),
            path: None,
            metadata: Some(InfoMetadataDoc {
                name: Some("fit"),
                version: Some(2),
                kernels_minver: Some("0.17.0".to_owned()),
                license: Some("Apache-2.0"),
                upstream: None,
                source: None,
                python_depends: &depends,
            }),
            backends: vec!["cuda"],
            variant: Some("torch28-cxx11-cu126-x86_64-linux"),
            commit: Some(&commit),
            targets: InfoTargetsDoc {
                cuda_capabilities: vec!["9.0".to_owned()],
                rocm_archs: Vec::new(),
                runtime: None,
            },
            variants: vec![InfoVariantDoc {
                name: "torch28-cxx11-cu126-x86_64-linux",
                backend: "cuda",
                archs: &archs,
                metadata: "ok",
                problem: None,
                fits: Some(false),
                refusals: vec![InfoRefusalDoc {
                    rule: "archs",
                    message: "no".to_owned(),
                }],
                warnings: Vec::new(),
            }],
            kernel_depends: Vec::new(),
            dependency_tree: None,
            variant_abi: None,
        };
        matches("`kernels info`", &doc, &["variants"]);
        let documented = example("`kernels info`");
        let actual = to_value(&doc);
        assert_eq!(keys(&documented["targets"]), keys(&actual["targets"]));
        assert_eq!(
            keys(&documented["variants"][0]["refusals"][0]),
            keys(&actual["variants"][0]["refusals"][0])
        );
        // Key order is the reference's, then ours.
        let order: Vec<String> = actual.as_object().unwrap().keys().cloned().collect();
        let documented_order: Vec<String> =
            documented.as_object().unwrap().keys().cloned().collect();
        assert_eq!(order, documented_order);
    }

    #[test]
    fn versions_matching_is_a_name_false_or_null() {
        let as_json = |m: Matching| to_value(&m);
        assert_eq!(as_json(Matching::Unknown), serde_json::Value::Null);
        assert_eq!(as_json(Matching::None), serde_json::json!(false));
        assert_eq!(
            as_json(Matching::Variant("torch-cpu".to_owned())),
            serde_json::json!("torch-cpu")
        );
    }
}

/// `kernels variants --json`: the keys of reference 0.19.1's document, and,
/// beyond it, the verdicts for every environment the run selected for.
#[derive(Debug, Serialize)]
pub struct VariantsDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// One entry per version (or the one `--revision`).
    pub revisions: Vec<VariantsRevisionDoc>,
}

/// One revision of [`VariantsDoc`].
#[derive(Debug, Serialize)]
pub struct VariantsRevisionDoc {
    /// The kernel version (`null` with `--revision`).
    pub version: Option<u64>,
    /// `refs/heads/vN` for a version (as the reference writes it), else the
    /// `--revision` given.
    pub revision: String,
    /// The verdicts for the first environment (the reference's key).
    pub variants: Vec<VariantVerdictDoc>,
    /// The verdicts for every environment: the flags or the interpreter, or
    /// each `[[tool.kernels.targets]]` entry.
    pub environments: Vec<VariantsEnvironmentDoc>,
}

/// The verdicts of one environment in [`VariantsRevisionDoc`].
#[derive(Debug, Serialize)]
pub struct VariantsEnvironmentDoc {
    /// The environment, as `kernels env` describes it.
    pub environment: String,
    /// Where it came from: `flags`, `python`, or `target N` (1-based, of
    /// `[[tool.kernels.targets]]`).
    pub source: String,
    /// One verdict per build variant.
    pub variants: Vec<EnvironmentVariantDoc>,
}

/// One build variant's verdict for one environment of
/// [`VariantsEnvironmentDoc`]: the reference 0.19.1 keys, and `abi`.
#[derive(Debug, Clone, Serialize)]
pub struct EnvironmentVariantDoc {
    /// `variant`, `compatible`, `preferred`, `reason`.
    #[serde(flatten)]
    pub verdict: VariantVerdictDoc,
    /// The ABI of its compiled files for the declared images, when an
    /// image is declared and the variant is compatible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abi: Option<AbiVerdictDoc>,
}

/// The ABI verdict on one variant's compiled files for the declared images
/// (`kernels variants` per environment, `kernels info` for its `variant`),
/// from the files already in the cache (or the local directory): nothing
/// is fetched to answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbiVerdictDoc {
    /// The images checked against: `manylinux_2_28`, `macOS 11.0`.
    pub images: Vec<String>,
    /// False when its compiled files are not in the cache ("not checked").
    pub checked: bool,
    /// Whether every image loads every compiled file (`null`: not checked).
    pub fits: Option<bool>,
    /// Each refused file and why: `` `abi/_ops.so` needs
    /// `pthread_create@GLIBC_2.34`, which manylinux_2_28 does not provide
    /// (manylinux_2_34 or newer would) ``.
    pub refusals: Vec<String>,
    /// Claimed ABIs (abi3, torch stable) a file does not keep to, each
    /// naming the file.
    pub warnings: Vec<String>,
}

/// One build variant's verdict (the reference 0.19.1 keys).
#[derive(Debug, Clone, Serialize)]
pub struct VariantVerdictDoc {
    /// The directory name under `build/`.
    pub variant: String,
    /// Whether the environment can load it.
    pub compatible: bool,
    /// Whether it is the one the runtime loads.
    pub preferred: bool,
    /// Why it is not compatible (`null` when it is).
    pub reason: Option<String>,
}

/// The `local_sources` of `env`, `check` and `download --explain` documents:
/// the locked kernels with a local build (from `LOCAL_KERNELS` or a
/// `pyproject.toml` `path`), which source each loading API of the runtime
/// uses, and the `LOCAL_KERNELS` value that loads the `path` sources.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LocalSourcesDoc {
    /// One per locked kernel with a local build, in lock order.
    pub kernels: Vec<LocalSourceDoc>,
    /// `LOCAL_KERNELS` entries that name no locked kernel (the runtime still
    /// uses them for `get_kernel` of that repository).
    pub unlocked: Vec<crate::local::LocalEntry>,
    /// The `LOCAL_KERNELS` value that makes the application's `get_kernel`
    /// load the `pyproject.toml` path sources (absolute paths); absent when
    /// no entry has one or `LOCAL_KERNELS` already covers them.
    pub local_kernels_value: Option<String>,
}

impl LocalSourcesDoc {
    /// Whether there is nothing to report (the key is left out then).
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty() && self.unlocked.is_empty()
    }
}

/// One kernel of [`LocalSourcesDoc`].
#[derive(Debug, Clone, Serialize)]
pub struct LocalSourceDoc {
    /// `owner/name`.
    pub repo_id: String,
    /// The locked commit (what `load_kernel(lockfile=…)` and
    /// `get_locked_kernel` load).
    pub locked_commit: CommitId,
    /// Where the local build was named: `LOCAL_KERNELS` or `pyproject.toml`.
    pub origin: &'static str,
    /// The directory as given (a `pyproject.toml` path joined to the project
    /// directory).
    pub path: std::path::PathBuf,
    /// The variant the runtime loads from it for this environment; absent
    /// when it cannot be chosen (no torch) or the path is unusable.
    pub variant: Option<crate::local::LocalVariant>,
    /// Why the path is unusable (missing, no variant), if it is.
    pub error: Option<String>,
    /// What `get_kernel` loads here: `local` (LOCAL_KERNELS names it) or
    /// `hub` (the version the application asks for).
    pub get_kernel: &'static str,
    /// What `load_kernel(lockfile=…)` and `get_locked_kernel` load: always
    /// `locked` (they ignore LOCAL_KERNELS).
    pub load_kernel: &'static str,
}

/// `local` of [`CheckImportDoc`]: each locked kernel with a local build
/// imported from it, as the application's `get_kernel` loads it.
#[derive(Debug, Serialize)]
pub struct LocalCheckDoc<'a> {
    /// The `LOCAL_KERNELS` value the interpreter ran with.
    pub local_kernels: &'a str,
    /// `get_kernel` (through the installed runtime) or `direct_import`.
    pub mechanism: &'a crate::check::Mechanism,
    /// Which kernels have a local build, and what each loading API uses.
    pub sources: &'a LocalSourcesDoc,
    /// One per local build, as [`CheckImportDoc::kernels`].
    pub kernels: Vec<CheckedKernelDoc<'a>>,
}
