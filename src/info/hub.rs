//! A Hub repository's revision and its variants: online (refs, the revision's
//! commit, one listing of `build/` and the variants' `metadata.json`, whose
//! blobs the Hub cache keeps), or offline from what the cache's snapshots hold
//! (what `kernels download`, `huggingface_hub` or the runtime stored).

use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::metadata::KernelsVersion;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, RepoType};

use super::{InfoError, KernelInfo, MetadataState, Origin, RevisionChoice};
use crate::lock::project::{LockError, MetadataCache, variant_metadata_with};
use crate::lock::requirement::{branch_version, select_branch};

/// A chosen revision: its name, its commit when the refs said it, and a
/// warning when a newer version exists.
struct Chosen {
    revision: String,
    commit: Option<CommitId>,
    warning: Option<String>,
}

/// Chooses the revision among the `vN` branches `branches` (reference 0.17.2
/// `kernels info`: `--version N` is branch `vN`, with a warning when a higher
/// one exists; nothing given is the highest `vN`, else `main`).
fn choose(
    choice: &RevisionChoice,
    branches: &[GitRefInfo],
    repo_id: &RepoId,
    offline: bool,
) -> Result<Chosen, InfoError> {
    match choice {
        RevisionChoice::Revision(revision) => Ok(Chosen {
            revision: revision.clone(),
            commit: revision
                .parse()
                .ok()
                .filter(|_| CommitId::is_canonical(revision)),
            warning: None,
        }),
        RevisionChoice::Version(n) => {
            let selected =
                select_branch(*n, branches).map_err(|no| InfoError::VersionNotFound {
                    repo_id: repo_id.clone(),
                    version: *n,
                    available: no.available,
                    offline,
                })?;
            let warning = selected
                .latest
                .filter(|latest| latest.parse::<u64>().is_ok_and(|l| l > *n))
                .map(|latest| {
                    format!("you are using version {n} of `{repo_id}`, but version {latest} is available")
                });
            Ok(Chosen {
                revision: selected.git_ref.name,
                commit: Some(selected.git_ref.target_commit),
                warning,
            })
        }
        RevisionChoice::Latest => {
            let newest = branches
                .iter()
                .filter_map(|b| branch_version(&b.name).map(|n| (n, b)))
                .max_by_key(|(n, _)| *n);
            Ok(match newest {
                Some((_, branch)) => Chosen {
                    revision: branch.name.clone(),
                    commit: Some(branch.target_commit.clone()),
                    warning: None,
                },
                None => Chosen {
                    revision: "main".to_owned(),
                    commit: None,
                    warning: None,
                },
            })
        }
    }
}

/// Describes `repo_id` from the Hub at the revision `choice` names, reading
/// the variants' `metadata.json` through `cache` (a blob already there costs
/// no request; a fetched one is stored, best effort). Nothing is linked into
/// a snapshot and no ref is written: a snapshot folder is what an offline
/// runtime takes for a downloaded variant, and `refs/` are what the offline
/// commands resolve versions by, so both stay as `download` left them. Returns the description
/// and the warnings to show.
///
/// # Errors
/// [`InfoError::VersionNotFound`], [`InfoError::NoVariants`], and the Hub's
/// errors (refs, the revision, the listing, a `metadata.json` fetch).
pub async fn describe_hub(
    client: &HubClient,
    cache: &HubCache,
    repo_type: RepoType,
    repo_id: &RepoId,
    choice: &RevisionChoice,
    runtime: Option<KernelsVersion>,
) -> Result<(KernelInfo, Vec<String>), InfoError> {
    let branches = match choice {
        RevisionChoice::Revision(_) => Vec::new(),
        _ => client.list_refs(repo_type, repo_id).await?.branches,
    };
    let chosen = choose(choice, &branches, repo_id, false)?;
    let commit = match chosen.commit {
        Some(commit) => commit,
        None => {
            client
                .repo_info(repo_type, repo_id, &chosen.revision)
                .await?
                .sha
        }
    };
    let store = MetadataCache::new(cache.clone());
    let read = variant_metadata_with(
        client,
        Some(&store),
        repo_type,
        repo_id,
        &commit,
        false,
        runtime,
    )
    .await;
    store.flush().await;
    let read = read?;
    let warnings: Vec<String> = chosen.warning.into_iter().collect();
    let (dirs, skipped) = match read {
        Some(read) => {
            let dirs: Vec<(String, MetadataState)> = read
                .variants
                .into_iter()
                .map(|(name, answer)| (name, state(answer)))
                .collect();
            (dirs, read.invalid.into_iter().collect())
        }
        None => (Vec::new(), Vec::new()),
    };
    let origin = Origin::Hub {
        repo_id: repo_id.clone(),
        revision: chosen.revision.clone(),
        commit: commit.clone(),
    };
    let info = KernelInfo::from_dirs(origin, dirs, skipped);
    if info.variants.is_empty() {
        return Err(InfoError::NoVariants {
            repo_id: repo_id.clone(),
            revision: chosen.revision,
        });
    }
    Ok((info, warnings))
}

