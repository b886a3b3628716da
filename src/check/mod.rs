//! `kernels check`: every locked kernel imported through the project's own
//! Python, offline, from the cache, as the application will import it.
//!
//! Two steps. [`locate`] finds the variant directory of each locked kernel in
//! the cache with the check behind `kernels verify`
//! ([`crate::install::verify::verify_kernels`]: the variant the target
//! runtime's ranking picks among the cached ones, every blob re-hashed), so that
//! only complete, verified kernels are imported. [`import_kernels`] then runs the
//! interpreter once for all of them (the snippet `import.py`, JSON on stdin,
//! one marked JSON line per event on stdout) with `HF_HUB_OFFLINE=1` and the
//! cache variables (`KERNELS_CACHE`, `HF_HUB_CACHE`) set to the cache that was
//! verified. When that interpreter has a `kernels` runtime that reads the lock's
//! format (`importlib.metadata`; [`runtime_reads`]), each kernel is loaded
//! through `kernels.load_kernel(repo_id, lockfile=…)`, which every runtime since
//! 0.4 has; otherwise the variant is imported directly the way the runtime does
//! it: `<variant>/__init__.py`, else `<variant>/<package>/__init__.py`, under a
//! unique module name. A failure of one kernel does not stop the others; an
//! interpreter that dies while importing one names that kernel.

pub mod abi;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::{Deserialize, Serialize};

use crate::install::verify::{Problem, verify_kernels};
use crate::lock::format::{LockFormat, LockedKernel};
use crate::variant::VariantSelection;
use kernels_cache::HubCache;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

/// The snippet run by the project's interpreter (see the module docs).
const IMPORT_SNIPPET: &str = include_str!("import.py");

/// The prefix of the snippet's event lines on stdout.
const MARK: &str = "@kernels-check@ ";

/// Lines of the interpreter's stderr kept when it dies.
const STDERR_TAIL: usize = 8;

/// One locked kernel whose selected variant is complete and verified in the
/// cache: what the import needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportTarget {
    /// Its position in the lock (0-based).
    pub position: usize,
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// The variant the target runtime's ranking picks among the cached ones.
    pub variant: String,
    /// `<cache>/<prefix><owner>--<name>/snapshots/<commit>/build/<variant>`.
    pub variant_dir: PathBuf,
    /// The Python package name: `name` of the variant's `metadata.json`, else
    /// the repository name, `-` replaced by `_` (the runtime's rule).
    pub package: String,
}

/// A locked kernel that cannot be imported because the cache does not hold it
/// complete and verified (`kernels download` fixes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    /// Its position in the lock (0-based).
    pub position: usize,
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// What `kernels verify` finds wrong (at least one).
    pub problems: Vec<Problem>,
}

/// The locked kernels split into those ready to import and those that are not.
#[derive(Debug, Clone, Default)]
pub struct Located {
    /// Complete and verified, in lock order.
    pub ready: Vec<ImportTarget>,
    /// Missing or different in the cache, in lock order.
    pub not_ready: Vec<NotReady>,
}

/// Finds each locked kernel's variant directory in `cache` (folders of
/// `repo_type`), choosing among the cached variants with `selection` and
/// verifying them as `kernels verify` does; no network request. A kernel with
/// any problem is [`Located::not_ready`]; with several selected variants (only
/// with an explicit selection) the first is imported.
pub fn locate(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
) -> Located {
    let mut located = Located::default();
    let checks = verify_kernels(cache, repo_type, kernels, selection);
    for (position, check) in checks.into_iter().enumerate() {
        let first = check.variants.keys().next().cloned();
        match first {
            Some(variant) if check.is_ok() => {
                let repo = cache.repo(&check.repo_id, repo_type);
                let variant_dir = repo
                    .snapshot_dir(check.commit.as_str())
                    .join("build")
                    .join(&variant);
                located.ready.push(ImportTarget {
                    position,
                    package: package_name(&check.repo_id, &variant_dir),
                    repo_id: check.repo_id,
                    commit: check.commit,
                    variant,
                    variant_dir,
                });
            }
            _ => {
                let mut problems = check.problems;
                if problems.is_empty() {
                    problems.push(Problem::NotCached {
                        dir: cache
                            .repo(&check.repo_id, repo_type)
                            .snapshot_dir(check.commit.as_str()),
                    });
                }
                located.not_ready.push(NotReady {
                    position,
                    repo_id: check.repo_id,
                    commit: check.commit,
                    problems,
                });
            }
        }
    }
    located
}

