//! `kernels lock --breaking` (cargo `update --breaking`): the newest major
//! version an integer requirement (`"org/name" = N`, branch `vN`) can be raised
//! to.
//!
//! A major `M` qualifies when branch `vM` exists (names read as
//! [`branch_version`] reads them), `M` is above the current `N`, and the
//! branch head has a build variant that fits: with declared targets
//! (`--cuda-capability` / `--rocm-arch`, `[tool.kernels] cuda-capabilities` /
//! `rocm-archs`), every target must have a variant that passes the fit rules
//! of [`crate::lock::fit`] (a variant whose `metadata.json` cannot be read
//! does not count); without targets, any build variant qualifies. Version
//! specifiers and revision pins are never raised.

use std::collections::BTreeMap;

use kernels_hub::HubClient;
use kernels_types::fit::Target;
use kernels_types::metadata::KernelsVersion;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, RepoType};

use crate::lock::fit::{LockedVariants, VariantState, findings};
use crate::lock::project::{LockError, MetadataCache, variant_metadata};
use crate::lock::requirement::branch_version;

/// One requirement `--breaking` raises: `repo_id` from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raise {
    /// The dependency, spelled as in `pyproject.toml`.
    pub repo_id: RepoId,
    /// The integer it requires now.
    pub from: u64,
    /// The newest major that fits.
    pub to: u64,
}

impl std::fmt::Display for Raise {
    /// `Upgraded kernels-community/activation 1 -> 2`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Upgraded {} {} -> {}", self.repo_id, self.from, self.to)
    }
}

/// What a major's branch head is checked against.
pub struct FitFor<'a> {
    /// The declared targets; empty: any build variant fits.
    pub targets: &'a [Target],
    /// The target runtime, for `kernels-minver`.
    pub runtime: Option<KernelsVersion>,
    /// Where `metadata.json` files are cached.
    pub cache: Option<&'a MetadataCache>,
}

/// The branches `vM` of `branches` with `M > current`, newest first (a later
/// duplicate of a number wins, as [`crate::lock::requirement::select_branch`]
/// has it).
fn majors_above(current: u64, branches: &[GitRefInfo]) -> Vec<(u64, &GitRefInfo)> {
    let mut by_number: BTreeMap<u64, &GitRefInfo> = BTreeMap::new();
    for branch in branches {
        if let Some(number) = branch_version(&branch.name).and_then(|n| u64::try_from(n).ok())
            && number > current
        {
            by_number.insert(number, branch);
        }
    }
    by_number.into_iter().rev().collect()
}

/// The newest major above `current` whose branch head fits `fit` (module
/// docs), or `None` when no higher major does.
///
/// # Errors
/// The refs listing's or a `build/` listing's Hub error.
pub async fn newest_major(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    current: u64,
    fit: &FitFor<'_>,
) -> Result<Option<u64>, LockError> {
    let refs = client.list_refs(repo_type, repo_id).await?;
    for (major, branch) in majors_above(current, &refs.branches) {
        let commit = &branch.target_commit;
        let read =
            variant_metadata(client, fit.cache, repo_type, repo_id, commit, fit.runtime).await?;
        let Some(read) = read.filter(|r| !r.variants.is_empty()) else {
            continue;
        };
        if fit.targets.is_empty() {
            return Ok(Some(major));
        }
        let kernel = LockedVariants {
            repo_id: repo_id.to_string(),
            label: branch.name.clone(),
            variants: read
                .variants
                .into_iter()
                .map(|(name, answer)| {
                    let state = match answer {
                        Ok(metadata) => VariantState::Read(Box::new(metadata)),
                        Err(err) => VariantState::Unread(err.to_string()),
                    };
                    (name, state)
                })
                .collect(),
        };
        if findings(&kernel, fit.targets, fit.runtime).is_empty() {
            return Ok(Some(major));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn branch(name: &str, c: char) -> GitRefInfo {
        GitRefInfo {
            name: name.to_owned(),
            git_ref: format!("refs/heads/{name}"),
            target_commit: c.to_string().repeat(40).parse().unwrap(),
        }
    }

    #[test]
    fn majors_above_are_newest_first_and_skip_other_names() {
        let branches = [
            branch("main", 'a'),
            branch("v1", 'b'),
            branch("v3", 'c'),
            branch("v2", 'd'),
            branch("v03", 'e'),
        ];
        let found: Vec<(u64, char)> = majors_above(1, &branches)
            .into_iter()
            .map(|(n, b)| (n, b.target_commit.as_str().chars().next().unwrap()))
            .collect();
        // `v03` reads as 3 and, listed later, wins over `v3`.
        assert_eq!(found, [(3, 'e'), (2, 'd')]);
        assert!(majors_above(3, &branches).is_empty());
    }

    #[test]
    fn raise_reads_as_a_change_line() {
        let raise = Raise {
            repo_id: "kernels-community/activation".parse().unwrap(),
            from: 1,
            to: 2,
        };
        assert_eq!(
            raise.to_string(),
            "Upgraded kernels-community/activation 1 -> 2"
        );
    }
}
