//! Why a project cannot be locked ([`LockError`]), per dependency
//! ([`Failure`]).

use kernels_hub::HubError;
use kernels_types::CommitId;
use kernels_types::metadata::MetadataError;
use kernels_types::repo_id::RepoId;

use crate::lock::manifest::Manifest;
use crate::lock::profile::RuntimeVersion;
use crate::lock::resolver::ResolveError;
use crate::lock::support::UnsupportedRequirement;

/// A dependency of the project that could not be locked, and why.
#[derive(Debug)]
pub struct Failure {
    /// The dependency (for a 0.17 lock, the project's dependency whose
    /// `kernel-depends` graph failed).
    pub repo_id: RepoId,
    /// Why.
    pub error: LockError,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The failure's own diagnostic (code, help, causes).
impl miette::Diagnostic for Failure {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.error.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.error.severity()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.error.help()
    }
    fn url<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.error.url()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.error.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.error.labels()
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        self.error.related()
    }
    fn diagnostic_source(&self) -> Option<&dyn miette::Diagnostic> {
        self.error.diagnostic_source()
    }
}

/// Why a project cannot be locked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LockError {
    /// The 0.17 profile refuses an empty dependency table, like the reference.
    #[error("No kernels found to lock: [tool.kernels.dependencies] in {path} is empty")]
    #[diagnostic(
        code(kernels::lock::no_kernels),
        help(
            "add a kernel such as `\"kernels-community/relu\" = 1`, or target a runtime ≤0.16 (`--target-runtime 0.16.2`), which writes `[]`"
        )
    )]
    NoKernels {
        /// The pyproject file.
        path: String,
    },

    /// A requirement form the target runtime does not accept.
    #[error(transparent)]
    #[diagnostic(transparent)]
    UnsupportedRequirement(Box<UnsupportedRequirement>),

    /// Resolving a repository failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Resolve(#[from] ResolveError),

    /// Dependencies failed; each is reported with the repository it is about.
    #[error("{} of the {total} kernels in {manifest} could not be resolved; kernels.lock was not changed", failures.len())]
    #[diagnostic(code(kernels::lock::unresolved))]
    Unresolved {
        /// The pyproject file.
        manifest: String,
        /// How many dependencies were being resolved.
        total: usize,
        /// Every failure, in manifest order.
        #[related]
        failures: Vec<Failure>,
    },

    /// The `kernel` API does not know the repository but the `model` API does.
    #[error(
        "`{repo_id}` is not a kernel repository: the Hub's `kernel` API answers RepoNotFound, but a `model` repository `{repo_id}` exists"
    )]
    #[diagnostic(
        code(kernels::lock::model_repo_only),
        help(
            "kernels ≥0.14 load kernels only from `kernel` repositories (reference issue #632): ask the publisher to move it to a kernel repository; meanwhile lock it from the model API with `--allow-model-repos` (runtimes ≥0.14 cannot load it), or target a runtime ≤0.13 with `--target-runtime 0.13.0`"
        )
    )]
    ModelRepoOnly {
        /// The repository.
        repo_id: RepoId,
    },

    /// A dependency cycle through `kernel-depends`.
    #[error("Cyclic kernel dependency detected: {cycle}")]
    #[diagnostic(
        code(kernels::lock::cycle),
        help(
            "the kernels' `metadata.json` `kernel-depends` entries form a loop; the kernels' publishers must break it"
        )
    )]
    Cycle {
        /// The path, `a/b version 1 → c/d version 1 → a/b version 1`.
        cycle: String,
    },

    /// The publisher is not a trusted kernel publisher.
    #[error(
        "Kernel repository '{repo_id}' is not from a trusted publisher: organization `{org}` is not a trusted kernel publisher"
    )]
    #[diagnostic(
        code(kernels::lock::untrusted),
        help(
            "if you trust this code, allow the repository with `--trust {repo_id}` or `trust = [\"{repo_id}\"]` under [tool.kernels] in pyproject.toml; {why_checked}"
        )
    )]
    Untrusted {
        /// The repository.
        repo_id: RepoId,
        /// Its owner.
        org: String,
        /// Why publishers are checked, with the way out
        /// ([`LockError::why_publishers_checked`]).
        why_checked: String,
    },

    /// The trust status could not be read.
    #[error("Kernel repository '{repo_id}' could not verify publisher trust status: {source}")]
    #[diagnostic(
        code(kernels::lock::trust_unknown),
        help(
            "retry when the Hub is reachable, or allow the repository with `--trust {repo_id}` or `trust = [\"{repo_id}\"]` under [tool.kernels]"
        )
    )]
    TrustUnknown {
        /// The repository.
        repo_id: RepoId,
        /// The failed request.
        #[source]
        source: HubError,
    },

    /// A variant directory has no `metadata.json` (reference 0.17 fails too).
    #[error(
        "`build/{variant}/metadata.json` does not exist in `{repo_id}` at {commit}, so its kernel dependencies cannot be read"
    )]
    #[diagnostic(
        code(kernels::lock::missing_metadata),
        help(
            "kernels 0.17 fails the same way: lock a version whose every build variant has metadata.json, or target a runtime ≤0.16 (`--target-runtime 0.16.2`), which does not follow kernel dependencies"
        )
    )]
    MissingMetadata {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// The variant directory.
        variant: String,
    },

    /// A `metadata.json` that the model refuses (a known field malformed).
    #[error("`build/{variant}/metadata.json` of `{repo_id}` at {commit} is invalid: {problem}")]
    #[diagnostic(
        code(kernels::lock::invalid_metadata),
        help("the kernel's build metadata is malformed; report it to the kernel's publisher")
    )]
    InvalidMetadata {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// The variant directory.
        variant: String,
        /// What is wrong, naming the field.
        problem: MetadataError,
    },
}

