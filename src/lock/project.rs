//! Locking a project for a target [`Profile`].
//!
//! * Variant-hash profiles (runtimes ≤0.16): every dependency is resolved to a
//!   commit and the `git_lfs_concat` hash of each build variant
//!   ([`crate::lock::resolver`]); bytecode is left out of the hashes from 0.16.
//! * `KernelLocks` profiles (0.17+): every dependency is resolved to a commit,
//!   then the `metadata.json` of every variant directory under `build/` of that
//!   commit is fetched (concurrently, through the resolve URLs) and each
//!   `kernel-depends` entry is locked too, depth first, as the reference does.
//!   A dependency that is reached again while it is being locked is a cycle,
//!   reported with its path. Before a repository is resolved, its publisher must
//!   be a trusted kernel publisher (`GET /api/organizations/<org>/overview`)
//!   unless the repository is on the allow list (`--trust`, `[tool.kernels]
//!   trust`); offline the check is skipped with a warning.
//!
//! Repository type fallback (reference issue #632): when the `kernel` API says a
//! repository does not exist, the `model` API is asked. If the repository exists
//! there, the error says so; with [`LockOptions::allow_model_repos`] the
//! repository is locked through the `model` API instead, with a warning.

use kernels_types::{CommitId, Digest};
use std::collections::{BTreeSet, HashMap, HashSet};

use futures_util::StreamExt;
use futures_util::future::{LocalBoxFuture, join_all};
use serde::{Deserialize, Serialize};

use crate::lock::format::variant_hash::{KernelHashLock, VariantHash};
use crate::lock::format::{KernelDependency, KernelLocks, KernelVersion, Lockfile};
use crate::lock::manifest::{Dependency, Manifest};
use crate::lock::profile::{Profile, RuntimeVersion};
use crate::lock::requirement::Requirement;
use crate::lock::resolver::{DEFAULT_CONCURRENCY, ResolveError, ResolvedCommit, Resolver};
use crate::lock::sticky::{Upgrade, Verdict, keep_hashed};
use crate::lock::support::{UnsupportedRequirement, check_requirements, unsupported};
use kernels_hub::{HubClient, HubError, Target};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

/// Options of [`lock_project`] beyond the profile.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Repositories locked whatever their publisher's trust status.
    pub trust: Vec<RepoId>,
    /// Lock repositories that only exist as `model` repositories through the
    /// `model` API when the `kernel` API does not know them.
    pub allow_model_repos: bool,
    /// The existing lock: its entries are kept while still satisfied
    /// ([`crate::lock::sticky`]). `None` resolves everything afresh.
    pub previous: Option<Lockfile>,
    /// Which kept entries are resolved again anyway.
    pub upgrade: Upgrade,
    /// The Hub cache: `metadata.json` blobs found there (by the git blob id of
    /// the tree listing) are read instead of fetched, and fetched ones are
    /// stored there, as the 0.17 reference stores them. `None`: no cache.
    pub cache: Option<kernels_cache::HubCache>,
}

/// A written-to-be lock with its status lines.
#[derive(Debug, Clone)]
pub struct LockOutcome {
    /// The lock, in the profile's format.
    pub lockfile: Lockfile,
    /// The entries resolved in this run (not kept from the previous lock), in
    /// lock order; each displays as its `Locked …` status line.
    pub locked: Vec<Locked>,
    /// Non-fatal remarks.
    pub warnings: Vec<String>,
    /// The ref each entry is locked from (repo id → `v1`, `v0.1.1`, revision),
    /// for variant-hash locks, whose file does not record it.
    pub labels: HashMap<String, String>,
    /// What the locked commits of the previous lock were known as, for
    /// variant-hash entries that were resolved again.
    pub previous_labels: HashMap<String, String>,
    /// Entries kept from the previous lock without being resolved again.
    pub kept: usize,
}

/// One entry resolved by a lock run: what its `Locked …` status line says,
/// typed (the JSON of `kernels lock`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Locked {
    /// The repository.
    pub repo_id: String,
    /// The tag, branch or revision it was locked from (`v0.1.1`, `v1`, `main`).
    pub version: String,
    /// The locked commit.
    pub commit: CommitId,
    /// How many build variants were hashed (variant-hash format); `None` in
    /// the `KernelLocks` format, which records no variants.
    pub variant_count: Option<usize>,
    /// The entry whose `kernel-depends` asked for it (0.17 format); `None`
    /// for a dependency of the project itself.
    pub required_by: Option<RequiredBy>,
}