/// The Python package of a variant: the `name` of its `metadata.json` (when it
/// reads), else the repository name; `-` becomes `_` (reference 0.17.2's
/// `python_name`, and `package_name_from_repo_id` before it).
fn package_name(repo_id: &RepoId, variant_dir: &Path) -> String {
    package_of(variant_dir, repo_id.name())
}

/// The Python package of the variant at `variant_dir`: the `name` of its
/// `metadata.json` (when it reads), else `fallback`; `-` becomes `_` (as
/// [`ImportTarget::package`]).
pub fn package_of(variant_dir: &Path, fallback: &str) -> String {
    let from_metadata = metadata_of(variant_dir).and_then(|metadata| metadata.name);
    let name = from_metadata.unwrap_or_else(|| fallback.to_owned());
    name.replace('-', "_")
}

/// A variant's `metadata.json`, when it reads.
fn metadata_of(variant_dir: &Path) -> Option<kernels_types::metadata::Metadata> {
    fs_err::read(variant_dir.join("metadata.json"))
        .ok()
        .and_then(|bytes| kernels_types::metadata::Metadata::from_slice(&bytes).ok())
}

impl ImportTarget {
    /// A local build's variant, imported in place of the locked commit of
    /// the kernel at `position`.
    pub fn local(
        position: usize,
        repo_id: RepoId,
        commit: CommitId,
        variant: &crate::local::LocalVariant,
    ) -> Self {
        ImportTarget {
            position,
            package: package_name(&repo_id, &variant.dir),
            repo_id,
            commit,
            variant: variant.name.clone(),
            variant_dir: variant.dir.clone(),
        }
    }
}

/// The runtime releases (`major.minor`, from inclusive, to exclusive) whose
/// `load_kernel(repo_id, lockfile=…)` reads a lock of `format`: `KernelLocks`
/// from 0.17, the variant-hash list from 0.4 (the first with `load_kernel`)
/// up to 0.16.
pub fn runtime_reads(format: LockFormat) -> ((u64, u64), Option<(u64, u64)>) {
    match format {
        LockFormat::KernelLocks => ((0, 17), None),
        LockFormat::VariantHash => ((0, 4), Some((0, 17))),
    }
}

/// What [`import_kernels`] needs besides the kernels.
#[derive(Debug, Clone, Copy)]
pub struct ImportInputs<'a> {
    /// The project's interpreter ([`crate::variant::project_python`]).
    pub python: &'a Path,
    /// The hub cache the kernels were verified in.
    pub cache_dir: &'a Path,
    /// The project's `kernels.lock` (passed to `load_kernel`).
    pub lock_path: &'a Path,
    /// Its format (which installed runtimes read it: [`runtime_reads`]).
    pub lock_format: LockFormat,
    /// For the imports of local builds: the `LOCAL_KERNELS` value the
    /// interpreter gets, each kernel then imported through the runtime's
    /// `get_kernel` (0.13+) or directly from its local variant; `None` for
    /// the locked kernels of the cache.
    pub local_kernels: Option<&'a str>,
}

/// How the kernels were imported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// Through the installed runtime's `kernels.load_kernel(repo_id, lockfile=…)`.
    LoadKernel,
    /// Directly from the variant directory (no installed runtime reads the lock).
    DirectImport,
    /// A local build through the installed runtime's `get_kernel` with
    /// `LOCAL_KERNELS` set.
    GetKernel,
}

/// What one run of the interpreter reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRun {
    /// The interpreter that ran.
    pub python: PathBuf,
    /// The `kernels` version `importlib.metadata` finds there, if any.
    pub runtime: Option<String>,
    /// How the kernels were imported.
    pub mechanism: Mechanism,
    /// One per [`ImportTarget`], in order.
    pub kernels: Vec<KernelImport>,
}

impl ImportRun {
    /// The installed runtime's version when it cannot read the lock's format
    /// (a runtime was found, but the kernels were imported directly): an
    /// application's `load_kernel(repo_id, lockfile=…)` would fail on the lock.
    pub fn runtime_cannot_read_lock(&self) -> Option<&str> {
        match self.mechanism {
            Mechanism::DirectImport => self.runtime.as_deref(),
            Mechanism::LoadKernel | Mechanism::GetKernel => None,
        }
    }
}

/// The import of one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelImport {
    /// The kernel as located.
    pub target: ImportTarget,
    /// What happened.
    pub outcome: ImportOutcome,
}

