//! `kernels mirror`: copying what a project locks (or named repositories) from
//! a Hub endpoint into a mirror directory that `kernels serve` serves.
//!
//! Two phases. **Plan** (metadata only, nothing written): per repository,
//! its type (kernel, also served as model?), the commits to hold (locked
//! commits, the commits of the refs kept), the refs (release tags, `vN`
//! branches, the default branch, at their upstream commits) and, for each
//! commit not yet in the mirror, its recursive file listing and its nearest
//! mirrored ancestor. A repository or revision that does not exist fails
//! here. **Write**: every file of a new commit is fetched into the writer's
//! content store and verified as `kernels download` verifies it (size, and
//! sha256 for LFS files or the git blob sha1 otherwise; resumable), then
//! [`kernels_serve::writer`] links it into the commit's folder and renames
//! the folder into place; `repo.toml` last. Before a commit is written, each
//! variant whose `metadata.json` has a `digest` is compared with its fetched
//! files ([`crate::install::digest`]): a mirror never takes in a variant that
//! `kernels download` would refuse. Every file is copied, the variants'
//! `metadata.json.sigstore` signature bundles included, so the mirror keeps
//! the proof a client verifies. Commits already in the mirror are
//! neither listed nor fetched again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use futures_util::future::join_all;
use tokio::sync::Semaphore;

use crate::install::plan::entry_digest;
use crate::install::{DownloadError, Fetched, NoReporter, Source, ensure_blob};
use crate::lock::format::kernel_locks::KernelVersion;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile, LockfileError};
use crate::lock::manifest::{MANIFEST_FILE_NAME, Manifest, ManifestError};
use crate::lock::resolver::Resolver;
use kernels_cache::{HubCache, RepoCache};
use kernels_hub::{HubClient, HubError};
use kernels_serve::writer::{MirrorWriter, NewCommit, NewFile, RepoUpdate, WriteError};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefs, RepoType, TreeEntry};
use kernels_types::{BlobId, CommitId};

/// Default number of files fetched at the same time.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What to mirror.
#[derive(Debug, Clone)]
pub enum MirrorSource {
    /// What `<dir>/kernels.lock` pins, plus the refs its requirements resolve through.
    Project(PathBuf),
    /// Named repositories.
    Repos {
        /// `owner/name` with an optional revision.
        repos: Vec<RepoSpec>,
        /// Every branch and tag instead of the named revision / default branch.
        all_refs: bool,
    },
}

/// `REPO[@REVISION]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    /// The repository.
    pub repo_id: RepoId,
    /// A branch, tag or commit; `None` means the default branch.
    pub revision: Option<String>,
}

impl std::str::FromStr for RepoSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (repo, revision) = match s.split_once('@') {
            Some((repo, rev)) if !rev.is_empty() => (repo, Some(rev.to_owned())),
            Some(_) => return Err(format!("`{s}` has an empty revision after `@`")),
            None => (s, None),
        };
        let repo_id = repo.parse().map_err(|err| format!("`{repo}`: {err}"))?;
        Ok(RepoSpec { repo_id, revision })
    }
}

/// What one repository got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoReport {
    /// The repository.
    pub repo_id: RepoId,
    /// Its primary type in the mirror.
    pub repo_type: RepoType,
    /// Commits added by this run.
    pub new_commits: usize,
    /// Commits that were already in the mirror.
    pub kept_commits: usize,
    /// Branches and tags written.
    pub refs: usize,
    /// Distinct files fetched over the network.
    pub fetched_files: usize,
    /// Bytes received.
    pub fetched_bytes: u64,
}

/// Why mirroring failed. Nothing is half-written: see [`kernels_serve::writer`].
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum MirrorError {
    /// A Hub request failed (includes an unknown repository or revision).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),

    /// Fetching or verifying a file failed.
    #[error("{repo_id}@{commit}: {source}")]
    #[diagnostic(code(kernels::mirror::fetch))]
    Fetch {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// Why.
        #[source]
        #[diagnostic_source]
        source: DownloadError,
    },

    /// Writing the mirror failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Write(#[from] WriteError),

    /// `kernels.lock` cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lock(#[from] LockfileError),

    /// `pyproject.toml` cannot be used.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Manifest(#[from] ManifestError),

    /// The project has no lock.
    #[error("{} has no kernels.lock", .0.display())]
    #[diagnostic(
        code(kernels::mirror::no_lock),
        help(
            "run `kernels lock` in the project first, or name repositories: `kernels mirror owner/name --output DIR`"
        )
    )]
    NoLock(PathBuf),

    /// A listing has an entry without a usable digest.
    #[error("the listing of {repo_id}@{commit} has no valid digest for `{path}`")]
    #[diagnostic(code(kernels::mirror::invalid_listing))]
    InvalidListing {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// The entry.
        path: String,
    },

    /// A worker task failed.
    #[error("internal error: {0}")]
    #[diagnostic(code(kernels::mirror::internal))]
    Internal(String),
}

