//! `kernels verify-signature REPO VERSION`: the variants of a kernel
//! version fetched from the Hub and verified, as reference 0.17.2 does
//! (version `N` is the branch `vN`; the variant for the local environment,
//! or every variant). The reference downloads into the Hub cache; here the
//! files go to a scratch directory the caller removes, so that a variant
//! that fails verification never enters the cache, and nothing beyond the
//! Hub's own blob names is checked while fetching: the verdict is
//! `verify_variant`'s alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use kernels_cache::HubCache;
use kernels_hub::{HubClient, HubError};
use kernels_trust::{Outcome, SignerPolicy, TrustRoot, verify_variant};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{RepoType, TreeEntry};

use crate::install::fetch::{Source, ensure_blob};
use crate::install::plan::entry_digest;
use crate::install::{DownloadError, NoReporter};
use crate::lock::requirement::Requirement;
use crate::lock::resolver::{ResolveError, Resolver};
use crate::variant::{VariantError, VariantSelection};

/// The verified variants of one kernel version.
#[derive(Debug, Clone)]
pub struct RemoteCheck {
    /// The commit of the branch `vN`.
    pub commit: CommitId,
    /// Each chosen variant's name and outcome, in selection order.
    pub variants: Vec<(String, Outcome)>,
}

/// Why a kernel version could not be fetched.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RemoteError {
    /// The version does not resolve to a commit.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Resolve(#[from] ResolveError),
    /// The listing failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),
    /// No variant fits the environment, or it cannot be detected.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] VariantError),
    /// A file could not be fetched.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Download(#[from] DownloadError),
    /// The listing names an unsafe path.
    #[error("{repo_id}@{commit}: the Hub lists an unsafe path `{path}`: {reason}")]
    #[diagnostic(
        code(kernels::verify_signature::unsafe_path),
        help("the repository cannot be verified; report it to its owner")
    )]
    UnsafePath {
        /// Repository.
        repo_id: RepoId,
        /// Commit.
        commit: CommitId,
        /// The path.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// The commit has no `build/` variants.
    #[error("{repo_id}@{commit} (version {version}) has no build variants under `build/`")]
    #[diagnostic(
        code(kernels::verify_signature::no_builds),
        help(
            "`kernels variants {repo_id} --all-versions` lists the versions; choose one that has builds"
        )
    )]
    NoBuilds {
        /// Repository.
        repo_id: RepoId,
        /// Commit.
        commit: CommitId,
        /// The version asked for.
        version: u64,
    },
}

/// Resolves version `version` of `repo_id`, fetches the variants `selection`
/// chooses into `scratch` (a cache layout) and verifies each against `root`
/// and `policy`.
pub async fn verify_version(
    client: &HubClient,
    repo_id: &RepoId,
    version: u64,
    selection: &VariantSelection,
    (root, policy): (&TrustRoot, &SignerPolicy),
    scratch: &Path,
) -> Result<RemoteCheck, RemoteError> {
    let resolver = Resolver::new(client.clone(), RepoType::Kernel);
    let commit = resolver
        .resolve_commit(repo_id, &Requirement::Branch(version))
        .await?
        .commit;
    let entries = client
        .list_tree(RepoType::Kernel, repo_id, commit.as_str(), "build", true)
        .await?;
    kernels_types::repo_path::check_entries(&entries).map_err(|(path, reason)| {
        RemoteError::UnsafePath {
            repo_id: repo_id.clone(),
            commit: commit.clone(),
            path,
            reason: reason.to_string(),
        }
    })?;
    let by_variant = variant_files(&entries);
    if by_variant.is_empty() {
        return Err(RemoteError::NoBuilds {
            repo_id: repo_id.clone(),
            commit,
            version,
        });
    }
    let available: BTreeSet<String> = by_variant.keys().cloned().collect();
    let chosen = selection.choose(repo_id, &commit, &available)?;
    let cache = HubCache::new(scratch);
    let repo = cache.repo(repo_id, RepoType::Kernel);
    let mut variants = Vec::new();
    for variant in chosen {
        for entry in by_variant.get(&variant).into_iter().flatten() {
            fetch(client, &repo, repo_id, &commit, entry).await?;
        }
        let dir = repo
            .snapshot_dir(commit.as_str())
            .join("build")
            .join(&variant);
        variants.push((variant, verify_variant(&dir, root, policy)));
    }
    Ok(RemoteCheck { commit, variants })
}

/// The files of `entries` (a listing of `build/`) per variant directory.
fn variant_files(entries: &[TreeEntry]) -> BTreeMap<String, Vec<&TreeEntry>> {
    let mut out: BTreeMap<String, Vec<&TreeEntry>> = BTreeMap::new();
    for entry in entries.iter().filter(|e| e.is_file()) {
        let mut parts = entry.path.splitn(3, '/');
        if let (Some("build"), Some(variant), Some(_)) = (parts.next(), parts.next(), parts.next())
        {
            out.entry(variant.to_owned()).or_default().push(entry);
        }
    }
    out
}

/// Fetches one file into the scratch cache and links it into the snapshot.
async fn fetch(
    client: &HubClient,
    repo: &kernels_cache::RepoCache,
    repo_id: &RepoId,
    commit: &CommitId,
    entry: &TreeEntry,
) -> Result<(), DownloadError> {
    let Some(blob) = entry_digest(entry) else {
        return Err(DownloadError::Internal(format!(
            "the Hub lists `{}` without a usable object id",
            entry.path
        )));
    };
    let source = Source {
        client,
        repo_type: RepoType::Kernel,
        repo_id,
        commit: commit.as_str(),
        path: &entry.path,
        expected: &[],
    };
    ensure_blob(repo, &blob, &source, &NoReporter).await?;
    repo.link(commit.as_str(), &entry.path, &blob.etag())?;
    Ok(())
}
