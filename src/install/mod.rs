//! Downloading locked kernels into the Hugging Face hub cache.
//!
//! Per kernel: one recursive tree listing at the locked commit, variant
//! selection ([`crate::variant`]), then every file of the selected variants is
//! placed as a verified blob plus a relative snapshot link ([`kernels_cache`]).
//! Blobs already in the cache whose content verifies cost no request. A
//! variant locked with a `git_lfs_concat` hash is reported done only after the
//! hash recomputed from the linked blobs equals the lock's. All kernels are
//! tried; failures are collected in the [`DownloadSummary`].
//!
//! With a variant-hash lock, a kernel whose selected variants are already
//! complete and verified in the cache costs no request at all, not even the
//! listing (module `warm`; [`DownloadOptions::refresh`] lists it anyway).
//!
//! In offline mode (`--offline`, `HF_HUB_OFFLINE`) no request is made: the
//! kernels are checked with [`crate::install::verify::verify_kernels`] (the code behind
//! `kernels verify`), which lists the files from the cached snapshot, re-hashes
//! every linked blob and checks variant hashes, so an offline run accepts a
//! cache written by us or by `huggingface_hub` and names whatever is missing.

pub mod dry_run;
pub mod explain;
mod fetch;
pub mod plan;
pub mod reporter;
pub mod verify;
mod warm;

use std::sync::Arc;

use futures_util::future::join_all;
use tokio::sync::Semaphore;

use crate::install::verify::{KernelVerification, Problem, verify_kernels};
pub use crate::lock::format::LockedKernel;
use crate::variant::{VariantError, VariantSelection};
use kernels_cache::{CacheError, HubCache};
use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

pub use dry_run::{DRY_RUN_SCHEMA, DryRunKernel, DryRunVariant, dry_run};
pub(crate) use fetch::{Fetched, Source, ensure_blob};
pub use plan::{KernelPlan, PlannedFile, plan_kernel};
pub use reporter::{FileReporter, NoReporter, PlannedKernel, Reporter, RetryEvent};

/// Default number of files fetched at the same time (`--concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 8;

/// What to download and how.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// Repository type: decides the API and resolve URLs and the cache prefix
    /// (`kernels--` or `models--`).
    pub repo_type: RepoType,
    /// Variant selection applied to every kernel.
    pub selection: VariantSelection,
    /// Maximum number of files fetched at once over all kernels (at least 1).
    pub concurrency: usize,
    /// Ref names to record per `(repo, commit)` once the kernel is in the
    /// cache (`refs/<name>`: the branch or tag the entry was resolved from,
    /// such as `v2` for `version = 2`), so that a runtime resolves them offline.
    pub refs: Vec<KernelRef>,
    /// List every kernel on the Hub even when a variant-hash lock and the
    /// cache already show it complete (`--refresh`); otherwise such kernels
    /// cost no request.
    pub refresh: bool,
}

/// One `refs/<name>` to record for a locked kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRef {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Branch or tag name.
    pub name: String,
}

/// A kernel whose selected variants are all in the cache and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelReport {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Variants placed, sorted.
    pub variants: Vec<String>,
    /// Files linked in the snapshot.
    pub files: usize,
    /// Total size of those files in bytes.
    pub bytes: u64,
    /// Bytes received over the network (0 when everything was cached).
    pub fetched_bytes: u64,
    /// Distinct blobs that had to be downloaded.
    pub fetched_blobs: usize,
    /// The version the kernel's commit goes by, when known: the ref it was
    /// locked from ([`DownloadOptions::refs`]), else a `vX.Y.Z` release tag
    /// or `vN` branch at that commit (from the Hub's refs when the kernel was
    /// listed, from the cache's `refs/` when it was complete already).
    pub version: Option<String>,
}

/// A kernel that could not be downloaded.
#[derive(Debug)]
pub struct KernelFailure {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Why.
    pub error: DownloadError,
}