/// One repository's plan.
#[derive(Debug)]
struct RepoPlan {
    repo_id: RepoId,
    kind: RepoType,
    also: Vec<RepoType>,
    refs: GitRefs,
    commits: BTreeSet<CommitId>,
    branches: BTreeMap<String, String>,
    tags: BTreeMap<String, String>,
    default_branch: String,
}

impl RepoPlan {
    fn add_ref(&mut self, name: &str) -> bool {
        let name = name
            .strip_prefix("refs/heads/")
            .or_else(|| name.strip_prefix("refs/tags/"))
            .unwrap_or(name);
        if let Some(b) = self.refs.branches.iter().find(|b| b.name == name) {
            self.commits.insert(b.target_commit.clone());
            self.branches
                .insert(b.name.clone(), b.target_commit.to_string());
            return true;
        }
        if let Some(t) = self.refs.tags.iter().find(|t| t.name == name) {
            self.commits.insert(t.target_commit.clone());
            self.tags
                .insert(t.name.clone(), t.target_commit.to_string());
            return true;
        }
        false
    }

    /// Adds every upstream ref pointing at a commit of the plan.
    fn add_refs_at_commits(&mut self) {
        let names: Vec<String> = self
            .refs
            .branches
            .iter()
            .chain(&self.refs.tags)
            .filter(|r| self.commits.contains(&r.target_commit))
            .map(|r| r.git_ref.clone())
            .collect();
        for name in names {
            self.add_ref(&name);
        }
    }
}

/// Upstream metadata for a repository: its primary type (kernel first), and
/// whether it also answers as the other type.
async fn probe(client: &HubClient, repo_id: &RepoId) -> Result<RepoPlan, MirrorError> {
    let (kind, refs) = match client.list_refs(RepoType::Kernel, repo_id).await {
        Ok(refs) => (RepoType::Kernel, refs),
        Err(err @ HubError::RepoNotFound { .. }) => {
            match client.list_refs(RepoType::Model, repo_id).await {
                Ok(refs) => (RepoType::Model, refs),
                // Neither type: report the kernel lookup.
                Err(HubError::RepoNotFound { .. }) => return Err(err.into()),
                Err(other) => return Err(other.into()),
            }
        }
        Err(err) => return Err(err.into()),
    };
    let mut also = Vec::new();
    if kind == RepoType::Kernel && client.list_refs(RepoType::Model, repo_id).await.is_ok() {
        also.push(RepoType::Model);
    }
    let default_branch =
        if refs.branches.iter().any(|b| b.name == "main") || refs.branches.is_empty() {
            "main".to_owned()
        } else {
            refs.branches[0].name.clone()
        };
    let mut plan = RepoPlan {
        repo_id: repo_id.clone(),
        kind,
        also,
        refs,
        commits: BTreeSet::new(),
        branches: BTreeMap::new(),
        tags: BTreeMap::new(),
        default_branch: default_branch.clone(),
    };
    plan.add_ref(&default_branch);
    Ok(plan)
}

async fn plan_for<'a>(
    plans: &'a mut Vec<RepoPlan>,
    client: &HubClient,
    repo_id: &RepoId,
) -> Result<&'a mut RepoPlan, MirrorError> {
    if let Some(i) = plans.iter().position(|p| &p.repo_id == repo_id) {
        return Ok(&mut plans[i]);
    }
    plans.push(probe(client, repo_id).await?);
    Ok(plans.last_mut().expect("just pushed"))
}

