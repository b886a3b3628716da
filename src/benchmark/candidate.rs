//! Which other version of a kernel to benchmark: `--version N`, `--revision R`
//! or, for `--against` without a version, the newest compatible one as
//! `kernels outdated` finds it ([`crate::lock::inspect`]), else the newest.

use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::inspect::{RefAt, compatible, newest};
use crate::lock::requirement::Requirement;

/// How the version is named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Branch `vN`.
    Version(u64),
    /// A branch, tag or full commit id.
    Revision(String),
    /// What the project's requirement selects today when it is not the
    /// locked commit, else the newest version (`kernels outdated`'s two
    /// columns).
    Upgrade(Requirement),
}

/// No version matched.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CandidateError {
    /// The refs could not be read.
    #[error("cannot list the versions of {repo_id}: {source}")]
    #[diagnostic(
        code(kernels::benchmark::refs),
        help("benchmarking another version needs the Hub (it is downloaded first); retry online")
    )]
    Refs {
        /// The repository.
        repo_id: RepoId,
        /// The Hub's error.
        #[source]
        source: HubError,
    },
    /// Nothing carries that name.
    #[error("{repo_id} has no version {what}")]
    #[diagnostic(
        code(kernels::benchmark::no_such_version),
        help("`kernels variants {repo_id} --all-versions` lists its versions")
    )]
    NoSuchVersion {
        /// The repository.
        repo_id: RepoId,
        /// What was asked for.
        what: String,
    },
    /// The newest compatible and the newest version are the locked commit.
    #[error("{repo_id} has no version other than the locked one ({locked}) to benchmark against")]
    #[diagnostic(
        code(kernels::benchmark::up_to_date),
        help(
            "name one: `--against N` (branch vN); `kernels variants {repo_id} --all-versions` lists them"
        )
    )]
    UpToDate {
        /// The repository.
        repo_id: RepoId,
        /// The locked commit, short.
        locked: String,
    },
}

/// The version `pick` names among the refs of `repo_id`; for
/// [`Pick::Upgrade`], one whose commit differs from `locked`.
pub async fn resolve(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    pick: &Pick,
    locked: Option<&CommitId>,
) -> Result<RefAt, CandidateError> {
    let refs = client
        .list_refs(repo_type, repo_id)
        .await
        .map_err(|source| CandidateError::Refs {
            repo_id: repo_id.clone(),
            source,
        })?;
    let not_found = |what: String| CandidateError::NoSuchVersion {
        repo_id: repo_id.clone(),
        what,
    };
    match pick {
        Pick::Version(n) => compatible(&Requirement::Branch(*n), &refs)
            .ok_or_else(|| not_found(format!("{n} (no branch v{n})"))),
        Pick::Revision(r) => compatible(&Requirement::Revision(r.clone()), &refs)
            .ok_or_else(|| not_found(format!("`{r}`"))),
        Pick::Upgrade(requirement) => {
            let other = |at: &RefAt| Some(&at.commit) != locked;
            compatible(requirement, &refs)
                .filter(other)
                .or_else(|| newest(&refs).filter(other))
                .ok_or_else(|| CandidateError::UpToDate {
                    repo_id: repo_id.clone(),
                    locked: locked.map(|c| c.short().to_owned()).unwrap_or_default(),
                })
        }
    }
}