/// A variant's answer as a [`MetadataState`].
fn state(answer: Result<kernels_types::metadata::Metadata, LockError>) -> MetadataState {
    match answer {
        Ok(metadata) => MetadataState::Read(Box::new(metadata)),
        Err(LockError::MissingMetadata { .. }) => MetadataState::Missing,
        Err(LockError::InvalidMetadata { problem, .. }) => {
            MetadataState::Invalid(problem.to_string())
        }
        Err(other) => MetadataState::Invalid(other.to_string()),
    }
}

/// Describes `repo_id` from the Hub cache alone: the revision from the
/// `refs/` of its `kernel` and `model` folders (as 0.17.2 reads them
/// offline), the variants and their `metadata.json` from the snapshot of its
/// commit. Only the variants the cache holds are seen.
///
/// # Errors
/// [`InfoError::VersionNotFound`] (offline), [`InfoError::NotCached`] when
/// no folder holds the revision's snapshot, [`InfoError::NoVariants`].
pub fn describe_cached(
    cache: &HubCache,
    repo_id: &RepoId,
    choice: &RevisionChoice,
    runtime: Option<KernelsVersion>,
) -> Result<(KernelInfo, Vec<String>), InfoError> {
    let folders = [RepoType::Kernel, RepoType::Model].map(|t| cache.repo(repo_id, t));
    // Later folders win on a name both hold, as in 0.17.2.
    let mut branches: Vec<GitRefInfo> = Vec::new();
    for folder in &folders {
        for r in folder.refs() {
            if branch_version(&r.name).is_some() {
                branches.retain(|b| b.name != r.name);
                branches.push(GitRefInfo {
                    git_ref: format!("refs/heads/{}", r.name),
                    name: r.name,
                    target_commit: r.commit,
                });
            }
        }
    }
    let chosen = choose(choice, &branches, repo_id, true)?;
    let not_cached = || InfoError::NotCached {
        repo_id: repo_id.clone(),
        revision: chosen.revision.clone(),
    };
    let found = folders.iter().find_map(|folder| {
        let commit = chosen
            .commit
            .clone()
            .or_else(|| folder.read_ref(&chosen.revision))?;
        folder
            .snapshot_dir(commit.as_str())
            .is_dir()
            .then_some((folder, commit))
    });
    let (folder, commit) = found.ok_or_else(not_cached)?;
    let origin = Origin::Hub {
        repo_id: repo_id.clone(),
        revision: chosen.revision.clone(),
        commit: commit.clone(),
    };
    let info = super::describe_dir(
        &folder.snapshot_dir(commit.as_str()),
        origin,
        Some(folder),
        runtime,
    )?;
    if info.variants.is_empty() {
        return Err(InfoError::NoVariants {
            repo_id: repo_id.clone(),
            revision: chosen.revision,
        });
    }
    Ok((info, chosen.warning.into_iter().collect()))
}
