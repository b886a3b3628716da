//! The download engine: per kernel the zero-request check of a complete
//! cache (`warm`), else the listing and plan, then every missing blob fetched
//! ([`super::fetch`]), linked, and the variant hash recomputed; offline, the
//! cache is verified instead.

use std::sync::Arc;

use futures_util::future::join_all;
use rayon::prelude::*;
use tokio::sync::Semaphore;

use kernels_cache::HubCache;
use kernels_hub::HubClient;

use super::digest;
use super::error::DownloadError;
use super::fetch::{Fetched, Source, ensure_blob};
use super::fit;
use super::options::DownloadOptions;
use super::plan::{self, KernelPlan, PlannedFile, plan_kernel};
use super::receipts;
use super::report::{DownloadSummary, KernelFailure, KernelReport};
use super::reporter::{PlannedKernel, Reporter};
use super::signature::{self, Signature};
use super::verify::verify_kernels_fit;
use super::version::cached_version;
use super::warm;
use crate::lock::format::LockedKernel;
use crate::variant::VariantSelection;
use kernels_types::metadata::VariantDigest;

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
            super::runtime_receipts::record(cache, options, report);
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
        if repo.read_ref(name).as_ref() == Some(&report.commit) {
            continue;
        }
        if let Err(err) = repo.write_ref(name, report.commit.as_str()) {
            tracing::warn!("{}: cannot record refs/{name}: {err}", report.repo_id);
        }
    }
}

/// The file names of a variant's metadata and its signature bundle.
const METADATA: &str = kernels_trust::METADATA_FILE;
const BUNDLE: &str = kernels_trust::BUNDLE_FILE;

/// What a planned kernel's variants must be, found before any other file is
/// fetched: per blob the content the digests expect, the digests to check
/// the variant directories against once placed, each variant's signature.
#[derive(Default)]
struct Expected {
    contents: digest::Expectations,
    digests: Vec<(String, VariantDigest)>,
    signatures: std::collections::BTreeMap<String, Signature>,
}

/// One kernel of an online run before its files are fetched: complete in the
/// cache already, or listed and planned.
enum Step {
    /// Every selected variant is in the cache and verified, or the cached
    /// metadata.json files refuse every candidate; no request needed.
    Warm(Result<warm::Warm, DownloadError>),
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
    /// The fit of the candidates, checked before the plan.
    fit: fit::KernelFit,
    /// The metadata.json blobs fetched to check it.
    fit_tally: Tally,
    /// The variant names of the listing, for the listing receipt.
    listed: std::collections::BTreeSet<String>,
}

impl Prepared {
    fn missing_paths(&self) -> impl Iterator<Item = &str> {
        self.blobs
            .iter()
            .flat_map(|(_, paths)| paths.iter().filter(|(_, ok)| !ok).map(|(p, _)| p.as_str()))
    }
}

/// Lists and plans `kernel`; `known` are variants an earlier attempt of this
/// run refused by their compiled files (the walk passes over them).
async fn prepare(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    options: &DownloadOptions,
    progress: &dyn Reporter,
    known: &[fit::RefusedVariant],
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
        if options.locked_ref(kernel).is_some() {
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
    let (mut chosen, fit_tally) =
        choose_fitting(client, cache, kernel, &entries, options, true, known).await?;
    if fit::Mode::of(&options.selection) == fit::Mode::FirstFitting {
        fit::unlink_refused(&repo, &kernel.commit, &mut chosen.fit);
    }
    let plan = plan_kernel(kernel, &entries, &VariantSelection::Named(chosen.variants))?;
    let listed = plan::available_variants(&entries);
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
        fit: chosen.fit,
        fit_tally,
        listed,
    })
}

/// The variants of `kernel` to place, by [`fit::walk`] over the candidates
/// (the lock's variants when it has variant hashes, else the listing's):
/// each candidate's `metadata.json` is fetched into `blobs/` (verified, and
/// found there by later runs) but not linked, since every directory under
/// the snapshot's `build/` is one the runtime may pick. Without `fetch`
/// (a dry run of `--all-variants`, where fit only reports), and in a cache
/// that cannot be written (the run is refused later), a metadata.json not in
/// `blobs/` already is not checked. The variants of `known` (refused by
/// their compiled files in an earlier attempt of this run) are refused
/// again without a lookup, so the environment's choice falls back past them.
pub(crate) async fn choose_fitting(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    entries: &[kernels_types::wire::TreeEntry],
    options: &DownloadOptions,
    fetch: bool,
    known: &[fit::RefusedVariant],
) -> Result<(fit::Chosen, Tally), DownloadError> {
    plan::check_listing(kernel, entries)?;
    let available = match &kernel.variants {
        Some(hashes) if !hashes.is_empty() => hashes.keys().cloned().collect(),
        _ => plan::available_variants(entries),
    };
    let alternatives = options
        .selection
        .candidates(&kernel.repo_id, &kernel.commit, &available)?;
    let repo = &cache.repo(&kernel.repo_id, options.repo_type);
    let subject = fit::Subject {
        repo_id: &kernel.repo_id,
        commit: &kernel.commit,
        runtime: options.fit.runtime,
    };
    let tally = &std::sync::Mutex::new(Tally::default());
    let lookup = |variant: String| async move {
        if let Some(refused) = known.iter().find(|r| r.variant == variant) {
            return Ok(fit::Lookup::Refused(refused.refusals.clone()));
        }
        let path = fit::metadata_path(&variant);
        let Some(entry) = entries.iter().find(|e| e.is_file() && e.path == path) else {
            return Ok(fit::Lookup::NoMetadata);
        };
        let digest = plan::entry_digest(entry).ok_or_else(|| DownloadError::InvalidListing {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            path: path.clone(),
        })?;
        if (!fetch || !cache.is_writable()) && !repo.blob_matches(&digest).unwrap_or(false) {
            return Ok(fit::Lookup::NoMetadata);
        }
        let source = Source {
            client,
            repo_type: options.repo_type,
            repo_id: &kernel.repo_id,
            commit: kernel.commit.as_str(),
            path: &path,
            expected: &[],
        };
        if let Fetched::Downloaded { bytes } =
            ensure_blob(repo, &digest, &source, &super::reporter::NoReporter).await?
            && let Ok(mut tally) = tally.lock()
        {
            tally.bytes += bytes;
            tally.blobs += 1;
            tally.fresh.push(digest.digest);
        }
        let bytes = fs_err::read(repo.blob_path(&digest.etag()))
            .map_err(|err| DownloadError::Internal(format!("cannot read {path}: {err}")))?;
        fit::parse_metadata(subject, &variant, &bytes).map(|m| fit::Lookup::Metadata(Box::new(m)))
    };
    let mode = fit::Mode::of(&options.selection);
    let chosen = fit::walk(subject, alternatives, mode, &options.fit, lookup)
        .await?
        .ok_or_else(|| DownloadError::Internal("a listed variant's fit is unknown".into()))?;
    let tally = tally.lock().map(|t| t.clone()).unwrap_or_default();
    Ok((chosen, tally))
}

