//! Revisions written as abbreviated commits (`{ revision = "2359bfb" }`).
//!
//! Such a pin is always accepted, as cargo and uv accept a short `rev` of a
//! git dependency: the Hub is asked for the revision first (a branch or tag of
//! that name wins, and a Hub that resolves prefixes answers with the full
//! commit); when it does not know it, the commit is looked for among the
//! targets of the repository's refs and the history of each branch (the
//! commits API). Exactly one commit must start with the digits; none or
//! several is an error that names the repository and the fix (write more
//! digits, or the full commit).

use std::collections::BTreeSet;

use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

/// Why an abbreviated commit does not name one commit of a repository.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ShortCommitError {
    /// No commit reachable from a ref starts with the digits.
    #[error("no commit of `{repo_id}` starts with `{revision}` (revision in pyproject.toml)")]
    #[diagnostic(
        code(kernels::resolve::unknown_short_commit),
        help(
            "no branch or tag is named `{revision}` and no commit on a branch or tag starts with it; write the full 40-digit commit, or a branch or tag name (`kernels variants {repo_id} --all-versions` lists its version branches)"
        )
    )]
    NotFound {
        /// The repository.
        repo_id: RepoId,
        /// The revision as written.
        revision: String,
    },

    /// Several commits start with the digits.
    #[error("`{revision}` names several commits of `{repo_id}`: {}", candidates.iter().map(CommitId::as_str).collect::<Vec<_>>().join(", "))]
    #[diagnostic(
        code(kernels::resolve::ambiguous_short_commit),
        help("write more digits of the commit in pyproject.toml, or the full 40-digit commit")
    )]
    Ambiguous {
        /// The repository.
        repo_id: RepoId,
        /// The revision as written.
        revision: String,
        /// Every commit that starts with it, sorted.
        candidates: Vec<CommitId>,
    },

    /// A Hub request failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),
}

/// Whether `revision` could be an abbreviated commit: 7 to 39 hex digits, any
/// case (a full commit is resolved by the Hub itself).
pub fn is_short_commit(revision: &str) -> bool {
    revision.len() < 40 && CommitId::is_abbreviation(revision)
}

/// The one commit of `repo_id` that `revision` (an abbreviation, see
/// [`is_short_commit`]) abbreviates, found among the refs' targets and every
/// branch's history (one refs request, then one commits listing per branch).
///
/// # Errors
/// [`ShortCommitError::NotFound`] when no commit starts with it,
/// [`ShortCommitError::Ambiguous`] when several do, and the Hub's errors.
pub async fn expand(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    revision: &str,
) -> Result<CommitId, ShortCommitError> {
    let prefix = revision.to_ascii_lowercase();
    let matches = |c: &CommitId| c.as_str().starts_with(&prefix);
    let refs = client.list_refs(repo_type, repo_id).await?;
    let mut found: BTreeSet<CommitId> = refs
        .branches
        .iter()
        .chain(&refs.tags)
        .chain(&refs.converts)
        .map(|r| r.target_commit.clone())
        .filter(matches)
        .collect();
    for branch in &refs.branches {
        let history = client
            .list_commits_until(repo_type, repo_id, branch.target_commit.as_str(), |_| false)
            .await?;
        found.extend(history.into_iter().map(|c| c.id).filter(matches));
    }
    let mut found = found.into_iter();
    match (found.next(), found.next()) {
        (Some(commit), None) => Ok(commit),
        (None, _) => Err(ShortCommitError::NotFound {
            repo_id: repo_id.clone(),
            revision: revision.to_owned(),
        }),
        (Some(first), Some(second)) => Err(ShortCommitError::Ambiguous {
            repo_id: repo_id.clone(),
            revision: revision.to_owned(),
            candidates: [first, second].into_iter().chain(found).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::is_short_commit;

    #[test]
    fn short_commits_are_7_to_39_hex_digits() {
        assert!(is_short_commit("2359bfb"));
        assert!(is_short_commit("2359BFB0"));
        assert!(!is_short_commit("2359bf"));
        assert!(!is_short_commit("main"));
        assert!(!is_short_commit(&"a".repeat(40)));
    }
}