/// Whether a kernel imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportOutcome {
    /// The module imported.
    Loaded(Loaded),
    /// Importing raised (or the interpreter died while importing it).
    Failed {
        /// The exception's last line(s), `Type: message` and any notes,
        /// each clipped to 300 characters; or what the interpreter's exit said.
        error: Vec<String>,
        /// The innermost frames of the traceback (at most 4), or the tail of
        /// the interpreter's stderr when it died.
        traceback: Vec<String>,
        /// Python warnings and logged warnings before it failed (at most 8).
        warnings: Vec<String>,
    },
    /// Not tried: the interpreter died before reaching it.
    NotRun,
}

/// A kernel module that imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The variant directory the module came from (from its `__file__`).
    pub variant_dir: PathBuf,
    /// The variant's name (the directory under `build/`).
    pub variant: String,
    /// `__name__` of the module.
    pub module: String,
    /// The ops it registered.
    pub ops: Ops,
    /// Python warnings and WARNING records logged (the runtime's validators
    /// log theirs) while importing it, at most 8.
    pub warnings: Vec<String>,
}

/// The registered ops of a kernel, at most 64 names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Ops {
    /// `torch_ops` when the module's `ops` (from `_ops.py`) is a
    /// `torch.ops.<namespace>`; `callables` for the module's public callables.
    pub kind: String,
    /// The `torch.ops` namespace, e.g. `_relu_cuda_9134a00`.
    pub namespace: Option<String>,
    /// Op names (without the namespace and overload), sorted.
    pub names: Vec<String>,
    /// How many there are in all.
    pub total: usize,
}

/// The interpreter could not be run at all.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("cannot run `{}` to import the kernels: {reason}", python.display())]
#[diagnostic(
    code(kernels::check::no_python),
    help(
        "`kernels check` imports the kernels in the project's Python: activate its virtual environment (VIRTUAL_ENV) or create `<project>/.venv`"
    )
)]
pub struct CheckError {
    /// The interpreter.
    pub python: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// The request the snippet reads on stdin.
#[derive(Serialize)]
struct Request<'a> {
    lockfile: &'a Path,
    local: bool,
    runtime_reads: ((u64, u64), Option<(u64, u64)>),
    kernels: Vec<RequestKernel<'a>>,
}

#[derive(Serialize)]
struct RequestKernel<'a> {
    repo_id: String,
    variant_dir: &'a Path,
    package: &'a str,
    /// The `version` of a local build's `metadata.json` (its `get_kernel`
    /// needs a version; the local directory is loaded whatever it is).
    version: Option<u64>,
}

/// One event line of the snippet.
#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Start {
        runtime: Option<String>,
        load_kernel: bool,
    },
    Begin {
        index: usize,
    },
    Result(ResultEvent),
}