async fn plan_project(client: &HubClient, dir: &Path) -> Result<Vec<RepoPlan>, MirrorError> {
    let lock_path = dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(MirrorError::NoLock(dir.to_owned()));
    }
    let lockfile = Lockfile::read(&lock_path)?;
    let mut plans: Vec<RepoPlan> = Vec::new();
    for kernel in lockfile.locked_kernels(&lock_path)? {
        let plan = plan_for(&mut plans, client, &kernel.repo_id).await?;
        // The locked commit must exist upstream.
        client
            .repo_info(plan.kind, &kernel.repo_id, kernel.commit.as_str())
            .await?;
        plan.commits.insert(kernel.commit);
    }
    // 0.17 locks name each entry's version branch or revision.
    if let Lockfile::KernelLocks(locks) = &lockfile {
        for (dep, _) in locks.iter() {
            let Ok(repo_id) = dep.repo_id.parse::<RepoId>() else {
                continue;
            };
            let plan = plan_for(&mut plans, client, &repo_id).await?;
            match &dep.version {
                KernelVersion::Version(n) => plan.add_ref(&format!("v{n}")),
                KernelVersion::Revision(r) => plan.add_ref(r),
            };
        }
    }
    // The refs the manifest's requirements resolve through, at their upstream commits.
    if dir.join(MANIFEST_FILE_NAME).is_file() {
        let manifest = Manifest::read(dir)?;
        for dep in &manifest.dependencies {
            let plan = plan_for(&mut plans, client, &dep.repo_id).await?;
            let resolver = Resolver::new(client.clone(), plan.kind);
            if let Ok(resolved) = resolver
                .resolve_commit(&dep.repo_id, &dep.requirement)
                .await
            {
                plan.add_ref(&resolved.chosen);
            }
        }
    }
    for plan in &mut plans {
        plan.add_refs_at_commits();
    }
    Ok(plans)
}

async fn plan_repos(
    client: &HubClient,
    specs: &[RepoSpec],
    all_refs: bool,
) -> Result<Vec<RepoPlan>, MirrorError> {
    let mut plans: Vec<RepoPlan> = Vec::new();
    for spec in specs {
        let plan = plan_for(&mut plans, client, &spec.repo_id).await?;
        if all_refs {
            let names: Vec<String> = plan
                .refs
                .branches
                .iter()
                .chain(&plan.refs.tags)
                .map(|r| r.git_ref.clone())
                .collect();
            for name in names {
                plan.add_ref(&name);
            }
        }
        if let Some(revision) = &spec.revision {
            let info = client.repo_info(plan.kind, &spec.repo_id, revision).await?;
            plan.add_ref(revision);
            plan.commits.insert(info.sha);
        }
    }
    for plan in &mut plans {
        plan.add_refs_at_commits();
    }
    Ok(plans)
}

/// A commit to add, with its listing.
struct CommitPlan {
    sha: CommitId,
    title: Option<String>,
    date: Option<String>,
    parent: Option<CommitId>,
    files: Vec<TreeEntry>,
}

/// Orders new commits so that each comes after its parent.
fn parent_order(mut pending: Vec<CommitPlan>) -> Vec<CommitPlan> {
    let mut out: Vec<CommitPlan> = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let ready = pending
            .iter()
            .position(|c| {
                c.parent
                    .as_ref()
                    .is_none_or(|p| !pending.iter().any(|o| &o.sha == p))
            })
            .unwrap_or(0);
        out.push(pending.remove(ready));
    }
    out
}

