//! What a lock pins, variant by variant ([`inventory`]).
//!
//! * **Which variants.** A variant-hash lock (runtimes 0.1.7–0.16) names
//!   them with their hashes; those are the components, whatever the cache
//!   or the Hub holds. A `KernelLocks` lock (0.17) pins a commit only: its
//!   components are the variants of that commit, as the Hub's listing of
//!   `build/` names them, or offline the variant directories of the commit's
//!   snapshot in the cache (what `kernels download` took).
//! * **Where their `metadata.json` comes from.** The Hub cache first,
//!   without a request: the snapshot's `build/<variant>/metadata.json`, its
//!   blob checked against its name ([`crate::lock::metadata::cached_bytes`]).
//!   The Hub ([`crate::lock::project::variant_metadata`]: one listing, each
//!   distinct blob once, stored in the cache) only with `--refresh`, or when
//!   no cache folder (`kernels--` or `models--`) holds the commit and the run
//!   is not offline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_cache::{HubCache, RepoCache};
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::Digest;
use kernels_types::digest::{git_blob_sha1, sha256};
use kernels_types::metadata::Metadata;
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::BuildVariant;
use kernels_types::wire::RepoType;

use super::{Component, Inventory, VariantMetadata};
use crate::lock::format::{KernelVersion, LockedKernel, Lockfile, LockfileError};
use crate::lock::metadata::{cached_bytes, verified_blob};
use crate::lock::project::{LockError, MetadataCache, variant_metadata};

/// Where a variant's `metadata.json` was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataSource {
    /// The Hub cache's snapshot of the commit.
    Cache,
    /// The Hub (its blob then stored in the cache).
    Hub,
}

impl MetadataSource {
    /// `cache` or `hub`.
    pub fn id(self) -> &'static str {
        match self {
            MetadataSource::Cache => "cache",
            MetadataSource::Hub => "hub",
        }
    }
}

/// How [`inventory`] may read.
#[derive(Debug, Clone)]
pub struct InventoryOptions {
    /// Read every kernel from the Hub (`--refresh`), even when cached.
    pub online: bool,
    /// The repository type asked of the Hub, and the cache folder looked
    /// at first (`kernels--` or `models--`; the other is looked at next).
    pub repo_type: RepoType,
    /// The fixed creation time (`SOURCE_DATE_EPOCH`).
    pub created: Option<jiff::Timestamp>,
}

/// Why no inventory can be made.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ExportError {
    /// The lock cannot be read.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lockfile(#[from] LockfileError),

    /// A 0.17 lock's commit is not in the cache, and the run is offline:
    /// nothing says which variants it has.
    #[error(
        "{repo_id}@{} is not in the cache {}, and this run is offline: a 0.17 kernels.lock names no variants, so they cannot be listed",
        commit.short(), cache.display()
    )]
    #[diagnostic(
        code(kernels::export::not_cached),
        help(
            "download it first (`kernels download --all-variants`), or run without `--offline` (and without HF_HUB_OFFLINE) to list the variants from the Hub"
        )
    )]
    NotCached {
        /// The repository.
        repo_id: RepoId,
        /// The locked commit.
        commit: CommitId,
        /// The cache looked in.
        cache: PathBuf,
    },

    /// Reading a kernel from the Hub failed.
    #[error("cannot read {repo_id}@{} from the Hub", commit.short())]
    #[diagnostic(code(kernels::export::hub))]
    Hub {
        /// The repository.
        repo_id: RepoId,
        /// The locked commit.
        commit: CommitId,
        /// What failed.
        #[source]
        source: Box<LockError>,
    },
}

/// Every component the lock at `lock_path` (text `lock_text`, parsed as
/// `lock`) pins, sorted; with the warnings to show (a kernel the cache does
/// not hold, a commit without `build/`). `hub` is `None` offline.
///
/// # Errors
/// An invalid repository id in the lock, [`ExportError::NotCached`] and
/// [`ExportError::Hub`].
pub async fn inventory(
    lock: &Lockfile,
    lock_path: &Path,
    lock_text: &str,
    cache: &HubCache,
    hub: Option<&HubClient>,
    options: &InventoryOptions,
) -> Result<(Inventory, Vec<String>), ExportError> {
    let mut warnings = Vec::new();
    let mut components = Vec::new();
    for kernel in lock.locked_kernels(lock_path)? {
        let requested = requested(lock, &kernel);
        let read = Reader {
            kernel: &kernel,
            cache,
            options,
        };
        for mut component in read.components(hub, &mut warnings).await? {
            component.requested = requested.clone();
            components.push(component);
        }
    }
    components.sort_by(|a, b| {
        (a.repo_id.as_str(), a.commit.as_str(), &a.variant).cmp(&(
            b.repo_id.as_str(),
            b.commit.as_str(),
            &b.variant,
        ))
    });
    components
        .dedup_by(|a, b| a.repo_id == b.repo_id && a.commit == b.commit && a.variant == b.variant);
    let inventory = Inventory {
        lock_format: lock.format(),
        lock_sha256: Digest::Sha256(sha256(lock_text.as_bytes())).to_string(),
        components,
        created: options.created,
    };
    Ok((inventory, warnings))
}