#[derive(Deserialize)]
struct ResultEvent {
    index: usize,
    loaded: bool,
    #[serde(default)]
    file: Option<PathBuf>,
    #[serde(default)]
    module: Option<String>,
    #[serde(default)]
    ops: Option<Ops>,
    #[serde(default)]
    error: Vec<String>,
    #[serde(default)]
    traceback: Vec<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// Imports every target in one run of `inputs.python` (see the module docs).
/// Errors only when the interpreter cannot be started or says nothing at all;
/// a kernel that fails to import is an [`ImportOutcome::Failed`].
pub fn import_kernels(
    inputs: &ImportInputs<'_>,
    targets: Vec<ImportTarget>,
) -> Result<ImportRun, CheckError> {
    let failed = |reason: String| CheckError {
        python: inputs.python.to_owned(),
        reason,
    };
    let request = Request {
        lockfile: inputs.lock_path,
        local: inputs.local_kernels.is_some(),
        runtime_reads: runtime_reads(inputs.lock_format),
        kernels: targets
            .iter()
            .map(|t| RequestKernel {
                repo_id: t.repo_id.to_string(),
                variant_dir: &t.variant_dir,
                package: &t.package,
                version: inputs
                    .local_kernels
                    .and_then(|_| metadata_of(&t.variant_dir))
                    .and_then(|m| m.version),
            })
            .collect(),
    };
    let request = serde_json::to_vec(&request).map_err(|err| failed(err.to_string()))?;
    let output = run_snippet(inputs, &request).map_err(|err| failed(err.to_string()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let events: Vec<Event> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix(MARK))
        .filter_map(|json| serde_json::from_str(json).ok())
        .collect();
    let Some(Event::Start {
        runtime,
        load_kernel,
    }) = events.first()
    else {
        return Err(failed(format!(
            "{}: {}",
            output.status,
            stderr.trim().lines().last().unwrap_or("no output")
        )));
    };
    let (runtime, load_kernel) = (runtime.clone(), *load_kernel);
    let death = (!output.status.success()).then(|| {
        let lines: Vec<&str> = stderr.trim().lines().collect();
        let tail = lines[lines.len().saturating_sub(STDERR_TAIL)..]
            .iter()
            .map(|l| (*l).to_owned())
            .collect();
        (output.status.to_string(), tail)
    });
    Ok(ImportRun {
        python: inputs.python.to_owned(),
        runtime,
        mechanism: if load_kernel && inputs.local_kernels.is_some() {
            Mechanism::GetKernel
        } else if load_kernel {
            Mechanism::LoadKernel
        } else {
            Mechanism::DirectImport
        },
        kernels: outcomes(targets, events, death),
    })
}

/// Runs the snippet in `inputs.python` with `request` on stdin, offline and
/// with the cache variables set to `inputs.cache_dir` (`HF_KERNELS_CACHE`,
/// which runtimes before 0.11 prefer, removed); its output when it ran.
fn run_snippet(inputs: &ImportInputs<'_>, request: &[u8]) -> std::io::Result<Output> {
    let mut child = Command::new(inputs.python)
        .arg("-c")
        .arg(IMPORT_SNIPPET)
        .envs(inputs.local_kernels.map(|v| ("LOCAL_KERNELS", v)))
        .env("HF_HUB_OFFLINE", "1")
        .env("KERNELS_CACHE", inputs.cache_dir)
        .env("HF_HUB_CACHE", inputs.cache_dir)
        .env_remove("HF_KERNELS_CACHE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A snippet that died before reading is reported from its output.
        let _ = stdin.write_all(request);
    }
    child.wait_with_output()
}

/// Pairs each target with its result event; the kernel that began without a
/// result is the one the interpreter died on (`death`: its exit status and
/// stderr tail), those after it were not run.
fn outcomes(
    targets: Vec<ImportTarget>,
    events: Vec<Event>,
    death: Option<(String, Vec<String>)>,
) -> Vec<KernelImport> {
    let mut began = None;
    let mut results: BTreeMap<usize, ResultEvent> = BTreeMap::new();
    for event in events {
        match event {
            Event::Begin { index } => began = Some(index),
            Event::Result(result) => {
                results.insert(result.index, result);
            }
            Event::Start { .. } => {}
        }
    }
    targets
        .into_iter()
        .enumerate()
        .map(|(index, target)| {
            let outcome = match results.remove(&index) {
                Some(result) => outcome_of(&target, result),
                None if began == Some(index) => {
                    let (status, tail) = death.clone().unwrap_or_default();
                    ImportOutcome::Failed {
                        error: vec![format!(
                            "the interpreter exited ({status}) while importing this kernel"
                        )],
                        traceback: tail,
                        warnings: Vec::new(),
                    }
                }
                None => ImportOutcome::NotRun,
            };
            KernelImport { target, outcome }
        })
        .collect()
}

/// The outcome a result event reports; the variant directory is the
/// `build/<variant>` prefix of the module's file (the located one if the
/// module has no file there).
fn outcome_of(target: &ImportTarget, result: ResultEvent) -> ImportOutcome {
    if !result.loaded {
        return ImportOutcome::Failed {
            error: result.error,
            traceback: result.traceback,
            warnings: result.warnings,
        };
    }
    let variant_dir = result
        .file
        .as_deref()
        .and_then(variant_dir_of)
        .unwrap_or_else(|| target.variant_dir.clone());
    let variant = variant_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| target.variant.clone());
    ImportOutcome::Loaded(Loaded {
        variant_dir,
        variant,
        module: result.module.unwrap_or_default(),
        ops: result.ops.unwrap_or(Ops {
            kind: "callables".to_owned(),
            namespace: None,
            names: Vec::new(),
            total: 0,
        }),
        warnings: result.warnings,
    })
}

/// `…/build/<variant>` of a module file below it: the last `build` component
/// with one more after it.
fn variant_dir_of(file: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = file.components().collect();
    let at = (0..parts.len().saturating_sub(2))
        .rev()
        .find(|&i| parts[i].as_os_str() == "build")?;
    Some(parts[..=at + 1].iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_directory_is_the_build_prefix_of_the_module_file() {
        let dir = variant_dir_of(Path::new(
            "/c/kernels--a--b/snapshots/1111/build/torch-cpu/relu/__init__.py",
        ));
        assert_eq!(
            dir.as_deref(),
            Some(Path::new("/c/kernels--a--b/snapshots/1111/build/torch-cpu"))
        );
        assert_eq!(
            variant_dir_of(Path::new("/c/build/torch-cpu/__init__.py")).as_deref(),
            Some(Path::new("/c/build/torch-cpu"))
        );
        assert_eq!(
            variant_dir_of(Path::new("/site-packages/relu/__init__.py")),
            None
        );
    }
}