/// Bytes still to fetch for `prepared`: blobs neither in place nor in
/// `blobs/`, less what their `.incomplete` files already hold.
fn bytes_to_fetch(repo: &kernels_cache::RepoCache, prepared: &Prepared) -> u64 {
    let sizes = prepared
        .blobs
        .iter()
        .filter(|(_, paths)| paths.iter().any(|(_, ok)| !ok))
        .filter(|(digest, _)| !repo.blob_matches(digest).unwrap_or(false))
        .map(|(digest, _)| {
            let partial = fs_err::symlink_metadata(repo.incomplete_path(&digest.etag()))
                .map_or(0, |m| m.len());
            digest.size.saturating_sub(partial)
        });
    kernels_types::size::total(sizes)
}

/// The online run: list what is not complete in the cache, check the run as
/// a whole (writable cache, free space), then fetch every kernel.
async fn download_online(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> DownloadSummary {
    progress.start(kernels.len());
    let steps = list_kernels(client, cache, kernels, options, progress).await;
    let mut summary = DownloadSummary {
        blocked: check_run(cache, kernels, &steps, options),
        ..DownloadSummary::default()
    };
    if summary.blocked.is_some() {
        for (kernel, step) in kernels.iter().zip(steps) {
            if let Step::Listed(Err(error)) = step {
                summary.failed.push(KernelFailure::new(kernel, error));
            }
        }
        progress.finish();
        return summary;
    }
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let run = &Run {
        client,
        cache,
        options,
        permits: &permits,
        progress,
    };
    let results = join_all(kernels.iter().zip(steps).map(|(kernel, step)| async move {
        let result = run.finish_kernel(kernel, step).await;
        if let Ok(report) = &result {
            progress.kernel_done(report);
        }
        (kernel, result)
    }))
    .await;
    progress.finish();
    for (kernel, result) in results {
        match result {
            Ok(report) => summary.done.push(report),
            Err(error) => summary.failed.push(KernelFailure::new(kernel, error)),
        }
    }
    summary
}

/// Per kernel: complete in the cache already (a variant-hash lock says what
/// must be on disk; unless `--refresh`), else listed and planned.
async fn list_kernels(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> Vec<Step> {
    let warm = if options.refresh {
        kernels.iter().map(|_| None).collect()
    } else {
        warm::check(cache, kernels, options).await
    };
    join_all(kernels.iter().zip(warm).map(|(kernel, warm)| async move {
        match warm {
            Some(warm) => Step::Warm(warm),
            None => Step::Listed(prepare(client, cache, kernel, options, progress, &[]).await),
        }
    }))
    .await
}

/// The checks for the whole run before any byte is fetched: files are
/// missing from a cache that cannot be written, or there is not enough free
/// space for what must be fetched.
fn check_run(
    cache: &HubCache,
    kernels: &[LockedKernel],
    steps: &[Step],
    options: &DownloadOptions,
) -> Option<DownloadError> {
    let mut missing = Vec::new();
    let mut needed = 0;
    for (kernel, step) in kernels.iter().zip(steps) {
        if let Step::Listed(Ok(prepared)) = step {
            let label = plan::label(&kernel.repo_id, &kernel.commit);
            missing.extend(prepared.missing_paths().map(|p| format!("{label}: {p}")));
            needed = u64::saturating_add(
                needed,
                bytes_to_fetch(&cache.repo(&kernel.repo_id, options.repo_type), prepared),
            );
        }
    }
    if !missing.is_empty() && !cache.is_writable() {
        return Some(DownloadError::ReadOnly {
            dir: cache.root().to_owned(),
            missing,
        });
    }
    match cache.free_space() {
        Some(available) if needed > available => Some(DownloadError::NoSpace {
            dir: cache.root().to_owned(),
            needed,
            available,
        }),
        _ => None,
    }
}

/// What every kernel of one online run shares.
struct Run<'a> {
    client: &'a HubClient,
    cache: &'a HubCache,
    options: &'a DownloadOptions,
    /// Files fetched at once, over all kernels.
    permits: &'a Semaphore,
    progress: &'a dyn Reporter,
}

/// The blobs of one kernel that were fetched.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    bytes: u64,
    blobs: usize,
    /// The digests of the blobs fetched (by the fit check).
    fresh: Vec<kernels_types::Digest>,
}