/// Mirrors `source` from `client`'s endpoint into `out`; returns one report per
/// repository, in plan order.
pub async fn mirror(
    client: &HubClient,
    source: &MirrorSource,
    out: &Path,
    concurrency: usize,
) -> Result<Vec<RepoReport>, MirrorError> {
    // Refuse a wrong output folder before any request, create it only once
    // the plan's metadata requests succeeded.
    MirrorWriter::check(out)?;
    let plans = match source {
        MirrorSource::Project(dir) => plan_project(client, dir).await?,
        MirrorSource::Repos { repos, all_refs } => plan_repos(client, repos, *all_refs).await?,
    };
    let writer = MirrorWriter::open(out)?;

    // The rest of the plan: listings of the commits not yet mirrored.
    let mut staged = Vec::new();
    for plan in &plans {
        let existing = writer
            .existing(plan.kind, plan.repo_id.as_str())?
            .unwrap_or_default();
        let new = list_new_commits(client, plan, &existing.commits).await?;
        staged.push((plan, existing.commits.len(), new));
    }

    let store = HubCache::new(writer.store_dir());
    let permits = Semaphore::new(concurrency.max(1));
    let mut reports = Vec::new();
    for (plan, kept, commits) in staged {
        let fetcher = CommitFetcher {
            client,
            plan,
            repo: store.repo(&plan.repo_id, plan.kind),
            permits: &permits,
        };
        let mut totals = Totals::default();
        let mut new_commits = Vec::new();
        for commit in &commits {
            totals.add(fetcher.fetch(commit).await?);
            new_commits.push(fetcher.new_commit(commit));
        }
        let update = RepoUpdate {
            kind: plan.kind,
            id: plan.repo_id.to_string(),
            also_serve_as: plan.also.clone(),
            commits: new_commits,
            branches: plan.branches.clone(),
            tags: plan.tags.clone(),
            default_branch: plan.default_branch.clone(),
        };
        let writer = &writer;
        tokio::task::block_in_place(|| writer.write_repo(&update))?;
        reports.push(RepoReport {
            repo_id: plan.repo_id.clone(),
            repo_type: plan.kind,
            new_commits: commits.len(),
            kept_commits: kept,
            refs: plan.branches.len() + plan.tags.len(),
            fetched_files: totals.files,
            fetched_bytes: totals.bytes,
        });
    }
    write_orgs(client, &writer, &plans).await?;
    Ok(reports)
}

/// The commits of `plan` that `existing` (the mirror's commits of that
/// repository) lacks, each with its title, date, nearest mirrored ancestor and
/// file listing, ordered parents first.
async fn list_new_commits(
    client: &HubClient,
    plan: &RepoPlan,
    existing: &[String],
) -> Result<Vec<CommitPlan>, MirrorError> {
    // `repo.toml` lists commit shas (labels of commits without a
    // `commit.toml` are no commit ids).
    let mirrored: BTreeSet<CommitId> = existing.iter().filter_map(|c| c.parse().ok()).collect();
    let known: BTreeSet<&CommitId> = mirrored.iter().chain(&plan.commits).collect();
    let mut new = Vec::new();
    for sha in &plan.commits {
        if mirrored.contains(sha) {
            continue;
        }
        let history = client
            .list_commits_until(plan.kind, &plan.repo_id, sha.as_str(), |c| {
                c.id != *sha && known.contains(&c.id)
            })
            .await?;
        let this = history.first().filter(|c| c.id == *sha);
        let parent = history
            .last()
            .map(|c| c.id.clone())
            .filter(|p| p != sha && known.contains(p));
        let files = client
            .list_tree(plan.kind, &plan.repo_id, sha.as_str(), "", true)
            .await?
            .into_iter()
            .filter(TreeEntry::is_file)
            .collect();
        new.push(CommitPlan {
            sha: sha.clone(),
            title: this.map(|c| c.title.clone()).filter(|t| !t.is_empty()),
            date: this.map(|c| c.date.clone()).filter(|d| !d.is_empty()),
            parent,
            files,
        });
    }
    Ok(parent_order(new))
}

/// Files and bytes fetched over the network for one repository.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    files: usize,
    bytes: u64,
}

impl Totals {
    fn add(&mut self, other: Totals) {
        self.files += other.files;
        self.bytes = self.bytes.saturating_add(other.bytes);
    }
}

/// Fetches the files of one repository's new commits into the writer's
/// content store, at most `permits` at a time.
struct CommitFetcher<'a> {
    client: &'a HubClient,
    plan: &'a RepoPlan,
    repo: RepoCache,
    permits: &'a Semaphore,
}

