//! Where the variant files come from: a local snapshot directory or a
//! snapshot already in the Hugging Face cache.

use std::path::{Path, PathBuf};

use crate::install::{
    DEFAULT_CONCURRENCY, DownloadError, DownloadOptions, LockedKernel, Reporter, download,
};
use crate::variant::VariantSelection;
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::BuildVariant;
use kernels_types::wire::RepoType;

use crate::wheel::error::WheelError;

/// A revision of a kernel repository on the Hub.
#[derive(Debug, Clone, Copy)]
pub struct HubRevision<'a> {
    /// The repository.
    pub repo_id: &'a RepoId,
    /// Branch, tag or commit.
    pub revision: &'a str,
    /// Repository type (API path and cache folder prefix).
    pub repo_type: RepoType,
}

/// For a missing revision `v<version>`: the versions the repository has
/// (`v<version>` tags and `v<N>` branches, ascending) and the closest one, as
/// `kernels lock` reports them. `None` when the revision is not of that form
/// or the refs cannot be listed.
async fn no_such_version(client: &HubClient, at: &HubRevision<'_>) -> Option<WheelError> {
    use crate::lock::requirement::{Requirement, select_tag, tag_version};
    let version = tag_version(at.revision)?;
    let refs = client.list_refs(at.repo_type, at.repo_id).await.ok()?;
    let spec = format!("=={version}").parse().ok()?;
    let refs: Vec<_> = refs.tags.into_iter().chain(refs.branches).collect();
    let no_match = select_tag(&Requirement::Pep440(spec), &refs).err()?;
    let mut help = if no_match.available.is_empty() {
        "the repository has no `v<version>` tags or branches; pass `--revision`".to_owned()
    } else {
        format!("available versions: {}", no_match.available.join(", "))
    };
    if let Some(closest) = &no_match.closest {
        help.push_str(&format!("; closest: {closest}"));
    }
    Some(WheelError::NoSuchVersion {
        repo_id: at.repo_id.to_string(),
        revision: at.revision.to_owned(),
        help,
    })
}

/// A kernel snapshot on disk: a directory with `build/<variant>/…`.
#[derive(Debug, Clone)]
pub struct Snapshot {
    build_dir: PathBuf,
    trust_root: PathBuf,
}

impl Snapshot {
    /// A snapshot rooted at `dir` (the directory containing `build/`).
    ///
    /// Files may be symlinks as long as they resolve inside `dir`, or, when
    /// `dir` is a Hub cache snapshot (`…/snapshots/<commit>`), inside that
    /// repository's cache folder, where the `blobs/` they point at live.
    pub fn from_dir(dir: &Path) -> Result<Self, WheelError> {
        let build_dir = dir.join("build");
        if !build_dir.is_dir() {
            return Err(WheelError::NoBuildDir {
                dir: dir.to_path_buf(),
            });
        }
        let dir = fs_err::canonicalize(dir)?;
        let trust_root = kernels_cache::snapshot_repo_dir(&dir)
            .unwrap_or(&dir)
            .to_path_buf();
        Ok(Snapshot {
            build_dir: dir.join("build"),
            trust_root,
        })
    }

    /// The snapshot of `repo_id` at `revision` in the Hub cache rooted at
    /// `cache_dir`. `revision` is a 40-hex commit or a branch or tag name
    /// resolved through `refs/`. Both cache folder prefixes are tried:
    /// `kernels--owner--name` (reference 0.14+) first, then
    /// `models--owner--name` (≤0.13).
    pub fn from_cache(
        cache_dir: &Path,
        repo_id: &RepoId,
        revision: &str,
    ) -> Result<Self, WheelError> {
        let cache = HubCache::new(cache_dir);
        for repo_type in [RepoType::Kernel, RepoType::Model] {
            let repo = cache.repo(repo_id, repo_type);
            let commit = match revision.parse::<CommitId>() {
                Ok(commit) => Some(commit),
                Err(_) => repo.read_ref(revision),
            };
            let Some(commit) = commit else { continue };
            let snapshot = repo.snapshot_dir(commit.as_str());
            if snapshot.join("build").is_dir() {
                return Self::from_dir(&snapshot);
            }
        }
        Err(WheelError::NotCached {
            repo_id: repo_id.to_string(),
            revision: revision.to_owned(),
            cache_dir: cache_dir.to_path_buf(),
        })
    }