impl Tally {
    /// Distinct blobs downloaded.
    pub(crate) fn blobs(&self) -> usize {
        self.blobs
    }
}

impl Run<'_> {
    /// The report of one kernel: from the cache when it was complete, else
    /// after fetching what its plan needs.
    async fn finish_kernel(
        &self,
        kernel: &LockedKernel,
        step: Step,
    ) -> Result<KernelReport, DownloadError> {
        match step {
            Step::Warm(Err(err)) => Err(err),
            Step::Warm(Ok(warm)) => {
                for warning in &warm.warnings {
                    self.progress.warning(warning);
                }
                let repo = self.cache.repo(&kernel.repo_id, self.options.repo_type);
                let named = fit::Mode::of(&self.options.selection) == fit::Mode::AllMustFit;
                let images = &self.options.fit.images;
                let checked = super::check::abi::check_cached(&repo, &warm.check, images, named);
                let warnings = match checked {
                    Ok(warnings) => warnings,
                    Err(err) => return self.fall_back(kernel, err, Vec::new()).await,
                };
                for warning in warnings {
                    self.progress.warning(&warning);
                }
                let mut report = KernelReport::from_verification(&warm.check);
                report.version = cached_version(self.cache, self.options, kernel);
                if let Some(trust) = &self.options.trust {
                    let repo = self.cache.repo(&kernel.repo_id, self.options.repo_type);
                    report.signatures = super::check::cached(trust, &repo, &warm.check)?;
                }
                Ok(report)
            }
            Step::Listed(Ok(prepared)) => self.download_fitting(kernel, prepared, Vec::new()).await,
            Step::Listed(Err(err)) => Err(err),
        }
    }

    /// [`Self::download_kernel`], falling back past variants refused by
    /// their compiled files ([`Self::fall_back`]); `known` are those refused
    /// already.
    async fn download_fitting(
        &self,
        kernel: &LockedKernel,
        prepared: Prepared,
        known: Vec<fit::RefusedVariant>,
    ) -> Result<KernelReport, DownloadError> {
        let version = self
            .options
            .locked_ref(kernel)
            .map(str::to_owned)
            .or_else(|| prepared.version.clone());
        match self.download_kernel(kernel, prepared).await {
            Ok(report) => Ok(KernelReport { version, ..report }),
            Err(err) => Box::pin(self.fall_back(kernel, err, known)).await,
        }
    }

    /// After `err`: when it refuses variants of the environment's choice by
    /// their compiled files alone ([`super::check::Check::Abi`]), the
    /// kernel is planned again without them (with `known`, those refused
    /// before), as the other fit rules fall back to the next alternative
    /// that fits; their refusals are the report's skipped variants. Any
    /// other error, a named variant, or a refusal of variants refused
    /// already (the walk would choose them again) is returned as it is.
    async fn fall_back(
        &self,
        kernel: &LockedKernel,
        err: DownloadError,
        mut known: Vec<fit::RefusedVariant>,
    ) -> Result<KernelReport, DownloadError> {
        let first_fitting = fit::Mode::of(&self.options.selection) == fit::Mode::FirstFitting;
        let by_abi = super::check::Check::of_error(&err) == Some(super::check::Check::Abi);
        let DownloadError::Unfit { refused, .. } = &err else {
            return Err(err);
        };
        let new = refused
            .iter()
            .any(|r| known.iter().all(|k| k.variant != r.variant));
        if !first_fitting || !by_abi || !new {
            return Err(err);
        }
        known.extend(refused.iter().cloned());
        let (client, cache, options) = (self.client, self.cache, self.options);
        let prepared = prepare(client, cache, kernel, options, self.progress, &known).await?;
        self.download_fitting(kernel, prepared, known).await
    }

    /// Fetches and links every blob of a planned kernel, then recomputes the
    /// hash of each variant a variant-hash lock pins.
    async fn download_kernel(
        &self,
        kernel: &LockedKernel,
        prepared: Prepared,
    ) -> Result<KernelReport, DownloadError> {
        let repo = self.cache.repo(&kernel.repo_id, self.options.repo_type);
        let label = plan::label(&kernel.repo_id, &kernel.commit);
        let Prepared {
            plan,
            blobs,
            fit,
            fit_tally,
            listed,
            ..
        } = prepared;
        let Expected {
            contents: expected,
            digests,
            signatures,
        } = self.expected_contents(&repo, kernel, &plan).await?;
        let variants: Vec<String> = plan.variants.keys().cloned().collect();
        tracing::debug!(
            "{label}: {} file(s), {} blob(s) in variant(s) {}",
            plan.file_count(),
            blobs.len(),
            variants.join(", ")
        );
        self.progress.kernel_planned(&PlannedKernel {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            variants: variants.clone(),
            files: plan.file_count(),
            bytes: plan.total_bytes(),
        });
        let file_hashes: std::collections::BTreeMap<String, signature::FilesHash> = plan
            .variants
            .iter()
            .map(|(variant, files)| {
                let hashed = files.iter().map(PlannedFile::hashed);
                (variant.clone(), signature::files_hashes(variant, hashed))
            })
            .collect();
        if let Some(trust) = &self.options.trust {
            let (repo_id, commit) = (&kernel.repo_id, &kernel.commit);
            super::check::provenance::check(trust, repo_id, commit, &file_hashes, &signatures)?;
        }
        check_dirs(&repo, kernel, &plan, &digests, &signatures)?;
        let tally = self
            .place_blobs(&repo, kernel, &blobs, fit_tally, &expected)
            .await
            .map_err(|err| signed_digest(err, &signatures))?;
        if let Err(err) = check_placed(&repo, kernel, &plan) {
            unplace(&repo, kernel, &blobs);
            return Err(err);
        }
        receipts::record_planned(&repo, kernel, &plan, &listed);
        Ok(KernelReport {
            repo_id: kernel.repo_id.clone(),
            commit: kernel.commit.clone(),
            variants,
            files: plan.file_count(),
            bytes: plan.total_bytes(),
            fetched_bytes: tally.bytes,
            fetched_blobs: tally.blobs,
            version: None,
            fit,
            file_hashes,
            signatures,
        })
    }

    /// The content each blob must have by the metadata digests of the
    /// planned variants ([`super::digest`]), after checking each variant's
    /// signature ([`super::signature`]) and what the listing alone shows
    /// (names, LFS sha256s): a variant that fails either fails the kernel
    /// before anything else is fetched.
    async fn expected_contents(
        &self,
        repo: &kernels_cache::RepoCache,
        kernel: &LockedKernel,
        plan: &KernelPlan,
    ) -> Result<Expected, DownloadError> {
        let mut out = Expected::default();
        for (variant, files) in &plan.variants {
            let metadata = self
                .planned_bytes(repo, kernel, variant, files, METADATA)
                .await?;
            let signed = self.planned_signature(repo, kernel, variant, files, &metadata);
            if let Some(signature) = signed.await? {
                out.signatures.insert(variant.clone(), signature);
            }
            let Some(bytes) = metadata else {
                continue;
            };
            let subject = fit::Subject {
                repo_id: &kernel.repo_id,
                commit: &kernel.commit,
                runtime: self.options.fit.runtime,
            };
            let Some(variant_digest) = fit::parse_metadata(subject, variant, &bytes)?.digest else {
                continue;
            };
            digest::expect_planned(variant, files, &variant_digest, &mut out.contents).map_err(
                |problems| {
                    signed_digest(digest_refused(kernel, variant, problems), &out.signatures)
                },
            )?;
            out.digests.push((variant.clone(), variant_digest));
        }
        Ok(out)
    }

    /// The signature of one planned variant over its `metadata` bytes, its
    /// bundle fetched into `blobs/` (linked later with the other files);
    /// `None` when this run checks no signatures.
    async fn planned_signature(
        &self,
        repo: &kernels_cache::RepoCache,
        kernel: &LockedKernel,
        variant: &str,
        files: &[PlannedFile],
        metadata: &Option<Vec<u8>>,
    ) -> Result<Option<Signature>, DownloadError> {
        let Some(trust) = &self.options.trust else {
            return Ok(None);
        };
        let bundle = self
            .planned_bytes(repo, kernel, variant, files, BUNDLE)
            .await?;
        let subject = signature::Subject {
            repo_id: &kernel.repo_id,
            commit: &kernel.commit,
            variant,
        };
        signature::check_bytes(trust, subject, metadata.as_deref(), bundle.as_deref()).map(Some)
    }

    /// The bytes of the planned `build/<variant>/<name>`: from `blobs/`
    /// (where the fit check put metadata.json) or the snapshot, else
    /// fetched into `blobs/` (verified against the listing); `None` when the
    /// variant has no such file.
    async fn planned_bytes(
        &self,
        repo: &kernels_cache::RepoCache,
        kernel: &LockedKernel,
        variant: &str,
        files: &[PlannedFile],
        name: &str,
    ) -> Result<Option<Vec<u8>>, DownloadError> {
        let path = format!("build/{variant}/{name}");
        let Some(file) = files.iter().find(|f| f.path == path) else {
            return Ok(None);
        };
        let commit = kernel.commit.as_str();
        let in_blobs = repo.blob_matches(&file.digest).unwrap_or(false);
        let placed = matches!(
            repo.placement(commit, &path, &file.digest),
            Ok(kernels_cache::Placement::Linked | kernels_cache::Placement::Copied)
        );
        let on_disk = if in_blobs || !placed {
            let source = Source {
                client: self.client,
                repo_type: self.options.repo_type,
                repo_id: &kernel.repo_id,
                commit,
                path: &path,
                expected: &[],
            };
            ensure_blob(repo, &file.digest, &source, &super::reporter::NoReporter).await?;
            repo.blob_path(&file.digest.etag())
        } else {
            repo.snapshot_path(commit, &path)?
        };
        fs_err::read(&on_disk)
            .map(Some)
            .map_err(|err| DownloadError::Internal(format!("cannot read {path}: {err}")))
    }

    /// Fetches every blob of a kernel (checked against `expected` before it
    /// is kept), then, when all are there, links them: a kernel that fails
    /// leaves nothing of itself in the snapshot. Returns the tally of
    /// `fit_tally` plus what was fetched.
    async fn place_blobs(
        &self,
        repo: &kernels_cache::RepoCache,
        kernel: &LockedKernel,
        blobs: &[(kernels_types::BlobId, Vec<(String, bool)>)],
        fit_tally: Tally,
        expected: &digest::Expectations,
    ) -> Result<Tally, DownloadError> {
        let outcomes = join_all(blobs.iter().map(|(blob, paths)| {
            let expect = expected.get(&blob.digest).map_or(&[][..], Vec::as_slice);
            self.fetch_blob(repo, kernel, blob, paths, expect)
        }))
        .await;
        let mut fetched = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            fetched.push(outcome?);
        }
        let downloaded: Vec<&kernels_types::BlobId> = blobs
            .iter()
            .zip(&fetched)
            .filter(|(_, f)| matches!(f, Fetched::Downloaded { .. }))
            .map(|((blob, _), _)| blob)
            .collect();
        let named = fit::Mode::of(&self.options.selection) == fit::Mode::AllMustFit;
        let images = &self.options.fit.images;
        let warnings = super::check::abi::check(repo, kernel, blobs, &downloaded, images, named)?;
        for warning in &warnings {
            self.progress.warning(warning);
        }
        let mut tally = Tally {
            fresh: Vec::new(),
            ..fit_tally.clone()
        };
        // Links are made a directory at a time on a few threads
        // ([`LINK_THREADS`]: more contend for the file system's allocation
        // locks). The first blob is linked alone, so a file system without
        // symlinks is found (and reported) by the same file on every run.
        let jobs: Vec<_> = blobs.iter().zip(&fetched).collect();
        let link = |((blob, paths), outcome): &(&(kernels_types::BlobId, Vec<_>), &Fetched)| {
            let fresh = fit_tally.fresh.contains(&blob.digest);
            link_blob(repo, kernel, blob, paths, outcome, fresh)
        };
        if let Some((first, rest)) = jobs.split_first() {
            link(first)?;
            let groups = by_directory(rest);
            each_on_few_threads(&groups, LINK_THREADS, |group| {
                group.iter().try_for_each(|job| link(job))
            })?;
        }
        for outcome in fetched {
            if let Fetched::Downloaded { bytes } = outcome {
                tally.bytes = tally.bytes.saturating_add(bytes);
                tally.blobs += 1;
            }
        }
        Ok(tally)
    }

    /// Makes sure one blob is in `blobs/` (fetched under a permit) unless
    /// every path it backs is in place already; either way its content is
    /// checked against `expected` first.
    async fn fetch_blob(
        &self,
        repo: &kernels_cache::RepoCache,
        kernel: &LockedKernel,
        blob: &kernels_types::BlobId,
        paths: &[(String, bool)],
        expected: &[digest::ExpectedContent],
    ) -> Result<Fetched, DownloadError> {
        let count = paths.len() as u64;
        if paths.iter().all(|(_, ok)| *ok) {
            // Everything in place (links or verified copies): no lock, no write.
            check_present(repo, kernel, blob, paths, expected)?;
            self.progress.cached(blob.size.saturating_mul(count));
            return Ok(Fetched::Cached);
        }
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|err| DownloadError::Internal(err.to_string()))?;
        let source = Source {
            client: self.client,
            repo_type: self.options.repo_type,
            repo_id: &kernel.repo_id,
            commit: kernel.commit.as_str(),
            path: &paths[0].0,
            expected,
        };
        let fetched = ensure_blob(repo, blob, &source, self.progress).await?;
        match &fetched {
            Fetched::Cached => {
                check_present(repo, kernel, blob, paths, expected)?;
                tracing::debug!("{}: cached and verified", paths[0].0);
            }
            Fetched::Downloaded { bytes } => {
                tracing::debug!("{}: downloaded {bytes} bytes, verified", paths[0].0);
            }
        }
        let shown = if matches!(fetched, Fetched::Downloaded { .. }) {
            count - 1
        } else {
            count
        };
        self.progress.cached(blob.size.saturating_mul(shown));
        Ok(fetched)
    }
}