impl KernelFailure {
    /// An offline kernel whose cached files failed verification.
    pub(crate) fn not_cached(check: crate::install::verify::KernelVerification) -> Self {
        KernelFailure {
            error: DownloadError::NotCached {
                repo_id: check.repo_id.clone(),
                commit: check.commit.clone(),
                problems: check.problems,
            },
            repo_id: check.repo_id,
            commit: check.commit,
        }
    }
}

/// Outcome of [`download`], in lock order.
#[derive(Debug, Default)]
pub struct DownloadSummary {
    /// Kernels downloaded and verified.
    pub done: Vec<KernelReport>,
    /// Kernels that failed.
    pub failed: Vec<KernelFailure>,
    /// A check before any download failed for the whole run (read-only cache
    /// with files missing, not enough free space); nothing was fetched.
    pub blocked: Option<DownloadError>,
    /// What the cache adapted to (no flock, no symlinks), each once.
    pub warnings: Vec<kernels_cache::CacheWarning>,
}

/// Why one kernel could not be downloaded.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DownloadError {
    /// A Hub request failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),

    /// Writing or verifying the cache failed (including content mismatches).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),

    /// Variant selection failed for this kernel.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] VariantError),

    /// A tree entry lacks a usable digest.
    #[error("the Hub listing of {repo_id}@{commit} has no valid digest for `{path}`")]
    #[diagnostic(
        code(kernels::download::invalid_listing),
        help("the server's tree listing is malformed; report it to the mirror's operator")
    )]
    InvalidListing {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// Repo path of the entry.
        path: String,
    },

    /// A listing names a path that could leave the snapshot or is otherwise
    /// unusable ([`kernels_types::repo_path`]); refused before any file request.
    #[error(
        "the Hub listing of {repo_id}@{commit} has an unsafe path `{}`: {reason}",
        kernels_types::text::escape(path)
    )]
    #[diagnostic(
        code(kernels::download::unsafe_path),
        help(
            "nothing was downloaded; the server's listing is malformed or hostile, report it to the mirror's operator"
        )
    )]
    UnsafePath {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The refused path, as listed.
        path: String,
        /// What is wrong with it.
        reason: kernels_types::repo_path::RepoPathError,
    },

    /// A variant the lock pins is not in the Hub listing of the locked commit.
    #[error(
        "variant `{variant}` of {repo_id}@{commit} is in kernels.lock but not in the Hub listing of that commit (listed: {})",
        if listed.is_empty() { "none".to_owned() } else { listed.join(", ") }
    )]
    #[diagnostic(
        code(kernels::download::locked_variant_not_listed),
        help(
            "the server's listing is incomplete or the lock does not belong to this repository; check the mirror, or regenerate the lock with `kernels lock`"
        )
    )]
    LockedVariantNotListed {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Variants the listing has.
        listed: Vec<String>,
    },

    /// Files are missing and the cache cannot be written.
    #[error(
        "the cache {} is not writable and {} file(s) are missing from it: {}{}",
        dir.display(), missing.len(),
        missing.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
        if missing.len() > 5 { ", …" } else { "" }
    )]
    #[diagnostic(
        code(kernels::download::read_only),
        help(
            "download into a writable cache first (set KERNELS_CACHE), or make this one writable"
        )
    )]
    ReadOnly {
        /// The cache directory.
        dir: std::path::PathBuf,
        /// `owner/name@commit: path` of each missing file.
        missing: Vec<String>,
    },

    /// Not enough free space for what must be fetched.
    #[error(
        "not enough disk space in {}: {} byte(s) to download, {} byte(s) free",
        dir.display(), needed, available
    )]
    #[diagnostic(
        code(kernels::download::no_space),
        help(
            "free space (`kernels cache prune` removes leftovers and unreferenced blobs) or move the cache (`--cache-dir` or KERNELS_CACHE)"
        )
    )]
    NoSpace {
        /// The cache directory.
        dir: std::path::PathBuf,
        /// Bytes to fetch.
        needed: u64,
        /// Bytes free on its file system.
        available: u64,
    },

    /// A selected variant has no hash in a variant-hash lock.
    #[error("kernels.lock has no hash for variant `{variant}` of {repo_id}@{commit}")]
    #[diagnostic(
        code(kernels::download::variant_not_locked),
        help(
            "run `kernels lock` to refresh the lock, or pick locked variants with `--variant NAME`"
        )
    )]
    VariantNotLocked {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
    },

    /// The Hub listing of a variant does not hash to the lock's value.
    #[error(
        "variant `{variant}` of {repo_id}@{commit}: kernels.lock has {locked}, but the Hub listing hashes to {listed}"
    )]
    #[diagnostic(
        code(kernels::download::listing_mismatch),
        help("the lock does not describe this commit's files; regenerate it with `kernels lock`")
    )]
    ListingMismatch {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Hash in the lock.
        locked: String,
        /// Hash of the listed files.
        listed: String,
    },

    /// After download, the variant's files do not hash to the lock's value.
    #[error(
        "variant `{variant}` of {repo_id}@{commit}: kernels.lock has {locked}, but the downloaded files hash to {actual}"
    )]
    #[diagnostic(
        code(kernels::download::variant_mismatch),
        help("the cache snapshot does not match the lock; run `kernels download` again")
    )]
    VariantMismatch {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Hash in the lock.
        locked: String,
        /// Hash recomputed from the cache.
        actual: String,
    },

    /// Offline mode and the cache does not hold every selected file, verified.
    #[error(
        "{}@{} cannot be used offline (--offline or HF_HUB_OFFLINE):{}",
        repo_id, commit.short(), problems.iter().map(|p| format!("\n  - {p}")).collect::<String>()
    )]
    #[diagnostic(
        code(kernels::download::not_cached),
        help("run `kernels download` without --offline and with HF_HUB_OFFLINE unset to fetch it")
    )]
    NotCached {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// What is missing or wrong, as `kernels verify` reports it.
        problems: Vec<Problem>,
    },

    /// A bug or runtime failure (a worker task died).
    #[error("internal error: {0}")]
    #[diagnostic(code(kernels::download::internal))]
    Internal(String),
}

