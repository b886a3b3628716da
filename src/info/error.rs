//! Why `kernels info` cannot describe a kernel.

use kernels_hub::HubError;
use kernels_types::repo_id::RepoId;

use crate::lock::project::LockError;

/// Why a kernel cannot be described.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum InfoError {
    /// The revision has no `build/<variant>/` the runtime can use (exit 1, as
    /// reference 0.17.2).
    #[error("No build variants found in {repo_id} (revision: {revision})")]
    #[diagnostic(
        code(kernels::info::no_variants),
        help(
            "a kernel repository holds one `build/<variant>/` directory per build; `kernels variants {repo_id} --all-versions` lists the versions that have some"
        )
    )]
    NoVariants {
        /// The repository.
        repo_id: RepoId,
        /// The revision looked at.
        revision: String,
    },

    /// A local directory without a usable `build/<variant>/`.
    #[error("No build variants found in: {}", build_dir.display())]
    #[diagnostic(
        code(kernels::info::no_local_variants),
        help(
            "point at a kernel repository holding `build/<variant>/` directories (what kernel-builder's `build-and-copy` writes)"
        )
    )]
    NoLocalVariants {
        /// The `build` directory looked at.
        build_dir: std::path::PathBuf,
    },

    /// `--version N` names no `vN` branch.
    #[error(
        "version {version} of `{repo_id}` not found{}; available versions: {}",
        if *offline { " in the cache (offline)" } else { "" },
        if available.is_empty() { "none".to_owned() } else { available.join(", ") }
    )]
    #[diagnostic(
        code(kernels::info::no_version),
        help(
            "`kernels variants {repo_id} --all-versions` lists the versions; give one of them, or `--revision` for a branch, tag or commit"
        )
    )]
    VersionNotFound {
        /// The repository.
        repo_id: RepoId,
        /// The version asked for.
        version: u64,
        /// The `vN` versions there are, ascending.
        available: Vec<String>,
        /// Whether only the cache was asked.
        offline: bool,
    },

    /// Offline, and the cache does not hold the revision.
    #[error("`{revision}` of `{repo_id}` is not in the cache, and offline mode is on")]
    #[diagnostic(
        code(kernels::info::not_cached),
        help(
            "run `kernels info {repo_id}` once online (it stores what it reads in the cache), or pass a commit the cache holds with `--revision`"
        )
    )]
    NotCached {
        /// The repository.
        repo_id: RepoId,
        /// The revision asked for (or `main`, the default).
        revision: String,
    },

    /// A Hub request failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),

    /// Reading the variants' `metadata.json` from the Hub failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Metadata(Box<LockError>),

    /// A local `build` directory cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    #[diagnostic(code(kernels::info::io))]
    Io {
        /// The directory.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl From<LockError> for InfoError {
    fn from(err: LockError) -> Self {
        InfoError::Metadata(Box::new(err))
    }
}