/// Before a kernel's files are linked: nothing but planned files in each
/// variant directory of the snapshot (by the digest, else by the listing),
/// so a file planted there refuses the variant before this run links any of
/// it.
fn check_dirs(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    plan: &KernelPlan,
    digests: &[(String, VariantDigest)],
    signatures: &std::collections::BTreeMap<String, Signature>,
) -> Result<(), DownloadError> {
    // A file added to a cached variant directory is no planned file.
    each_in_parallel(digests, |(variant, expected)| {
        let dir = repo.snapshot_path(kernel.commit.as_str(), &format!("build/{variant}"))?;
        let unknown = digest::unknown_in_dir(&dir, expected);
        if !unknown.is_empty() {
            let err = digest_refused(kernel, variant, unknown);
            return Err(signed_digest(err, signatures));
        }
        Ok(())
    })?;
    let variants: Vec<_> = plan.variants.iter().collect();
    each_in_parallel(&variants, |(variant, files)| {
        if digests.iter().any(|(v, _)| v == *variant) {
            return Ok(());
        }
        let dir = repo.snapshot_path(kernel.commit.as_str(), &format!("build/{variant}"))?;
        let planned: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let files = super::vouch::unlisted_in_dir(&dir, variant, &planned);
        if !files.is_empty() {
            return Err(DownloadError::Unlisted {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                variant: (*variant).clone(),
                files,
            });
        }
        Ok(())
    })
}