/// What the 0.17 entries locked at `kernel`'s commit asked for.
fn requested(lock: &Lockfile, kernel: &LockedKernel) -> Vec<String> {
    let Lockfile::KernelLocks(locks) = lock else {
        return Vec::new();
    };
    locks
        .iter()
        .filter(|(dep, commit)| {
            **commit == kernel.commit
                && dep
                    .repo_id
                    .parse::<RepoId>()
                    .is_ok_and(|r| r == kernel.repo_id)
        })
        .map(|(dep, _)| match &dep.version {
            KernelVersion::Version(n) => format!("version {n}"),
            KernelVersion::Revision(r) => format!("revision {r}"),
        })
        .collect()
}

/// One locked kernel and where to read it.
struct Reader<'a> {
    kernel: &'a LockedKernel,
    cache: &'a HubCache,
    options: &'a InventoryOptions,
}

impl Reader<'_> {
    /// The kernel's components: from the Hub when asked or when the cache
    /// lacks the commit (and `hub` is given), else from the cache.
    async fn components(
        &self,
        hub: Option<&HubClient>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Component>, ExportError> {
        let folder = self.cached_folder();
        match (hub, folder) {
            (Some(client), None) => self.read_hub(client, warnings).await,
            (Some(client), Some(_)) if self.options.online => self.read_hub(client, warnings).await,
            (_, Some(repo)) => Ok(self.read_cache(&repo)),
            (None, None) => self.uncached(warnings),
        }
    }

    fn label(&self) -> String {
        format!("{}@{}", self.kernel.repo_id, self.kernel.commit.short())
    }

    /// The cache folder holding the commit's snapshot: that of the asked
    /// repository type first, then the other.
    fn cached_folder(&self) -> Option<RepoCache> {
        let other = match self.options.repo_type {
            RepoType::Model => RepoType::Kernel,
            _ => RepoType::Model,
        };
        [self.options.repo_type, other]
            .into_iter()
            .map(|t| self.cache.repo(&self.kernel.repo_id, t))
            .find(|repo| repo.snapshot_dir(self.kernel.commit.as_str()).is_dir())
    }

    /// A component of `variant` with `metadata`, its hash from the lock.
    fn component(&self, variant: &str, metadata: VariantMetadata) -> Component {
        let variant_hash = self
            .kernel
            .variants
            .as_ref()
            .and_then(|v| v.get(variant))
            .map(|hash| hash.strip_prefix("sha256-").unwrap_or(hash).to_owned());
        Component {
            repo_id: self.kernel.repo_id.clone(),
            commit: self.kernel.commit.clone(),
            variant: variant.to_owned(),
            requested: Vec::new(),
            variant_hash,
            metadata,
        }
    }

    /// Offline, nothing cached: a variant-hash lock's variants without
    /// metadata (and a warning); a 0.17 lock has no variants to name.
    fn uncached(&self, warnings: &mut Vec<String>) -> Result<Vec<Component>, ExportError> {
        if self.kernel.variants.is_none() {
            return Err(ExportError::NotCached {
                repo_id: self.kernel.repo_id.clone(),
                commit: self.kernel.commit.clone(),
                cache: self.cache.root().to_owned(),
            });
        }
        warnings.push(format!(
            "{} is not in the cache: its variants are listed without their metadata.json (run `kernels download --all-variants`, or export without `--offline`)",
            self.label()
        ));
        Ok(self.lock_only("not in the cache"))
    }

    /// The lock's variants (none for a 0.17 lock), each without metadata for
    /// `reason`.
    fn lock_only(&self, reason: &str) -> Vec<Component> {
        let unknown = || VariantMetadata::Unknown {
            reason: reason.to_owned(),
        };
        self.kernel
            .variants
            .iter()
            .flat_map(|v| v.keys())
            .map(|name| self.component(name, unknown()))
            .collect()
    }

    /// The components from the cache's snapshot of the commit: the lock's
    /// variants, or (0.17) the variant directories the snapshot holds.
    fn read_cache(&self, repo: &RepoCache) -> Vec<Component> {
        let commit = &self.kernel.commit;
        let names: Vec<String> = match &self.kernel.variants {
            Some(variants) => variants.keys().cloned().collect(),
            None => snapshot_variants(&repo.snapshot_dir(commit.as_str()).join("build")),
        };
        names
            .iter()
            .map(|name| {
                let metadata = match cached_bytes(repo, commit, name) {
                    Some(bytes) => read_bytes(name, &bytes, MetadataSource::Cache),
                    None => VariantMetadata::Unknown {
                        reason: "its metadata.json is not in the cache".to_owned(),
                    },
                };
                self.component(name, metadata)
            })
            .collect()
    }

    /// The components from the Hub's listing of the commit's `build/`.
    async fn read_hub(
        &self,
        client: &HubClient,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Component>, ExportError> {
        let (repo_id, commit) = (&self.kernel.repo_id, &self.kernel.commit);
        let store = MetadataCache::new(self.cache.clone());
        let repo_type = self.options.repo_type;
        let read = variant_metadata(client, Some(&store), repo_type, repo_id, commit, None).await;
        store.flush().await;
        let read = read.map_err(|source| ExportError::Hub {
            repo_id: repo_id.clone(),
            commit: commit.clone(),
            source: Box::new(source),
        })?;
        let Some(read) = read else {
            warnings.push(format!(
                "{} has no build/ directory on the Hub",
                self.label()
            ));
            return Ok(self.lock_only("the commit has no build/ directory on the Hub"));
        };
        let repo = self.cache.repo(repo_id, repo_type);
        let mut answers: BTreeMap<String, VariantMetadata> = read
            .variants
            .into_iter()
            .map(|(name, answer)| {
                let blob = read.blobs.get(&name).map(ToString::to_string);
                let metadata = hub_answer(&repo, answer, blob);
                (name, metadata)
            })
            .collect();
        let names: Vec<String> = match &self.kernel.variants {
            Some(variants) => variants.keys().cloned().collect(),
            None => answers.keys().cloned().collect(),
        };
        Ok(names
            .iter()
            .map(|name| {
                let metadata = answers.remove(name).unwrap_or(VariantMetadata::Unknown {
                    reason: "the Hub lists no such variant at this commit".to_owned(),
                });
                self.component(name, metadata)
            })
            .collect())
    }
}

/// A variant's `metadata.json` as the Hub answered, its bytes (for their
/// SHA-256) from the cache's blob of `git_blob` when stored there.
fn hub_answer(
    repo: &RepoCache,
    answer: Result<Metadata, LockError>,
    git_blob: Option<String>,
) -> VariantMetadata {
    match answer {
        Ok(metadata) => VariantMetadata::Read {
            source: MetadataSource::Hub,
            sha256: git_blob
                .as_deref()
                .and_then(|etag| verified_blob(repo, etag))
                .map(|bytes| Digest::Sha256(sha256(&bytes)).to_string()),
            git_blob,
            metadata: Box::new(metadata),
        },
        Err(LockError::MissingMetadata { .. }) => VariantMetadata::Unknown {
            reason: "the variant has no metadata.json".to_owned(),
        },
        Err(LockError::InvalidMetadata {
            variant, problem, ..
        }) => VariantMetadata::Invalid {
            problem: format!("`build/{variant}/metadata.json` is invalid: {problem}"),
        },
        Err(other) => VariantMetadata::Unknown {
            reason: other.to_string(),
        },
    }
}

/// Parses the bytes of `build/<variant>/metadata.json`.
fn read_bytes(variant: &str, bytes: &[u8], source: MetadataSource) -> VariantMetadata {
    match Metadata::from_slice(bytes) {
        Ok(metadata) => VariantMetadata::Read {
            source,
            git_blob: Some(Digest::GitSha1(git_blob_sha1(bytes)).to_string()),
            sha256: Some(Digest::Sha256(sha256(bytes)).to_string()),
            metadata: Box::new(metadata),
        },
        Err(problem) => VariantMetadata::Invalid {
            problem: format!("`build/{variant}/metadata.json` is invalid: {problem}"),
        },
    }
}

/// The variant directories under a snapshot's `build/` (names the runtime's
/// variant parser accepts), sorted.
fn snapshot_variants(build: &Path) -> Vec<String> {
    let Ok(entries) = fs_err::read_dir(build) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| fs_err::metadata(e.path()).is_ok_and(|m| m.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| BuildVariant::parse(name).runtime_backend().is_some())
        .collect();
    names.sort();
    names
}
