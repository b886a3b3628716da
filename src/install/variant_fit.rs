//! The fit of each build variant of one locked kernel for a [`FitPolicy`]
//! (the load-time rules of [`kernels_types::fit::check`]), from each
//! variant's `metadata.json`: what `kernels download --explain` and `kernels
//! env` show per kernel next to the variant choice.
//!
//! The metadata comes from the cache (no request beyond the listing: `kernels
//! env`, offline runs; [`crate::lock::metadata::cached_blob`],
//! [`crate::lock::metadata::cached_variant`]) or from the cache or the Hub
//! ([`crate::lock::project::variant_metadata`]: the online `--explain`, which
//! stores what it fetches in the cache).

use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::fit::{Fit, Refusal, check};
use kernels_types::metadata::Metadata;
use kernels_types::wire::{RepoType, TreeEntry};
use serde::Serialize;

use crate::abi::ImageTarget;
use crate::install::check::abi::{Findings, check_cached_variant};
use crate::lock::fit::target_id;
use crate::lock::format::LockedKernel;
use crate::lock::metadata::{CachedMetadata, cached_blob, cached_variant};
use crate::lock::project::{LockError, MetadataCache, variant_metadata};
use crate::variant::FitPolicy;

/// Whether a variant's `metadata.json` was read, as JSON names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetadataState {
    /// Read and parsed.
    Read,
    /// Not in the cache (and not fetched: `kernels env`, offline).
    NotInCache,
    /// The variant has no `metadata.json`: nothing to check.
    None,
    /// It could not be fetched or parsed (`error` says why, naming the file
    /// and the field).
    Invalid,
}

/// One target of a [`VariantFit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetFit {
    /// `cuda:9.0`, `rocm:gfx942`.
    pub target: String,
    /// `CUDA capability 9.0`, for text.
    #[serde(skip)]
    pub name: String,
    /// Whether the arch rule lets the variant run there.
    pub fits: bool,
}

/// One refusal of a [`VariantFit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusalDoc {
    /// `archs`, `kernels-minver` or `python-depends`.
    pub rule: &'static str,
    /// The target it is about (the arch rule), `cuda:10.0`.
    pub target: Option<String>,
    /// What the runtime would say.
    pub message: String,
}

/// The fit of one variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantFit {
    /// The variant directory.
    pub variant: String,
    /// Whether the selection chose it.
    pub chosen: bool,
    /// Whether its metadata was read.
    pub metadata: MetadataState,
    /// Why it was not read, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether no rule refuses it (`None`: metadata not read).
    pub fits: Option<bool>,
    /// Per target of the policy, whether the arch rule lets it run there
    /// (empty when the metadata was not read or no target is known).
    pub targets: Vec<TargetFit>,
    /// Why the runtime would refuse it.
    pub refusals: Vec<RefusalDoc>,
    /// What the runtime would warn about (dirty provenance).
    pub warnings: Vec<String>,
    /// The ABI check of its compiled files for the declared images
    /// ([`crate::install::check::abi`]), from the cache; absent when no
    /// image is declared. A refused file is one of `refusals` (rule `abi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abi: Option<AbiFit>,
}

/// Whether a variant's compiled files were checked for the declared images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbiFit {
    /// `manylinux_2_28`, … (the images checked against).
    pub images: Vec<String>,
    /// False when its files are not in the cache (nothing is fetched to
    /// answer): "not checked".
    pub checked: bool,
    /// Claimed ABIs (abi3, torch stable) its files do not keep to.
    pub warnings: Vec<String>,
}

impl VariantFit {
    /// The verdict of `policy` on a variant whose metadata is `metadata`.
    pub fn of(variant: &str, chosen: bool, metadata: &Metadata, policy: &FitPolicy) -> Self {
        let Fit { refusals, warnings } = check(metadata, &policy.context());
        let arch_refused = |target| {
            refusals
                .iter()
                .any(|r| matches!(r, Refusal::Arch { target: t, .. } if t == target))
        };
        VariantFit {
            variant: variant.to_owned(),
            chosen,
            metadata: MetadataState::Read,
            error: None,
            fits: Some(refusals.is_empty()),
            targets: policy
                .targets
                .list
                .iter()
                .map(|target| TargetFit {
                    target: target_id(target),
                    name: target.to_string(),
                    fits: !arch_refused(target),
                })
                .collect(),
            refusals: refusals
                .iter()
                .map(|r| RefusalDoc {
                    rule: r.rule(),
                    target: match r {
                        Refusal::Arch { target, .. } => Some(target_id(target)),
                        _ => None,
                    },
                    message: r.to_string(),
                })
                .collect(),
            warnings: warnings.iter().map(ToString::to_string).collect(),
            abi: None,
        }
    }

    /// A variant whose metadata was not read.
    pub fn unread(
        variant: &str,
        chosen: bool,
        state: MetadataState,
        error: Option<String>,
    ) -> Self {
        VariantFit {
            variant: variant.to_owned(),
            chosen,
            metadata: state,
            error,
            fits: None,
            targets: Vec::new(),
            refusals: Vec::new(),
            warnings: Vec::new(),
            abi: None,
        }
    }