/// After a kernel's files are linked: each variant a variant-hash lock pins
/// hashes to its value, recomputed from the links.
fn check_placed(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    plan: &KernelPlan,
) -> Result<(), DownloadError> {
    let variants: Vec<_> = plan.variants.iter().collect();
    if let Some(hashes) = &kernel.variants {
        each_in_parallel(&variants, |(variant, files)| {
            let locked = hashes
                .get(*variant)
                .ok_or_else(|| DownloadError::VariantNotLocked {
                    repo_id: kernel.repo_id.clone(),
                    commit: kernel.commit.clone(),
                    variant: (*variant).clone(),
                })?;
            verify_variant(repo, kernel, variant, files, locked)
        })?;
    }
    Ok(())
}

/// A [`DownloadError::Digest`] of a signed variant is the signature's
/// `DigestVerificationFailure` (the signed metadata's digest is what the
/// files differ from); any other error is returned as it is.
fn signed_digest(
    err: DownloadError,
    signatures: &std::collections::BTreeMap<String, Signature>,
) -> DownloadError {
    match err {
        DownloadError::Digest {
            repo_id,
            commit,
            variant,
            problems,
        } if matches!(signatures.get(&variant), Some(Signature::Signed(_))) => {
            DownloadError::Signature {
                repo_id,
                commit,
                variant,
                outcome: "DigestVerificationFailure",
                reason: digest::describe(&problems),
            }
        }
        other => other,
    }
}