/// The lock entry that required another (a `kernel-depends` entry's parent),
/// as the lock file names it: `repo_id` with `version` or `revision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequiredBy {
    /// The repository.
    pub repo_id: String,
    /// Its integer version (branch `vN`), if locked from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Its revision, if locked from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

impl From<&KernelDependency> for RequiredBy {
    fn from(dep: &KernelDependency) -> Self {
        let (version, revision) = match &dep.version {
            KernelVersion::Version(n) => (Some(*n), None),
            KernelVersion::Revision(r) => (None, Some(r.clone())),
        };
        RequiredBy {
            repo_id: dep.repo_id.clone(),
            version,
            revision,
        }
    }
}

impl std::fmt::Display for RequiredBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.version, &self.revision) {
            (Some(n), _) => write!(f, "{} version {n}", self.repo_id),
            (None, Some(r)) => write!(f, "{} revision {r}", self.repo_id),
            (None, None) => write!(f, "{}", self.repo_id),
        }
    }
}

impl std::fmt::Display for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Locked {} {} ({})",
            self.repo_id,
            self.version,
            self.commit.short()
        )?;
        if let Some(n) = self.variant_count {
            write!(f, " with {n} variant{}", if n == 1 { "" } else { "s" })?;
        }
        if let Some(via) = &self.required_by {
            write!(f, ", required by {via}")?;
        }
        Ok(())
    }
}

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
            "if you trust this code, allow the repository with `--trust {repo_id}` or `trust = [\"{repo_id}\"]` under [tool.kernels] in pyproject.toml"
        )
    )]
    Untrusted {
        /// The repository.
        repo_id: RepoId,
        /// Its owner.
        org: String,
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

    /// A `metadata.json` that cannot be read.
    #[error("`build/{variant}/metadata.json` of `{repo_id}` at {commit} is invalid: {detail}")]
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
        /// What is wrong.
        detail: String,
    },
}

impl From<HubError> for LockError {
    fn from(err: HubError) -> Self {
        LockError::Resolve(ResolveError::Hub(err))
    }
}

/// Resolves the manifest for `profile`; nothing is written.
pub async fn lock_project(
    client: &HubClient,
    profile: &Profile,
    manifest: &Manifest,
    options: &LockOptions,
) -> Result<LockOutcome, LockError> {
    let path = manifest.path.display().to_string();
    let mut warnings: Vec<String> = check_requirements(profile, manifest)
        .map_err(LockError::UnsupportedRequirement)?
        .iter()
        .map(ToString::to_string)
        .collect();
    let locker = Locker {
        client,
        profile,
        options,
        metadata: options.cache.clone().map(MetadataCache::new),
    };
    let mut outcome = match profile.lock_format {
        crate::lock::format::LockFormat::VariantHash => locker.variant_hash(manifest).await?,
        crate::lock::format::LockFormat::KernelLocks => {
            if manifest.dependencies.is_empty() {
                return Err(LockError::NoKernels { path });
            }
            let outcome = locker.kernel_locks(manifest).await;
            if let Some(metadata) = &locker.metadata {
                metadata.flush().await;
            }
            outcome?
        }
    };
    warnings.append(&mut outcome.warnings);
    outcome.warnings = warnings;
    Ok(outcome)
}

/// One variant-hash entry: kept from the previous lock, or resolved (with the
/// resolution's remarks and what the previous commit was known as).
enum Hashed {
    Kept {
        lock: KernelHashLock,
        label: String,
    },
    Resolved(
        crate::lock::resolver::ResolvedKernel,
        Vec<String>,
        Option<String>,
    ),
}

struct Locker<'a> {
    client: &'a HubClient,
    profile: &'a Profile,
    options: &'a LockOptions,
    metadata: Option<MetadataCache>,
}

/// Whether an error is the `kernel` API's RepoNotFound.
fn is_kernel_repo_not_found(err: &ResolveError) -> bool {
    matches!(
        err,
        ResolveError::Hub(HubError::RepoNotFound { target, .. }) if target.repo_type == RepoType::Kernel
    )
}