/// Downloads every kernel of `kernels` into `cache`; see the module docs.
///
/// Never stops at the first failure: each kernel ends up in
/// [`DownloadSummary::done`] or [`DownloadSummary::failed`] (in input order).
/// Status lines go through `progress`.
pub async fn download(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> DownloadSummary {
    // Offline, the run is a check and writes nothing (refs included).
    let mut summary = if client.is_offline() {
        verify_offline(cache, kernels, options, progress).await
    } else {
        let summary = download_online(client, cache, kernels, options, progress).await;
        for report in &summary.done {
            record_refs(cache, options, report);
        }
        summary
    };
    summary.warnings = cache.take_warnings();
    summary
}

/// Writes the `refs/<name>` files of a finished kernel: the refs it was
/// locked from and the version its line names (a release tag at the commit,
/// so that a later run finds it without a request). A cache that cannot be
/// written keeps what it has (a read-only cache stays untouched).
fn record_refs(cache: &HubCache, options: &DownloadOptions, report: &KernelReport) {
    let repo = cache.repo(&report.repo_id, options.repo_type);
    let names = options
        .refs
        .iter()
        .filter(|r| r.repo_id == report.repo_id && r.commit == report.commit)
        .map(|r| r.name.as_str())
        .chain(report.version.as_deref());
    for name in names {
        if repo.read_ref(name).as_deref() == Some(report.commit.as_str()) {
            continue;
        }
        if let Err(err) = repo.write_ref(name, report.commit.as_str()) {
            tracing::warn!("{}: cannot record refs/{name}: {err}", report.repo_id);
        }
    }
}

/// One kernel of an online run before its files are fetched: complete in the
/// cache already, or listed and planned.
enum Step {
    /// Every selected variant is in the cache and verified; no request needed.
    Warm(warm::Warm),
    /// The listing and plan, or why they failed.
    Listed(Result<Prepared, DownloadError>),
}

/// One kernel after listing: its plan and what is already in place.
struct Prepared {
    plan: KernelPlan,
    /// The version tag or branch the Hub's refs name at the commit, looked up
    /// with the listing when the lock names none.
    version: Option<String>,
    /// Per distinct blob: digest, the paths it backs, and whether each path
    /// is already in place (a verified link or a verified copy).
    blobs: Vec<(kernels_types::BlobId, Vec<(String, bool)>)>,
}

impl Prepared {
    fn missing_paths(&self) -> impl Iterator<Item = &str> {
        self.blobs
            .iter()
            .flat_map(|(_, paths)| paths.iter().filter(|(_, ok)| !ok).map(|(p, _)| p.as_str()))
    }
}

async fn prepare(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> Result<Prepared, DownloadError> {
    let repo = cache.repo(&kernel.repo_id, options.repo_type);
    let label = plan::label(&kernel.repo_id, &kernel.commit);
    tracing::debug!("{label}: listing the files of the locked commit");
    let listing = client.list_tree(
        options.repo_type,
        &kernel.repo_id,
        kernel.commit.as_str(),
        "",
        true,
    );
    // The version, for the kernel's line: best effort, in parallel with the
    // listing, only when the lock or pyproject.toml names no ref.
    let version = async {
        if locked_ref(options, kernel).is_some() {
            return None;
        }
        let refs = client
            .list_refs(options.repo_type, &kernel.repo_id)
            .await
            .ok()?;
        crate::lock::inspect::label_in(&refs, &kernel.commit).map(str::to_owned)
    };
    let (entries, version) = tokio::join!(listing, version);
    let entries = entries?;
    report_warnings(kernel, &entries, &options.selection, progress);
    let plan = plan_kernel(kernel, &entries, &options.selection)?;
    let commit = kernel.commit.clone();
    let blob_list: Vec<_> = plan.blobs().into_values().collect();
    let blobs = tokio::task::spawn_blocking(move || {
        blob_list
            .into_iter()
            .map(|(digest, paths)| {
                let placed = paths
                    .into_iter()
                    .map(|path| {
                        let ok = matches!(
                            repo.placement(commit.as_str(), &path, &digest),
                            Ok(kernels_cache::Placement::Linked | kernels_cache::Placement::Copied)
                        );
                        (path, ok)
                    })
                    .collect();
                (digest, placed)
            })
            .collect()
    })
    .await
    .map_err(|err| DownloadError::Internal(format!("cache check failed: {err}")))?;
    Ok(Prepared {
        plan,
        version,
        blobs,
    })
}

/// The ref `kernel` was locked from, per [`DownloadOptions::refs`].
fn locked_ref<'a>(options: &'a DownloadOptions, kernel: &LockedKernel) -> Option<&'a str> {
    options
        .refs
        .iter()
        .find(|r| r.repo_id == kernel.repo_id && r.commit == kernel.commit)
        .map(|r| r.name.as_str())
}