/// The [`DownloadError::Digest`] of `variant` of `kernel`.
fn digest_refused(
    kernel: &LockedKernel,
    variant: &str,
    problems: Vec<kernels_trust::DigestProblem>,
) -> DownloadError {
    DownloadError::Digest {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        variant: variant.to_owned(),
        problems,
    }
}

/// Checks a blob already in the cache against `expected`: `blobs/<etag>`,
/// or the copy at its first placed path (a cache without links).
fn check_present(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    blob: &kernels_types::BlobId,
    paths: &[(String, bool)],
    expected: &[digest::ExpectedContent],
) -> Result<(), DownloadError> {
    if expected.is_empty() {
        return Ok(());
    }
    let mut on_disk = repo.blob_path(&blob.etag());
    if !on_disk.is_file()
        && let Some((path, _)) = paths.iter().find(|(_, ok)| *ok)
    {
        on_disk = repo.snapshot_path(kernel.commit.as_str(), path)?;
    }
    let problems = digest::check_content(&on_disk, expected);
    if problems.is_empty() {
        return Ok(());
    }
    Err(super::fetch::digest_error(
        &kernel.repo_id,
        kernel.commit.as_str(),
        problems,
    )?)
}

/// Threads that make one kernel's snapshot links. Every new link is an
/// inode and a block allocated in the block group of its directory, under
/// that group's lock: on 16 cores, 16 threads linking 6,000 files spent 22%
/// of the machine's samples in `__pv_queued_spin_lock_slowpath` (`perf
/// record -a`), ten times the layout floor's system time, while the floor
/// links on one thread and 2 threads (2 cores) measured 0.83 x its time.
const LINK_THREADS: usize = 2;

/// Runs `work` on every item on at most `threads` threads of the rayon pool
/// (each takes the next item as it finishes one) and returns the error of
/// the first item (in the order of `items`) that failed, as a loop would.
fn each_on_few_threads<T: Sync, E: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let outcomes: Vec<Mutex<Option<Result<(), E>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    let take_next = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        let outcome = work(item);
        *outcomes[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
    };
    rayon::scope(|scope| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            scope.spawn(|_| take_next());
        }
    });
    outcomes
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// One link job of [`Run::place_blobs`]: a blob with the paths it backs
/// (and whether each is in place), and how it was fetched.
type LinkJob<'a> = (
    &'a (kernels_types::BlobId, Vec<(String, bool)>),
    &'a Fetched,
);

/// The link jobs of [`Run::place_blobs`] grouped by the directory of the
/// first path each blob still has to be linked at, in their order. One
/// thread links one directory's files and the directories go in parallel:
/// a directory takes one new entry at a time (its inode lock), so threads
/// creating entries in the same directory queue on that lock, spinning in
/// the kernel, while other directories wait.
fn by_directory<'a>(jobs: &'a [LinkJob<'a>]) -> Vec<Vec<&'a LinkJob<'a>>> {
    let mut groups: Vec<Vec<&LinkJob>> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for job in jobs {
        let paths = &job.0.1;
        let first = paths.iter().find(|(_, ok)| !ok).or(paths.first());
        let dir = first.map_or("", |(path, _)| path.rsplit_once('/').map_or("", |(d, _)| d));
        let slot = *index.entry(dir).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[slot].push(job);
    }
    groups
}

/// Runs `check` on every item on the rayon pool and returns the error of the
/// first item (in the order of `items`) that failed, as a loop over them would;
/// the items after it are checked too.
fn each_in_parallel<T: Sync, E: Send>(
    items: &[T],
    check: impl Fn(&T) -> Result<(), E> + Sync + Send,
) -> Result<(), E> {
    let outcomes: Vec<Result<(), E>> = items.par_iter().map(check).collect();
    outcomes.into_iter().collect()
}