impl Locker<'_> {
    fn resolver(&self, repo_type: RepoType) -> Resolver {
        Resolver::new(self.client.clone(), repo_type)
            .exclude_bytecode(self.profile.exclude_bytecode)
    }

    /// After a failed resolution: when it is the `kernel` API's RepoNotFound and
    /// the `model` API knows the repository, `Ok(())` means retry as a model
    /// repository (allowed by the options); every other case is the error to report.
    async fn model_fallback(
        &self,
        repo_id: &RepoId,
        err: ResolveError,
        warnings: &mut Vec<String>,
    ) -> Result<(), LockError> {
        if !is_kernel_repo_not_found(&err)
            || self
                .client
                .list_refs(RepoType::Model, repo_id)
                .await
                .is_err()
        {
            return Err(err.into());
        }
        if !self.options.allow_model_repos {
            return Err(LockError::ModelRepoOnly {
                repo_id: repo_id.clone(),
            });
        }
        warnings.push(format!(
            "`{repo_id}` is not a kernel repository; locked from the model API (--allow-model-repos). Runtimes ≥0.14 cannot load it"
        ));
        Ok(())
    }

    async fn variant_hash(&self, manifest: &Manifest) -> Result<LockOutcome, LockError> {
        let resolver = self.resolver(self.profile.repo_type);
        let results: Vec<_> = futures_util::stream::iter(&manifest.dependencies)
            .map(|dep| async {
                (
                    dep.repo_id.clone(),
                    self.sticky_hashed(&resolver, dep).await,
                )
            })
            .buffered(DEFAULT_CONCURRENCY)
            .collect()
            .await;
        let mut locks = Vec::new();
        let mut locked = Vec::new();
        let mut warnings = Vec::new();
        let mut errors = Vec::new();
        let mut labels = HashMap::new();
        let mut previous_labels = HashMap::new();
        let mut kept = 0;
        for (repo_id, result) in results {
            match result {
                Ok(Hashed::Kept { lock, label }) => {
                    kept += 1;
                    labels.insert(lock.repo_id.clone(), label);
                    locks.push(lock);
                }
                Ok(Hashed::Resolved(kernel, mut notes, old_label)) => {
                    labels.insert(kernel.repo_id.to_string(), kernel.chosen.clone());
                    if let Some(old_label) = old_label {
                        previous_labels.insert(kernel.repo_id.to_string(), old_label);
                    }
                    warnings.append(&mut notes);
                    warnings.extend(kernel.warnings.iter().cloned());
                    locked.push(Locked {
                        repo_id: kernel.repo_id.to_string(),
                        version: kernel.chosen.clone(),
                        commit: kernel.commit.clone(),
                        variant_count: Some(kernel.variants.len()),
                        required_by: None,
                    });
                    locks.push(KernelHashLock::new(
                        kernel.repo_id.to_string(),
                        kernel.commit,
                        kernel
                            .variants
                            .into_iter()
                            .map(|(name, hash)| (name, VariantHash::git_lfs_concat(hash)))
                            .collect(),
                    ));
                }
                Err(error) => errors.push(Failure { repo_id, error }),
            }
        }
        check_errors(errors, manifest)?;
        Ok(LockOutcome {
            lockfile: Lockfile::VariantHash(locks),
            locked,
            warnings,
            labels,
            previous_labels,
            kept,
        })
    }

    /// The previous variant-hash entry of `dep` when an upgrade covers it.
    fn previous_for_label(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        if !self.options.upgrade.covers(dep.repo_id.as_str()) {
            return None;
        }
        self.previous_entry(dep)
    }

    /// The previous variant-hash entry of `dep`, unless an upgrade covers it.
    fn previous_hashed(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        if self.options.upgrade.covers(dep.repo_id.as_str()) {
            return None;
        }
        self.previous_entry(dep)
    }

    fn previous_entry(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        match &self.options.previous {
            Some(Lockfile::VariantHash(locks)) => {
                let mut found = locks.iter().filter(|l| l.repo_id == dep.repo_id.as_str());
                match (found.next(), found.next()) {
                    (Some(lock), None) => Some(lock),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Keeps the previous entry of `dep` when it is still satisfied, else
    /// resolves it.
    async fn sticky_hashed(
        &self,
        resolver: &Resolver,
        dep: &Dependency,
    ) -> Result<Hashed, LockError> {
        let mut old_label = None;
        if let Some(previous) = self.previous_for_label(dep) {
            // Upgraded anyway: only name what the old commit was.
            old_label = label_at(
                self.client,
                resolver.repo_type(),
                &dep.repo_id,
                &previous.sha,
            )
            .await;
        } else if let Some(previous) = self.previous_hashed(dep) {
            let verdict = keep_hashed(
                self.client,
                resolver.repo_type(),
                &dep.repo_id,
                &dep.requirement,
                &previous.sha,
            )
            .await;
            match verdict {
                Ok(Verdict::Keep { label }) => {
                    return Ok(Hashed::Kept {
                        lock: previous.clone(),
                        label,
                    });
                }
                Ok(Verdict::Resolve { old_label: label }) => old_label = label,
                // Resolution reports the repository's problem (or falls back
                // to the model API).
                Err(_) => {}
            }
        }
        let (kernel, notes) = self.resolve_hashed(resolver, dep).await?;
        Ok(Hashed::Resolved(kernel, notes, old_label))
    }

    async fn resolve_hashed(
        &self,
        resolver: &Resolver,
        dep: &Dependency,
    ) -> Result<(crate::lock::resolver::ResolvedKernel, Vec<String>), LockError> {
        let mut warnings = Vec::new();
        match resolver.resolve(dep).await {
            Ok(kernel) => Ok((kernel, warnings)),
            Err(err) => {
                self.model_fallback(&dep.repo_id, err, &mut warnings)
                    .await?;
                let kernel = self.resolver(RepoType::Model).resolve(dep).await?;
                Ok((kernel, warnings))
            }
        }
    }

    async fn kernel_locks(&self, manifest: &Manifest) -> Result<LockOutcome, LockError> {
        let mut roots = Vec::new();
        for dep in &manifest.dependencies {
            let version = match &dep.requirement {
                Requirement::Branch(n) => KernelVersion::Version(*n),
                Requirement::Revision(r) => KernelVersion::Revision(r.clone()),
                // Rejected by the requirement check of the profile.
                _ => {
                    let runtime = self
                        .profile
                        .runtime
                        .unwrap_or(RuntimeVersion::new(0, 17, 0));
                    return Err(LockError::UnsupportedRequirement(Box::new(unsupported(
                        manifest, dep, runtime,
                    ))));
                }
            };
            let node = KernelDependency {
                repo_id: dep.repo_id.to_string(),
                version,
            };
            roots.push((node, dep.repo_id.clone()));
        }
        // Every request first, as concurrently as the graph allows; then the
        // reference's depth-first walk over the answers, so that the lock, the
        // status lines, the warnings and the first error are the same as when
        // one kernel is visited at a time.
        let (nodes, trust) = self.discover(&roots).await;
        let mut tree = Tree {
            nodes,
            trust,
            locks: KernelLocks::new(),
            done: HashSet::new(),
            locked: Vec::new(),
            warnings: Vec::new(),
            kept: 0,
        };
        // The first failure is the reference's (depth first, root by root);
        // the roots after it that failed themselves are reported with it, so
        // that one cause (the Hub unreachable) names every kernel it stops.
        let mut failures = Vec::new();
        for (node, repo_id) in roots {
            if failures.is_empty() {
                if let Err(error) = tree.visit(node, repo_id.clone(), Vec::new()) {
                    failures.push(Failure { repo_id, error });
                }
            } else if let Some(Err(error)) = tree.nodes.remove(&node) {
                failures.push(Failure { repo_id, error });
            }
        }
        check_errors(failures, manifest)?;
        Ok(LockOutcome {
            lockfile: Lockfile::KernelLocks(tree.locks),
            locked: tree.locked,
            warnings: tree.warnings,
            labels: HashMap::new(),
            previous_labels: HashMap::new(),
            kept: tree.kept,
        })
    }

    /// Whether locking `repo_id` needs its publisher's trust status.
    fn needs_trust(&self, repo_id: &RepoId) -> bool {
        self.profile.check_trust && !self.options.trust.contains(repo_id)
    }

    /// Resolves every node reachable from `roots` (and the trust status of
    /// every organization that needs one), each request as soon as what it
    /// depends on is known. A node's children are scheduled when it is done.
    async fn discover(
        &self,
        roots: &[(KernelDependency, RepoId)],
    ) -> (
        HashMap<KernelDependency, Result<Node, LockError>>,
        HashMap<String, Result<bool, HubError>>,
    ) {
        enum Done {
            Node(KernelDependency, Box<Result<Node, LockError>>),
            Trust(String, Result<bool, HubError>),
        }
        let mut nodes = HashMap::new();
        let mut trust = HashMap::new();
        let mut seen: HashSet<KernelDependency> = HashSet::new();
        let mut orgs: HashSet<String> = HashSet::new();
        let mut queue: std::collections::VecDeque<(KernelDependency, RepoId)> =
            roots.iter().cloned().collect();
        // Entries of the previous lock that are kept are most likely still
        // reached: learn their `kernel-depends` now instead of level by level.
        // One that is no longer reached is never visited, so it costs requests
        // but changes nothing.
        if let Some(Lockfile::KernelLocks(old)) = &self.options.previous {
            for (dep, _) in old.iter() {
                if !self.options.upgrade.covers(&dep.repo_id)
                    && let Ok(repo_id) = dep.repo_id.parse::<RepoId>()
                {
                    queue.push_back((dep.clone(), repo_id));
                }
            }
        }
        let mut running: futures_util::stream::FuturesUnordered<LocalBoxFuture<'_, Done>> =
            futures_util::stream::FuturesUnordered::new();
        loop {
            while running.len() < DISCOVERY_CONCURRENCY
                && let Some((node, repo_id)) = queue.pop_front()
            {
                if !seen.insert(node.clone()) {
                    continue;
                }
                let previous = self.previous_commit(&node);
                if previous.is_none()
                    && self.needs_trust(&repo_id)
                    && !self.client.is_offline()
                    && orgs.insert(repo_id.owner().to_owned())
                {
                    let org = repo_id.owner().to_owned();
                    running.push(Box::pin(async move {
                        let result = self
                            .client
                            .org_overview(&org)
                            .await
                            .map(|o| o.trusted_kernel_publisher);
                        Done::Trust(org, result)
                    }));
                }
                running.push(Box::pin(async move {
                    let result = self.resolve_node(&node, &repo_id, previous).await;
                    Done::Node(node, Box::new(result))
                }));
            }
            let Some(done) = running.next().await else {
                break;
            };
            match done {
                Done::Trust(org, result) => {
                    trust.insert(org, result);
                }
                Done::Node(node, result) => {
                    if let Ok(resolved) = &*result {
                        for child in &resolved.children {
                            if let Ok(child_id) = child.repo_id.parse::<RepoId>()
                                && !seen.contains(child)
                            {
                                queue.push_back((child.clone(), child_id));
                            }
                        }
                    }
                    nodes.insert(node, *result);
                }
            }
        }
        (nodes, trust)
    }

    /// The commit the previous lock has for `node`, unless it is upgraded.
    fn previous_commit(&self, node: &KernelDependency) -> Option<CommitId> {
        match &self.options.previous {
            Some(Lockfile::KernelLocks(old)) if !self.options.upgrade.covers(&node.repo_id) => {
                old.iter().find(|(d, _)| *d == node).map(|(_, c)| c.clone())
            }
            _ => None,
        }
    }

    /// One node: its commit (kept from the previous lock, or resolved, through
    /// the model API when allowed) and its `kernel-depends`.
    async fn resolve_node(
        &self,
        node: &KernelDependency,
        repo_id: &RepoId,
        previous: Option<CommitId>,
    ) -> Result<Node, LockError> {
        let mut warnings = Vec::new();
        let requirement = match &node.version {
            KernelVersion::Version(n) => Requirement::Branch(*n),
            KernelVersion::Revision(r) => Requirement::Revision(r.clone()),
        };
        let mut repo_type = self.profile.repo_type;
        let kept = previous.is_some();
        let resolved = if let Some(commit) = previous {
            // The requirement is recorded and unchanged: keep the commit.
            ResolvedCommit {
                chosen: match &node.version {
                    KernelVersion::Version(n) => format!("v{n}"),
                    KernelVersion::Revision(r) => r.clone(),
                },
                commit,
                warnings: Vec::new(),
            }
        } else {
            if self.needs_trust(repo_id) && self.client.is_offline() {
                warnings.push(format!(
                    "Skipping publisher trust check for '{repo_id}' because Hugging Face Hub is in offline mode."
                ));
            }
            match self
                .resolver(repo_type)
                .resolve_commit(repo_id, &requirement)
                .await
            {
                Ok(resolved) => resolved,
                Err(err) => {
                    self.model_fallback(repo_id, err, &mut warnings).await?;
                    repo_type = RepoType::Model;
                    self.resolver(repo_type)
                        .resolve_commit(repo_id, &requirement)
                        .await?
                }
            }
        };
        warnings.extend(resolved.warnings);
        let children = kernel_depends(
            self.client,
            self.metadata.as_ref(),
            repo_type,
            repo_id,
            &resolved.commit,
            &mut warnings,
        )
        .await?;
        Ok(Node {
            chosen: resolved.chosen,
            commit: resolved.commit,
            kept,
            warnings,
            children,
        })
    }
}

/// How many nodes [`Locker::discover`] resolves at the same time.
const DISCOVERY_CONCURRENCY: usize = 32;

/// A resolved node of the 0.17 dependency graph.
struct Node {
    chosen: String,
    commit: CommitId,
    /// Kept from the previous lock.
    kept: bool,
    /// Remarks, in the order the reference makes them.
    warnings: Vec<String>,
    children: Vec<KernelDependency>,
}

/// The version label of `commit` ([`crate::lock::label`]), for change lines.
async fn label_at(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
) -> Option<String> {
    let refs = client.list_refs(repo_type, repo_id).await.ok()?;
    crate::lock::inspect::label_in(&refs, commit).map(str::to_owned)
}

fn check_errors(failures: Vec<Failure>, manifest: &Manifest) -> Result<(), LockError> {
    if failures.is_empty() {
        return Ok(());
    }
    Err(LockError::Unresolved {
        manifest: manifest.path.display().to_string(),
        total: manifest.dependencies.len(),
        failures,
    })
}

/// Depth-first locking of `kernel-depends` (0.17 profile) over the nodes
/// [`Locker::discover`] resolved.
struct Tree {
    nodes: HashMap<KernelDependency, Result<Node, LockError>>,
    /// Trust status per organization.
    trust: HashMap<String, Result<bool, HubError>>,
    locks: KernelLocks,
    done: HashSet<KernelDependency>,
    locked: Vec<Locked>,
    warnings: Vec<String>,
    /// Entries kept from the previous lock.
    kept: usize,
}

/// The parts of a variant's `metadata.json` that locking reads.
#[derive(Deserialize)]
struct Metadata {
    #[serde(rename = "kernel-depends", default)]
    kernel_depends: Vec<MetadataDependency>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetadataDependency {
    #[serde(rename = "repo-id")]
    repo_id: String,
    #[serde(default)]
    version: Option<u64>,
    #[serde(default)]
    revision: Option<String>,
}

impl Tree {
    fn visit(
        &mut self,
        node: KernelDependency,
        repo_id: RepoId,
        mut path: Vec<KernelDependency>,
    ) -> Result<(), LockError> {
        if let Some(start) = path.iter().position(|d| d == &node) {
            let cycle: Vec<String> = path[start..]
                .iter()
                .chain(std::iter::once(&node))
                .map(describe)
                .collect();
            return Err(LockError::Cycle {
                cycle: cycle.join(" → "),
            });
        }
        if self.done.contains(&node) {
            return Ok(());
        }
        let resolved = self
            .nodes
            .remove(&node)
            .expect("every reachable node was discovered")?;
        if resolved.kept {
            self.kept += 1;
        } else {
            self.check_trust(&repo_id)?;
        }
        let Node {
            chosen,
            commit,
            kept,
            warnings,
            children,
        } = resolved;
        self.warnings.extend(warnings);
        path.push(node.clone());
        for child in children {
            let child_id: RepoId =
                child
                    .repo_id
                    .parse()
                    .map_err(|err| LockError::InvalidMetadata {
                        repo_id: repo_id.clone(),
                        commit: commit.clone(),
                        variant: "*".to_owned(),
                        detail: format!("kernel-depends repo id `{}`: {err}", child.repo_id),
                    })?;
            self.visit(child, child_id, path.clone())?;
        }
        if !kept {
            self.locked.push(Locked {
                repo_id: repo_id.to_string(),
                version: chosen,
                commit: commit.clone(),
                variant_count: None,
                required_by: path
                    .len()
                    .checked_sub(2)
                    .map(|i| RequiredBy::from(&path[i])),
            });
        }
        // `done` guards against a second insert of the same dependency.
        let _ = self.locks.insert(node.clone(), commit);
        self.done.insert(node);
        Ok(())
    }

    /// The trust status [`Locker::discover`] fetched for the node's
    /// organization; no entry means none was needed (allowed, offline, or the
    /// profile does not check).
    fn check_trust(&mut self, repo_id: &RepoId) -> Result<(), LockError> {
        let org = repo_id.owner();
        match self.trust.get(org) {
            None | Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(LockError::Untrusted {
                repo_id: repo_id.clone(),
                org: org.to_owned(),
            }),
            Some(Err(_)) => match self.trust.remove(org) {
                Some(Err(source)) => Err(LockError::TrustUnknown {
                    repo_id: repo_id.clone(),
                    source,
                }),
                _ => unreachable!("checked above"),
            },
        }
    }
}

/// `kernel-depends` of every variant of `repo_id` at `commit`, deduplicated, in
/// variant then file order. Variant directories are the directories under
/// `build/` named `torch…` or `tvm-ffi…`; other names are skipped with a warning
/// (added to `warnings`), as the reference skips names its variant parser
/// rejects. One recursive listing of `build/` gives every `metadata.json` with
/// its blob id; each distinct blob is fetched once (variants of one build
/// usually share it).
pub async fn kernel_depends(
    client: &HubClient,
    cache: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    warnings: &mut Vec<String>,
) -> Result<Vec<KernelDependency>, LockError> {
    let entries = match client
        .list_tree(repo_type, repo_id, commit.as_str(), "build", true)
        .await
    {
        Ok(entries) => entries,
        Err(HubError::EntryNotFound { .. }) => return Ok(Vec::new()),
        Err(err) => return Err(err.into()),
    };
    // Variant directory → blob id of its metadata.json (if it has one), with
    // its size when it is a plain git blob (cacheable by that id).
    let mut variants: std::collections::BTreeMap<String, Option<Digest>> =
        std::collections::BTreeMap::new();
    let mut sizes: HashMap<Digest, u64> = HashMap::new();
    let mut invalid = BTreeSet::new();
    for entry in &entries {
        let rest = entry.path.strip_prefix("build/").unwrap_or(&entry.path);
        let Some((name, inner)) = rest.split_once('/') else {
            continue;
        };
        if !(name.starts_with("torch") || name.starts_with("tvm-ffi")) {
            invalid.insert(name.to_owned());
            continue;
        }
        let slot = variants.entry(name.to_owned()).or_default();
        if inner == "metadata.json" && entry.is_file() {
            *slot = Some(entry.oid);
            if entry.lfs.is_none() {
                sizes.insert(entry.oid, entry.size);
            }
        }
    }
    for name in invalid {
        warnings.push(format!(
            "Repository {repo_id} (revision: {commit}) contains invalid build variant: {name:?}"
        ));
    }
    // One fetch per distinct blob, named by the first variant that has it.
    let mut blobs: Vec<(Digest, &str)> = Vec::new();
    for (variant, oid) in &variants {
        if let Some(oid) = oid
            && !blobs.iter().any(|(o, _)| o == oid)
        {
            blobs.push((*oid, variant));
        }
    }
    let repo_cache = cache.map(|c| c.cache.repo(repo_id, repo_type));
    let fetched = join_all(blobs.iter().map(|(oid, variant)| {
        let blob = sizes
            .get(oid)
            .map(|size| kernels_cache::BlobId {
                digest: *oid,
                size: *size,
            })
            .zip(repo_cache.as_ref());
        cached_metadata(client, blob, cache, repo_type, repo_id, commit, variant)
    }))
    .await;
    let mut by_blob: HashMap<Digest, Result<Vec<KernelDependency>, LockError>> =
        blobs.iter().map(|(oid, _)| *oid).zip(fetched).collect();
    let mut out: Vec<KernelDependency> = Vec::new();
    for (variant, oid) in &variants {
        let Some(oid) = oid else {
            return Err(LockError::MissingMetadata {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
                variant: variant.clone(),
            });
        };
        let deps = match by_blob.get_mut(oid) {
            Some(Ok(deps)) => deps,
            Some(Err(_)) => {
                return Err(by_blob.remove(oid).and_then(Result::err).expect("an error"));
            }
            None => unreachable!("every blob was fetched"),
        };
        for dep in deps.iter() {
            if !out.contains(dep) {
                out.push(dep.clone());
            }
        }
    }
    Ok(out)
}

fn describe(dep: &KernelDependency) -> String {
    match &dep.version {
        KernelVersion::Version(n) => format!("{} version {n}", dep.repo_id),
        KernelVersion::Revision(r) => format!("{} revision {r}", dep.repo_id),
    }
}

/// The Hub cache as [`kernel_depends`] uses it: `metadata.json` blobs are read
/// from it and stored in it. Stores run on the blocking pool, off the
/// resolution's path; [`MetadataCache::flush`] waits for them.
#[derive(Debug)]
pub struct MetadataCache {
    cache: kernels_cache::HubCache,
    pending: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl MetadataCache {
    /// A cache rooted at `cache`.
    pub fn new(cache: kernels_cache::HubCache) -> Self {
        MetadataCache {
            cache,
            pending: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Waits until every store started so far is done (or failed: stores are
    /// best effort).
    pub async fn flush(&self) {
        let pending: Vec<_> = self
            .pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        for handle in pending {
            let _ = handle.await;
        }
    }
}

/// `build/<variant>/metadata.json` at `commit`, parsed: from the Hub cache
/// when `blob` (its git blob id, and the repository's cache folder) is there
/// with that exact content, else fetched and then stored in the cache
/// (best effort: a cache that cannot be written is skipped).
async fn cached_metadata(
    client: &HubClient,
    blob: Option<(kernels_cache::BlobId, &kernels_cache::RepoCache)>,
    store: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    variant: &str,
) -> Result<Vec<KernelDependency>, LockError> {
    let file = format!("build/{variant}/metadata.json");
    if let Some((id, repo)) = &blob {
        let path = repo.blob_path(&id.etag());
        if kernels_cache::file_matches(&path, id).unwrap_or(false)
            && let Ok(body) = fs_err::read(&path)
        {
            let _ = repo.link(commit.as_str(), &file, &id.etag());
            return parse_metadata(&body, repo_id, commit, variant);
        }
    }
    let body = fetch_metadata(client, repo_type, repo_id, commit, variant).await?;
    if let Some((id, repo)) = blob {
        // On the blocking pool and not awaited here: the fsyncs of a store must
        // not delay what depends on this answer ([`MetadataCache::flush`]).
        let (repo, body, commit) = (repo.clone(), body.clone(), commit.clone());
        let handle = tokio::task::spawn_blocking(move || {
            if let Ok(kernels_cache::PartialBlob::Missing(mut writer)) = repo.open_blob(&id) {
                let stored = writer
                    .restart()
                    .and_then(|()| writer.write(&body, &file))
                    .and_then(|()| writer.finish(&file));
                if stored.is_ok() {
                    let _ = repo.link(commit.as_str(), &file, &id.etag());
                }
            }
        });
        if let Some(Ok(mut pending)) = store.map(|s| s.pending.lock()) {
            pending.push(handle);
        }
    }
    parse_metadata(&body, repo_id, commit, variant)
}

/// Downloads `build/<variant>/metadata.json` at `commit`.
async fn fetch_metadata(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    variant: &str,
) -> Result<Vec<u8>, LockError> {
    let file = format!("build/{variant}/metadata.json");
    let url = client.resolve_url(repo_type, repo_id, commit.as_str(), &file);
    let target = Target::repo(repo_type, repo_id)
        .at(commit.as_str())
        .path(&file);
    let body = match client.get_document(&url, Some(&target)).await {
        Ok(body) => body,
        Err(HubError::EntryNotFound { .. }) => {
            return Err(LockError::MissingMetadata {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
                variant: variant.to_owned(),
            });
        }
        Err(err) => return Err(err.into()),
    };
    Ok(body)
}

/// The `kernel-depends` of a `metadata.json`.
fn parse_metadata(
    body: &[u8],
    repo_id: &RepoId,
    commit: &CommitId,
    variant: &str,
) -> Result<Vec<KernelDependency>, LockError> {
    let invalid = |detail: String| LockError::InvalidMetadata {
        repo_id: repo_id.clone(),
        commit: commit.clone(),
        variant: variant.to_owned(),
        detail,
    };
    let metadata: Metadata =
        serde_json::from_slice(body).map_err(|err| invalid(err.to_string()))?;
    metadata
        .kernel_depends
        .into_iter()
        .map(|dep| {
            let version = match (dep.version, dep.revision) {
                (Some(n), None) => KernelVersion::Version(n),
                (None, Some(r)) => KernelVersion::Revision(r),
                _ => {
                    return Err(invalid(format!(
                        "kernel-depends entry `{}` needs exactly one of `version` and `revision`",
                        dep.repo_id
                    )));
                }
            };
            Ok(KernelDependency {
                repo_id: dep.repo_id,
                version,
            })
        })
        .collect()
}