    /// Adds the ABI verdict of `findings` (`None`: its files are not in
    /// the cache) for `images`: each refused file becomes a refusal (rule
    /// `abi`) and the variant does not fit.
    pub fn with_abi(&mut self, images: &[ImageTarget], findings: Option<Findings>) {
        let checked = findings.is_some();
        let found = findings.unwrap_or_default();
        for refusal in found.refused.into_values().flatten() {
            self.refusals.push(RefusalDoc {
                rule: refusal.rule(),
                target: None,
                message: refusal.to_string(),
            });
            self.fits = Some(false);
        }
        self.abi = Some(AbiFit {
            images: images.iter().map(ToString::to_string).collect(),
            checked,
            warnings: found.warnings.iter().map(ToString::to_string).collect(),
        });
    }
}

/// Where [`kernel_fits`] reads the metadata.
#[derive(Clone, Copy)]
pub struct FitSource<'a> {
    /// The Hub client (not asked when `listing` is `None` or it is offline).
    pub client: &'a HubClient,
    /// The cache.
    pub cache: &'a HubCache,
    /// `kernel` or `model`.
    pub repo_type: RepoType,
    /// Fetch what the cache lacks (and store it there).
    pub fetch: bool,
    /// The commit's recursive listing, when there is one: without `fetch`,
    /// the blobs it names are looked up in the cache.
    pub cache_listing: Option<&'a [TreeEntry]>,
}

/// The fit of each of `variants` (name, chosen) of `kernel`, in the order
/// given: with `source.fetch` (and online) from the cache or the Hub
/// ([`variant_metadata`]: one listing of `build/`, then the blobs the cache
/// lacks), else from the cache alone (by the blob ids of
/// `source.cache_listing`, else from the snapshot).
/// With images declared (`policy.images`), each variant's compiled files
/// are checked from the cached snapshot alone ([`VariantFit::with_abi`]).
pub async fn kernel_fits(
    source: &FitSource<'_>,
    kernel: &LockedKernel,
    variants: &[(String, bool)],
    policy: &FitPolicy,
) -> Vec<VariantFit> {
    let mut fits = metadata_fits(source, kernel, variants, policy).await;
    if !policy.images.is_empty() {
        let repo = source.cache.repo(&kernel.repo_id, source.repo_type);
        for fit in &mut fits {
            let (repo_id, commit) = (&kernel.repo_id, &kernel.commit);
            let found = check_cached_variant(&repo, repo_id, commit, &fit.variant, &policy.images);
            fit.with_abi(&policy.images, found);
        }
    }
    fits
}

/// The fit by each variant's metadata.json alone; see [`kernel_fits`].
async fn metadata_fits(
    source: &FitSource<'_>,
    kernel: &LockedKernel,
    variants: &[(String, bool)],
    policy: &FitPolicy,
) -> Vec<VariantFit> {
    if source.fetch && !source.client.is_offline() {
        let store = MetadataCache::new(source.cache.clone());
        let read = variant_metadata(
            source.client,
            Some(&store),
            source.repo_type,
            &kernel.repo_id,
            &kernel.commit,
            policy.runtime,
        )
        .await;
        store.flush().await;
        let found = match read {
            Ok(found) => found.map(|f| f.variants).unwrap_or_default(),
            Err(err) => {
                let why = err.to_string();
                return variants
                    .iter()
                    .map(|(name, chosen)| {
                        VariantFit::unread(name, *chosen, MetadataState::Invalid, Some(why.clone()))
                    })
                    .collect();
            }
        };
        return variants
            .iter()
            .map(
                |(name, chosen)| match found.iter().find(|(n, _)| n == name) {
                    Some((_, Ok(m))) => VariantFit::of(name, *chosen, m, policy),
                    Some((_, Err(LockError::MissingMetadata { .. }))) | None => {
                        VariantFit::unread(name, *chosen, MetadataState::None, None)
                    }
                    Some((_, Err(err))) => VariantFit::unread(
                        name,
                        *chosen,
                        MetadataState::Invalid,
                        Some(err.to_string()),
                    ),
                },
            )
            .collect();
    }
    let repo = source.cache.repo(&kernel.repo_id, source.repo_type);
    let cached = |name: &str| match source.cache_listing {
        Some(entries) => cached_blob(&repo, &kernel.commit, entries, name, policy.runtime),
        None => cached_variant(&repo, &kernel.commit, name, policy.runtime),
    };
    variants
        .iter()
        .map(|(name, chosen)| match cached(name) {
            CachedMetadata::Read(m) => VariantFit::of(name, *chosen, &m, policy),
            CachedMetadata::NotInCache => {
                VariantFit::unread(name, *chosen, MetadataState::NotInCache, None)
            }
            CachedMetadata::Invalid(why) => {
                VariantFit::unread(name, *chosen, MetadataState::Invalid, Some(why))
            }
        })
        .collect()
}