/// The version of a kernel found complete in the cache: the ref it was
/// locked from, else a version-like name among the cache's refs that point
/// at its commit ([`kernels_cache::RepoCache::refs_at`]).
fn cached_version(
    cache: &HubCache,
    options: &DownloadOptions,
    kernel: &LockedKernel,
) -> Option<String> {
    if let Some(name) = locked_ref(options, kernel) {
        return Some(name.to_owned());
    }
    let names = cache
        .repo(&kernel.repo_id, options.repo_type)
        .refs_at(kernel.commit.as_str());
    // The cache's `refs/` do not tell tags from branches: the label rule
    // tells them apart by shape.
    let names = || names.iter().map(String::as_str);
    crate::lock::label::commit_label(names(), names()).map(str::to_owned)
}

/// Bytes still to fetch for `prepared`: blobs neither in place nor in
/// `blobs/`, less what their `.incomplete` files already hold.
fn bytes_to_fetch(repo: &kernels_cache::RepoCache, prepared: &Prepared) -> u64 {
    prepared
        .blobs
        .iter()
        .filter(|(_, paths)| paths.iter().any(|(_, ok)| !ok))
        .filter(|(digest, _)| !repo.blob_matches(digest).unwrap_or(false))
        .map(|(digest, _)| {
            let partial = fs_err::symlink_metadata(repo.incomplete_path(&digest.etag()))
                .map_or(0, |m| m.len());
            digest.size.saturating_sub(partial)
        })
        .sum()
}