impl LockError {
    /// Why the publisher of a repository is checked, for the help of
    /// [`LockError::Untrusted`]: the profile locks for kernels 0.17 or newer
    /// (reference 0.17.2 `lockfile.py` checks publishers). With
    /// `first_lock`, the runtime a project's first lock is written for
    /// because none was named or installed
    /// ([`crate::lock::profile::ProfileSource::FirstLock`]), which the help
    /// names with the way to lock for an older runtime.
    pub fn why_publishers_checked(first_lock: Option<RuntimeVersion>) -> String {
        match first_lock {
            None => "publishers are checked when locking for kernels 0.17 and newer (`--target-runtime 0.16.2` writes a variant-hash lock without the check)".to_owned(),
            Some(runtime) => format!(
                "publishers are checked because no kernels runtime was named or installed, so this first lock is written for kernels {runtime}, the newest runtime modelled, which checks them (as every runtime from 0.17 does); if a runtime ≤0.16 loads this project, name it with `--target-runtime VERSION` or `target-runtime` under [tool.kernels] (`0.16.2` writes a variant-hash lock without the check)"
            ),
        }
    }
}

impl From<HubError> for LockError {
    fn from(err: HubError) -> Self {
        LockError::Resolve(ResolveError::Hub(err))
    }
}

/// `Ok` without failures, else [`LockError::Unresolved`] with all of them.
pub(super) fn check_errors(failures: Vec<Failure>, manifest: &Manifest) -> Result<(), LockError> {
    if failures.is_empty() {
        return Ok(());
    }
    Err(LockError::Unresolved {
        manifest: manifest.path.display().to_string(),
        total: manifest.dependencies.len(),
        failures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn failures_keep_their_cause_and_diagnostic() {
        let manifest = Manifest {
            path: PathBuf::from("pyproject.toml"),
            dependencies: Vec::new(),
            settings: Default::default(),
            text: "".into(),
        };
        assert!(check_errors(Vec::new(), &manifest).is_ok());
        let failure = Failure {
            repo_id: "a/x".parse().unwrap(),
            error: LockError::Cycle {
                cycle: "a/x version 1 → a/x version 1".to_owned(),
            },
        };
        assert_eq!(
            miette::Diagnostic::code(&failure).unwrap().to_string(),
            "kernels::lock::cycle"
        );
        assert!(miette::Diagnostic::help(&failure).is_some());
        let err = check_errors(vec![failure], &manifest).unwrap_err();
        assert_eq!(
            err.to_string(),
            "1 of the 0 kernels in pyproject.toml could not be resolved; kernels.lock was not changed"
        );
    }
    #[test]
    fn untrusted_help_says_when_the_first_lock_rule_turned_the_check_on() {
        let untrusted = |first_lock| LockError::Untrusted {
            repo_id: "b/y".parse().unwrap(),
            org: "b".to_owned(),
            why_checked: LockError::why_publishers_checked(first_lock),
        };
        let help = |err: LockError| miette::Diagnostic::help(&err).unwrap().to_string();
        let named = help(untrusted(None));
        assert!(named.ends_with("publishers are checked when locking for kernels 0.17 and newer (`--target-runtime 0.16.2` writes a variant-hash lock without the check)"), "{named}");
        let first = help(untrusted(Some(RuntimeVersion::new(0, 19, 1))));
        assert!(
            first.starts_with("if you trust this code, allow the repository with `--trust b/y`"),
            "{first}"
        );
        assert!(first.contains("no kernels runtime was named or installed, so this first lock is written for kernels 0.19.1"), "{first}");
        assert!(
            first.contains("`--target-runtime VERSION` or `target-runtime` under [tool.kernels]"),
            "{first}"
        );
    }
}