/// Links (or copies) one fetched blob into every path it backs that is not
/// in place; without symlinks a new blob is moved into the last path that
/// needs it, `fresh` counting as new (fetched by this run's fit check). A
/// blob that a concurrent download moved away in copy mode is taken from the
/// snapshot file it moved it to ([`kernels_cache::RepoCache::place_from_snapshot`]).
fn link_blob(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    blob: &kernels_types::BlobId,
    paths: &[(String, bool)],
    fetched: &Fetched,
    fresh: bool,
) -> Result<(), DownloadError> {
    let todo: Vec<&str> = paths
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(p, _)| p.as_str())
        .collect();
    let new_blob = matches!(fetched, Fetched::Downloaded { .. });
    let commit = kernel.commit.as_str();
    for (i, path) in todo.iter().enumerate() {
        let last = i + 1 == todo.len();
        let Err(err) = repo.place(commit, path, &blob.etag(), (new_blob || fresh) && last) else {
            continue;
        };
        // Without symlinks another download into this cache may have moved
        // the blob into its own copy of this commit meanwhile.
        if !(repo.copy_mode() && repo.place_from_snapshot(commit, path, blob)?) {
            return Err(err.into());
        }
    }
    Ok(())
}

/// Takes out of the snapshot what this run placed for `kernel` (the paths
/// of `blobs` that were not in place before), after the variant hash of the
/// links refused it: a refused variant is never left linked. A copy that
/// holds the only content of its blob (copy mode moves a new blob into its
/// last path) goes back to `blobs/`. Best effort: what cannot be removed is
/// logged.
fn unplace(
    repo: &kernels_cache::RepoCache,
    kernel: &LockedKernel,
    blobs: &[(kernels_types::BlobId, Vec<(String, bool)>)],
) {
    let commit = kernel.commit.as_str();
    for (blob, paths) in blobs {
        for (path, _) in paths.iter().filter(|(_, ok)| !ok) {
            let Ok(placed) = repo.snapshot_path(commit, path) else {
                continue;
            };
            let Ok(meta) = fs_err::symlink_metadata(&placed) else {
                continue;
            };
            let blob_path = repo.blob_path(&blob.etag());
            let taken = if meta.is_file() && !blob_path.exists() {
                fs_err::rename(&placed, &blob_path)
            } else {
                fs_err::remove_file(&placed)
            };
            if let Err(err) = taken {
                tracing::warn!("cannot take refused `{path}` out of the snapshot: {err}");
            }
        }
    }
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
/// [`verify_kernels_fit`]; a kernel with any problem fails with
/// [`DownloadError::NotCached`] listing them all.
async fn verify_offline(
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
) -> DownloadSummary {
    let (cache_owned, kernels_owned, repo_type, selection, policy) = (
        cache.clone(),
        kernels.to_vec(),
        options.repo_type,
        options.selection.clone(),
        options.fit.clone(),
    );
    let trust = options.trust.clone();
    let checks = tokio::task::spawn_blocking(move || {
        let mut checks = verify_kernels_fit(
            &cache_owned,
            repo_type,
            &kernels_owned,
            &selection,
            Some(&policy),
        );
        if let Some(trust) = trust {
            super::vouch::check(
                &cache_owned,
                repo_type,
                &kernels_owned,
                &mut checks,
                &trust.pins,
            );
        }
        checks
    })
    .await;
    let mut summary = DownloadSummary::default();
    let checks = match checks {
        Ok(checks) => checks,
        Err(err) => {
            summary.failed = kernels
                .iter()
                .map(|kernel| {
                    let error = DownloadError::Internal(format!("verification task failed: {err}"));
                    KernelFailure::new(kernel, error)
                })
                .collect();
            return summary;
        }
    };
    for warning in checks.iter().flat_map(|check| &check.warnings) {
        progress.warning(warning);
    }
    for check in checks {
        record_offline_check(cache, kernels, options, progress, check, &mut summary);
    }
    progress.finish();
    summary
}

/// One offline check into `summary`: a complete variant whose signature
/// (under `options.trust`) holds is done, with its version label; anything
/// else fails naming why.
fn record_offline_check(
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    progress: &dyn Reporter,
    check: super::verify::KernelVerification,
    summary: &mut DownloadSummary,
) {
    let signed = match (&options.trust, check.is_ok()) {
        (Some(trust), true) => {
            let repo = cache.repo(&check.repo_id, options.repo_type);
            super::check::cached(trust, &repo, &check).map(Some)
        }
        _ => Ok(None),
    };
    if let Err(error) = signed {
        let failure = KernelFailure {
            repo_id: check.repo_id.clone(),
            commit: check.commit.clone(),
            error,
        };
        summary.failed.push(failure);
    } else if check.is_ok() {
        let mut report = KernelReport::from_verification(&check);
        report.signatures = signed.ok().flatten().unwrap_or_default();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::options::KernelRef;
    use kernels_cache::RepoCache;
    use kernels_types::wire::RepoType;
    use kernels_types::{BlobId, DigestKind, Hasher};

    #[test]
    fn links_are_grouped_by_directory_and_the_first_error_in_order_wins() {
        let blob = |n: u8, paths: &[(&str, bool)]| {
            let mut h = Hasher::new(DigestKind::Sha256, 1);
            h.update(&[n]);
            let id = BlobId {
                digest: h.finish(),
                size: 1,
            };
            (
                id,
                paths
                    .iter()
                    .map(|(p, ok)| (p.to_string(), *ok))
                    .collect::<Vec<_>>(),
            )
        };
        let blobs = [
            blob(1, &[("build/a/x.py", false)]),
            blob(2, &[("build/b/y.py", false)]),
            // Placed in `a` already: grouped by the path still to link.
            blob(3, &[("build/a/z.py", true), ("build/b/z.py", false)]),
            blob(4, &[("build/a/w.py", false)]),
        ];
        let fetched = Fetched::Cached;
        let jobs: Vec<LinkJob> = blobs.iter().map(|b| (b, &fetched)).collect();
        let groups = by_directory(&jobs);
        let names: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.iter().map(|j| j.0.1.last().unwrap().0.as_str()).collect())
            .collect();
        assert_eq!(
            names,
            [
                vec!["build/a/x.py", "build/a/w.py"],
                vec!["build/b/y.py", "build/b/z.py"]
            ]
        );

        let items: Vec<u32> = (0..50).collect();
        let seen = std::sync::Mutex::new(Vec::new());
        let outcome = each_on_few_threads(&items, LINK_THREADS, |i| {
            seen.lock().unwrap().push(*i);
            if *i % 7 == 3 { Err(*i) } else { Ok(()) }
        });
        assert_eq!(outcome, Err(3), "the first failing item in order");
        assert_eq!(
            seen.into_inner().unwrap().len(),
            items.len(),
            "every item is worked on"
        );
        assert_eq!(each_on_few_threads(&[] as &[u32], 2, |_| Err(())), Ok(()));
    }

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn kernel(variants: Option<(&str, String)>) -> LockedKernel {
        LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: COMMIT.parse().unwrap(),
            variants: variants.map(|(v, h)| [(v.to_owned(), h)].into_iter().collect()),
        }
    }

    fn options(refs: Vec<KernelRef>) -> DownloadOptions {
        DownloadOptions {
            repo_type: RepoType::Kernel,
            selection: VariantSelection::All,
            concurrency: 1,
            refs,
            refresh: false,
            fit: crate::variant::FitPolicy::unchecked(),
            trust: None,
            runtime_receipts: None,
        }
    }

    fn blob_id(content: &[u8]) -> BlobId {
        let mut h = Hasher::new(DigestKind::Sha256, content.len() as u64);
        h.update(content);
        BlobId {
            digest: h.finish(),
            size: content.len() as u64,
        }
    }

    /// Puts `content` in `blobs/` and links `path` of the commit to it.
    fn put(repo: &RepoCache, path: &str, content: &[u8]) -> PlannedFile {
        let digest = blob_id(content);
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        fs_err::write(repo.blob_path(&digest.etag()), content).unwrap();
        repo.link(COMMIT, path, &digest.etag()).unwrap();
        PlannedFile {
            path: path.to_owned(),
            digest,
        }
    }

    #[test]
    fn the_variant_hash_is_recomputed_from_the_links() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo = cache.repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        let files = vec![put(&repo, "build/torch-cpu/relu/__init__.py", b"x = 1\n")];
        let locked = plan::variant_hash("torch-cpu", &files);
        let kernel = kernel(Some(("torch-cpu", locked.clone())));
        verify_variant(&repo, &kernel, "torch-cpu", &files, &locked).unwrap();
        let err = verify_variant(&repo, &kernel, "torch-cpu", &files, "sha256-0").unwrap_err();
        assert!(
            matches!(&err, DownloadError::VariantMismatch { actual, .. } if *actual == locked),
            "{err}"
        );
        // A planned file without a link (and no blob to link) is named.
        let absent = PlannedFile {
            path: "build/torch-cpu/relu/_ops.py".into(),
            digest: blob_id(b"missing"),
        };
        let err = verify_variant(&repo, &kernel, "torch-cpu", &[absent], &locked).unwrap_err();
        assert!(err.to_string().contains("is not linked to a blob"), "{err}");
    }

    #[test]
    fn partial_downloads_count_against_the_bytes_to_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo = cache.repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        let placed = put(&repo, "build/torch-cpu/a.py", b"placed");
        let missing = blob_id(b"0123456789");
        let partial = blob_id(b"abcdefghij");
        fs_err::write(repo.incomplete_path(&partial.etag()), b"abcd").unwrap();
        let prepared = Prepared {
            plan: KernelPlan {
                variants: Default::default(),
            },
            version: None,
            blobs: vec![
                (placed.digest, vec![(placed.path.clone(), true)]),
                (missing, vec![("build/torch-cpu/b.py".into(), false)]),
                (partial, vec![("build/torch-cpu/c.py".into(), false)]),
            ],
            fit: Default::default(),
            fit_tally: Tally::default(),
            listed: Default::default(),
        };
        assert_eq!(bytes_to_fetch(&repo, &prepared), 10 + 6);
        let paths: Vec<&str> = prepared.missing_paths().collect();
        assert_eq!(paths, ["build/torch-cpu/b.py", "build/torch-cpu/c.py"]);
    }

    #[test]
    fn finished_kernels_record_their_refs_and_version() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let kernel = kernel(None);
        let locked = KernelRef {
            repo_id: kernel.repo_id.clone(),
            commit: COMMIT.parse().unwrap(),
            name: "v1".into(),
        };
        let report = KernelReport {
            repo_id: kernel.repo_id.clone(),
            commit: COMMIT.parse().unwrap(),
            variants: Vec::new(),
            files: 0,
            bytes: 0,
            fetched_bytes: 0,
            fetched_blobs: 0,
            version: Some("v1.2.0".into()),
            fit: Default::default(),
            signatures: Default::default(),
            file_hashes: Default::default(),
        };
        record_refs(&cache, &options(vec![locked]), &report);
        let repo = cache.repo(&kernel.repo_id, RepoType::Kernel);
        assert_eq!(repo.read_ref("v1").unwrap().as_str(), COMMIT);
        assert_eq!(repo.read_ref("v1.2.0").unwrap().as_str(), COMMIT);
    }
}