impl CommitFetcher<'_> {
    /// Fetches and verifies every distinct blob of `commit` that the store
    /// lacks; returns what came over the network.
    async fn fetch(&self, commit: &CommitPlan) -> Result<Totals, MirrorError> {
        let mut blobs = BTreeMap::new();
        for entry in &commit.files {
            let digest = entry_digest(entry).ok_or_else(|| MirrorError::InvalidListing {
                repo_id: self.plan.repo_id.clone(),
                commit: commit.sha.clone(),
                path: entry.path.clone(),
            })?;
            blobs
                .entry(digest.etag())
                .or_insert((digest, entry.path.clone()));
        }
        let outcomes = join_all(
            blobs
                .values()
                .map(|(digest, path)| self.fetch_blob(commit, digest, path)),
        )
        .await;
        let mut totals = Totals::default();
        for outcome in outcomes {
            match outcome {
                Ok(Fetched::Cached) => {}
                Ok(Fetched::Downloaded { bytes }) => totals.add(Totals { files: 1, bytes }),
                Err(source) => {
                    return Err(MirrorError::Fetch {
                        repo_id: self.plan.repo_id.clone(),
                        commit: commit.sha.clone(),
                        source,
                    });
                }
            }
        }
        self.check_digests(commit)
            .map_err(|source| MirrorError::Fetch {
                repo_id: self.plan.repo_id.clone(),
                commit: commit.sha.clone(),
                source,
            })?;
        Ok(totals)
    }

    /// Compares every variant of `commit` whose `build/<v>/metadata.json`
    /// has a `digest` with the fetched files ([`crate::install::digest`]),
    /// before the commit is written. A metadata.json that does not parse is
    /// mirrored as it is (`kernels download` refuses it).
    fn check_digests(&self, commit: &CommitPlan) -> Result<(), DownloadError> {
        use crate::install::digest::{Content, VariantFile, check};
        let blob =
            |entry: &TreeEntry| entry_digest(entry).map(|id| (id, self.repo.blob_path(&id.etag())));
        for entry in &commit.files {
            let Some(variant) = entry
                .path
                .strip_prefix("build/")
                .and_then(|rest| rest.strip_suffix("/metadata.json"))
                .filter(|v| !v.contains('/'))
            else {
                continue;
            };
            let Some(expected) = blob(entry)
                .and_then(|(_, path)| fs_err::read(path).ok())
                .and_then(|bytes| kernels_types::metadata::Metadata::from_slice(&bytes).ok())
                .and_then(|metadata| metadata.digest)
            else {
                continue;
            };
            let files = commit.files.iter().filter_map(|file| {
                let (id, path) = blob(file)?;
                let content = match id.digest {
                    kernels_types::Digest::Sha256(sha256) => Content::Sha256 {
                        sha256,
                        file: Some(path),
                    },
                    kernels_types::Digest::GitSha1(_) => Content::File(path),
                };
                VariantFile::at(variant, &file.path, content)
            });
            let problems = check(&expected, files);
            if !problems.is_empty() {
                return Err(DownloadError::Digest {
                    repo_id: self.plan.repo_id.clone(),
                    commit: commit.sha.clone(),
                    variant: variant.to_owned(),
                    problems,
                });
            }
        }
        Ok(())
    }

    async fn fetch_blob(
        &self,
        commit: &CommitPlan,
        digest: &BlobId,
        path: &str,
    ) -> Result<Fetched, DownloadError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|err| DownloadError::Internal(err.to_string()))?;
        let source = Source {
            client: self.client,
            repo_type: self.plan.kind,
            repo_id: &self.plan.repo_id,
            commit: commit.sha.as_str(),
            path,
            expected: &[],
        };
        ensure_blob(&self.repo, digest, &source, &NoReporter).await
    }

    /// The writer's view of `commit`: every file with the store blob holding it.
    fn new_commit(&self, commit: &CommitPlan) -> NewCommit {
        NewCommit {
            sha: commit.sha.clone(),
            title: commit.title.clone(),
            date: commit.date.clone(),
            parent: commit.parent.clone(),
            files: commit
                .files
                .iter()
                .filter_map(|entry| {
                    let digest = entry_digest(entry)?;
                    Some(NewFile {
                        path: entry.path.clone(),
                        source: self.repo.blob_path(&digest.etag()),
                        lfs: entry.lfs.is_some(),
                    })
                })
                .collect(),
        }
    }
}

/// Organization trust metadata, for the owners of what was mirrored (an
/// owner the Hub has no organization page for gets none).
async fn write_orgs(
    client: &HubClient,
    writer: &MirrorWriter,
    plans: &[RepoPlan],
) -> Result<(), MirrorError> {
    let owners: BTreeSet<&str> = plans.iter().map(|p| p.repo_id.owner()).collect();
    for owner in owners {
        match client.org_overview(owner).await {
            Ok(org) => writer.write_org(
                owner,
                org.fullname.as_deref().unwrap_or(owner),
                org.trusted_kernel_publisher,
            )?,
            Err(err) if err.status() == Some(404) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}