async fn download_online(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> DownloadSummary {
    progress.start(kernels.len());
    // A variant-hash lock says what must be on disk: kernels already complete
    // and verified there cost no request (unless `--refresh`).
    let warm = if options.refresh {
        kernels.iter().map(|_| None).collect()
    } else {
        warm::check(cache, kernels, options.repo_type, &options.selection).await
    };
    let prepared: Vec<Step> = join_all(kernels.iter().zip(warm).map(|(kernel, warm)| async move {
        match warm {
            Some(warm) => Step::Warm(warm),
            None => Step::Listed(prepare(client, cache, kernel, options, progress).await),
        }
    }))
    .await;

    // Checks for the whole run before any byte is fetched.
    let mut missing = Vec::new();
    let mut needed = 0;
    for (kernel, prepared) in kernels.iter().zip(&prepared) {
        if let Step::Listed(Ok(prepared)) = prepared {
            let label = plan::label(&kernel.repo_id, &kernel.commit);
            missing.extend(prepared.missing_paths().map(|p| format!("{label}: {p}")));
            needed += bytes_to_fetch(&cache.repo(&kernel.repo_id, options.repo_type), prepared);
        }
    }
    let mut summary = DownloadSummary::default();
    if !missing.is_empty() && !cache.is_writable() {
        summary.blocked = Some(DownloadError::ReadOnly {
            dir: cache.root().to_owned(),
            missing,
        });
    } else if let Some(available) = cache.free_space()
        && needed > available
    {
        summary.blocked = Some(DownloadError::NoSpace {
            dir: cache.root().to_owned(),
            needed,
            available,
        });
    }
    if summary.blocked.is_some() {
        for (kernel, prepared) in kernels.iter().zip(prepared) {
            if let Step::Listed(Err(error)) = prepared {
                summary.failed.push(KernelFailure {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    error,
                });
            }
        }
        progress.finish();
        return summary;
    }

    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let results = join_all(kernels.iter().zip(prepared).map(|(kernel, step)| {
        let permits = permits.clone();
        async move {
            let result = match step {
                Step::Warm(warm) => {
                    for warning in &warm.warnings {
                        progress.warning(warning);
                    }
                    let mut report = KernelReport::from_verification(&warm.check);
                    report.version = cached_version(cache, options, kernel);
                    Ok(report)
                }
                Step::Listed(Ok(prepared)) => {
                    let version = locked_ref(options, kernel)
                        .map(str::to_owned)
                        .or_else(|| prepared.version.clone());
                    download_kernel(client, cache, kernel, prepared, options, &permits, progress)
                        .await
                        .map(|report| KernelReport { version, ..report })
                }
                Step::Listed(Err(err)) => Err(err),
            };
            if let Ok(report) = &result {
                progress.kernel_done(report);
            }
            (kernel, result)
        }
    }))
    .await;
    progress.finish();
    for (kernel, result) in results {
        match result {
            Ok(report) => summary.done.push(report),
            Err(error) => summary.failed.push(KernelFailure {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                error,
            }),
        }
    }
    summary
}

async fn download_kernel(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    prepared: Prepared,
    options: &DownloadOptions,
    permits: &Semaphore,
    progress: &dyn Reporter,
) -> Result<KernelReport, DownloadError> {
    let repo = cache.repo(&kernel.repo_id, options.repo_type);
    let label = plan::label(&kernel.repo_id, &kernel.commit);
    let Prepared { plan, blobs, .. } = prepared;
    tracing::debug!(
        "{label}: {} file(s), {} blob(s) in variant(s) {}",
        plan.file_count(),
        blobs.len(),
        plan.variants.keys().cloned().collect::<Vec<_>>().join(", ")
    );
    progress.kernel_planned(&PlannedKernel {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        variants: plan.variants.keys().cloned().collect(),
        files: plan.file_count(),
        bytes: plan.total_bytes(),
    });

    let outcomes = join_all(blobs.iter().map(|(digest, paths)| {
        let repo = &repo;
        async move {
            let count = paths.len() as u64;
            if paths.iter().all(|(_, ok)| *ok) {
                // Everything in place (links or verified copies): no lock, no write.
                progress.cached(digest.size * count);
                return Ok::<_, DownloadError>(Fetched::Cached);
            }
            let _permit = permits
                .acquire()
                .await
                .map_err(|err| DownloadError::Internal(err.to_string()))?;
            let source = Source {
                client,
                repo_type: options.repo_type,
                repo_id: &kernel.repo_id,
                commit: kernel.commit.as_str(),
                path: &paths[0].0,
            };
            let fetched = ensure_blob(repo, digest, &source, progress).await?;
            match &fetched {
                Fetched::Cached => tracing::debug!("{}: cached and verified", paths[0].0),
                Fetched::Downloaded { bytes } => {
                    tracing::debug!("{}: downloaded {bytes} bytes, verified", paths[0].0);
                }
            }
            // Links (or copies) only after the blob is in place; without
            // symlinks a new blob is moved into the last path that needs it.
            let todo: Vec<&str> = paths
                .iter()
                .filter(|(_, ok)| !ok)
                .map(|(p, _)| p.as_str())
                .collect();
            let new_blob = matches!(fetched, Fetched::Downloaded { .. });
            for (i, path) in todo.iter().enumerate() {
                let last = i + 1 == todo.len();
                repo.place(
                    kernel.commit.as_str(),
                    path,
                    &digest.etag(),
                    new_blob && last,
                )?;
            }
            if let Fetched::Cached = fetched {
                progress.cached(digest.size * count);
            } else {
                progress.cached(digest.size * (count - 1));
            }
            Ok(fetched)
        }
    }))
    .await;

    let mut fetched_bytes = 0;
    let mut fetched_blobs = 0;
    let mut first_error = None;
    for outcome in outcomes {
        match outcome {
            Ok(Fetched::Cached) => {}
            Ok(Fetched::Downloaded { bytes }) => {
                fetched_bytes += bytes;
                fetched_blobs += 1;
            }
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    if let Some(err) = first_error {
        return Err(err);
    }

    if let Some(hashes) = &kernel.variants {
        for (variant, files) in &plan.variants {
            let locked = hashes
                .get(variant)
                .ok_or_else(|| DownloadError::VariantNotLocked {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    variant: variant.clone(),
                })?;
            verify_variant(&repo, kernel, variant, files, locked)?;
        }
    }

    Ok(KernelReport {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        variants: plan.variants.keys().cloned().collect(),
        files: plan.file_count(),
        bytes: plan.total_bytes(),
        fetched_bytes,
        fetched_blobs,
        version: None,
    })
}

/// Passes what choosing among the listed variants of `kernel` warns about to
/// `reporter`.
pub(crate) fn report_warnings(
    kernel: &LockedKernel,
    entries: &[kernels_types::wire::TreeEntry],
    selection: &VariantSelection,
    reporter: &dyn Reporter,
) {
    let available = plan::available_variants(entries);
    for warning in selection.warnings(&kernel.repo_id, &kernel.commit, &available) {
        reporter.warning(&warning);
    }
}

/// The offline run: every kernel is checked in the cache by
/// [`verify_kernels`]; a kernel with any problem fails with
/// [`DownloadError::NotCached`] listing them all.
async fn verify_offline(
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> DownloadSummary {
    let (cache_owned, kernels_owned, repo_type, selection) = (
        cache.clone(),
        kernels.to_vec(),
        options.repo_type,
        options.selection.clone(),
    );
    let checks = tokio::task::spawn_blocking(move || {
        verify_kernels(&cache_owned, repo_type, &kernels_owned, &selection)
    })
    .await;
    let mut summary = DownloadSummary::default();
    let checks = match checks {
        Ok(checks) => checks,
        Err(err) => {
            summary.failed = kernels
                .iter()
                .map(|kernel| KernelFailure {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    error: DownloadError::Internal(format!("verification task failed: {err}")),
                })
                .collect();
            return summary;
        }
    };
    for warning in checks.iter().flat_map(|check| &check.warnings) {
        progress.warning(warning);
    }
    for check in checks {
        if check.is_ok() {
            let mut report = KernelReport::from_verification(&check);
            if let Some(kernel) = kernels
                .iter()
                .find(|k| k.repo_id == report.repo_id && k.commit == report.commit)
            {
                report.version = cached_version(cache, options, kernel);
            }
            progress.kernel_done(&report);
            summary.done.push(report);
        } else {
            summary.failed.push(KernelFailure::not_cached(check));
        }
    }
    progress.finish();
    summary
}

/// Recomputes a variant's `git_lfs_concat` hash from what the snapshot links
/// point at (each blob name is its verified digest) and compares it with the lock.
fn verify_variant(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    variant: &str,
    files: &[PlannedFile],
    locked: &str,
) -> Result<(), DownloadError> {
    let mut linked = Vec::with_capacity(files.len());
    for file in files {
        let current = || {
            repo.linked_etag(kernel.commit.as_str(), &file.path)
                .filter(|etag| repo.blob_path(etag).is_file())
        };
        // `huggingface_hub` replaces a link by removing it first; if another
        // process is doing that right now, put ours back (the blob is in place).
        // A verified copy (copy mode, `cp -rL`) stands for its planned digest.
        let copied = || {
            matches!(
                repo.placement(kernel.commit.as_str(), &file.path, &file.digest),
                Ok(kernels_cache::Placement::Copied)
            )
            .then(|| file.digest.etag())
        };
        let etag = current()
            .or_else(copied)
            .or_else(|| {
                repo.link(kernel.commit.as_str(), &file.path, &file.digest.etag())
                    .ok()?;
                current()
            })
            .ok_or_else(|| DownloadError::VariantMismatch {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                variant: variant.to_owned(),
                locked: locked.to_owned(),
                actual: format!("(`{}` is not linked to a blob)", file.path),
            })?;
        let digest = kernels_types::Digest::from_etag(&etag).map_err(|_| {
            DownloadError::VariantMismatch {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                variant: variant.to_owned(),
                locked: locked.to_owned(),
                actual: format!(
                    "(`{}` links to `{etag}`, which is not a blob name)",
                    file.path
                ),
            }
        })?;
        linked.push(PlannedFile {
            path: file.path.clone(),
            digest: kernels_types::BlobId {
                digest,
                size: file.digest.size,
            },
        });
    }
    let actual = plan::variant_hash(variant, &linked);
    if actual != locked {
        return Err(DownloadError::VariantMismatch {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            variant: variant.to_owned(),
            locked: locked.to_owned(),
            actual,
        });
    }
    Ok(())
}

impl KernelReport {
    /// The report of a kernel that [`verify_kernels`] found complete (nothing fetched).
    pub fn from_verification(check: &KernelVerification) -> KernelReport {
        KernelReport {
            repo_id: check.repo_id.clone(),
            commit: check.commit.clone(),
            variants: check.variants.keys().cloned().collect(),
            files: check.file_count(),
            bytes: check.total_bytes(),
            fetched_bytes: 0,
            fetched_blobs: 0,
            version: None,
        }
    }
}

impl KernelFailure {
    /// `owner/name@abcdef1`.
    pub fn label(&self) -> String {
        plan::label(&self.repo_id, &self.commit)
    }
}