    /// The commit `at.revision` names: itself for a full commit id, else
    /// asked of the Hub.
    pub async fn resolve(client: &HubClient, at: &HubRevision<'_>) -> Result<CommitId, WheelError> {
        if CommitId::is_canonical(at.revision)
            && let Ok(commit) = at.revision.parse()
        {
            return Ok(commit);
        }
        let info = match client
            .repo_info(at.repo_type, at.repo_id, at.revision)
            .await
        {
            Ok(info) => info,
            Err(err @ kernels_hub::HubError::RevisionNotFound { .. }) => {
                return Err(no_such_version(client, at)
                    .await
                    .unwrap_or_else(|| DownloadError::from(err).into()));
            }
            Err(err) => return Err(DownloadError::from(err).into()),
        };
        Ok(info.sha)
    }

    /// Downloads `build/` of `at.repo_id` at `commit` (what `at.revision`
    /// resolved to, see [`Snapshot::resolve`]) into the Hub cache and returns
    /// that snapshot. A revision name gets its `refs/` file, as
    /// `huggingface_hub` writes it. `variants` limits the download to those
    /// directories (empty: every directory under `build/`). Files already in
    /// the cache are verified and not fetched again.
    pub async fn fetch(
        client: &HubClient,
        cache: &HubCache,
        at: &HubRevision<'_>,
        commit: &CommitId,
        variants: &[String],
        progress: &dyn Reporter,
    ) -> Result<Self, WheelError> {
        let kernel = LockedKernel {
            repo_id: at.repo_id.clone(),
            commit: commit.clone(),
            variants: None,
        };
        let options = DownloadOptions {
            repo_type: at.repo_type,
            selection: if variants.is_empty() {
                VariantSelection::All
            } else {
                VariantSelection::Named(variants.to_vec())
            },
            concurrency: DEFAULT_CONCURRENCY,
            refs: Vec::new(),
            refresh: false,
            fit: crate::variant::FitPolicy::unchecked(),
            trust: None,
            runtime_receipts: None,
        };
        let mut summary = download(
            client,
            cache,
            std::slice::from_ref(&kernel),
            &options,
            progress,
        )
        .await;
        if let Some(failure) = summary.failed.pop() {
            return Err(failure.error.into());
        }
        let repo = cache.repo(at.repo_id, at.repo_type);
        if !CommitId::is_canonical(at.revision) {
            repo.write_ref(at.revision, commit.as_str())
                .map_err(DownloadError::from)?;
        }
        Self::from_dir(&repo.snapshot_dir(commit.as_str()))
    }

    /// The `build/` directory.
    pub fn build_dir(&self) -> &Path {
        &self.build_dir
    }

    /// The directory every packed file must resolve into.
    pub fn trust_root(&self) -> &Path {
        &self.trust_root
    }

    /// The subdirectories of `build/`, sorted by name (files are ignored).
    pub fn variants(&self) -> Result<Vec<BuildVariant>, WheelError> {
        let mut variants = Vec::new();
        for entry in fs_err::read_dir(&self.build_dir)? {
            let entry = entry?;
            if !entry.path().is_dir() {
                continue;
            }
            let name = entry.file_name();
            let name = name.to_str().ok_or_else(|| WheelError::UnsafePath {
                path: entry.path(),
                reason: "its name is not valid UTF-8".to_owned(),
            })?;
            variants.push(BuildVariant::parse(name));
        }
        variants.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(variants)
    }
}
