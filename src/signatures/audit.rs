//! `kernels audit`, offline from the cache (as `npm audit signatures`, but
//! without a registry): per locked kernel, where the cache holds it (a
//! `kernels--` folder, or a `models--` one: a model-type repository, the
//! layout before reference 0.14), whether its publisher is known to be
//! trusted, and per cached variant its signature verdict with the signer,
//! whether `metadata.json` has a digest, and whether its provenance says the
//! build was dirty.
//!
//! Publisher trust (`trustedKernelPublisher` of the Hub's organization
//! overview) is a Hub answer the cache does not keep: offline it is
//! [`Publisher::AllowListed`] for repositories on the `[tool.kernels] trust`
//! list, else [`Publisher::Unknown`].

use kernels_cache::HubCache;
use kernels_trust::TrustRoot;
use kernels_trust::outcome::MAX_METADATA_BYTES;
use kernels_types::CommitId;
use kernels_types::metadata::Metadata;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use super::Verdict;
use super::cached::{VariantCheck, cached_variants, check_variants};
use crate::lock::format::LockedKernel;
use crate::lock::trust_settings::TrustSettings;

/// What is known offline of a kernel's publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// On the project's `[tool.kernels] trust` list.
    AllowListed,
    /// Not on the list; whether the Hub calls the organization a trusted
    /// kernel publisher is not in the cache.
    Unknown,
}

impl Publisher {
    /// `allow-listed` or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Publisher::AllowListed => "allow-listed",
            Publisher::Unknown => "unknown",
        }
    }
}

/// One cached variant of an audited kernel.
#[derive(Debug, Clone)]
pub struct VariantAudit {
    /// Its signature check.
    pub check: VariantCheck,
    /// Whether `metadata.json` parses and has a `digest`.
    pub digest: bool,
    /// `metadata.json`'s provenance: whether the builder or the kernel source
    /// tree had uncommitted changes; `None` without provenance.
    pub dirty: Option<bool>,
}

/// One locked kernel.
#[derive(Debug, Clone)]
pub struct KernelAudit {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// The cache folder type holding the commit's variants; `None` when the
    /// cache holds none.
    pub repo_type: Option<RepoType>,
    /// What is known of the publisher.
    pub publisher: Publisher,
    /// The cached variants, sorted by name.
    pub variants: Vec<VariantAudit>,
}

impl KernelAudit {
    /// Whether any variant is refused by the trust settings.
    pub fn is_refused(&self) -> bool {
        self.variants
            .iter()
            .any(|v| v.check.verdict == Verdict::Refused)
    }
}

/// Audits every kernel of `kernels` in `cache` with `settings` and `root`;
/// `trust` is the `[tool.kernels] trust` list.
pub fn audit(
    cache: &HubCache,
    kernels: &[LockedKernel],
    trust: &[RepoId],
    settings: &TrustSettings,
    root: &TrustRoot,
) -> Vec<KernelAudit> {
    kernels
        .iter()
        .map(|kernel| {
            let found = [RepoType::Kernel, RepoType::Model]
                .into_iter()
                .find_map(|t| {
                    let repo = cache.repo(&kernel.repo_id, t);
                    let variants = cached_variants(&repo, &kernel.commit);
                    (!variants.is_empty()).then_some((t, repo, variants))
                });
            let variants = found.as_ref().map_or_else(Vec::new, |(_, repo, names)| {
                let names: Vec<String> = names.iter().cloned().collect();
                check_variants(
                    repo,
                    &kernel.repo_id,
                    &kernel.commit,
                    &names,
                    settings,
                    root,
                )
                .into_iter()
                .map(audit_variant)
                .collect()
            });
            let allow_listed = trust
                .iter()
                .any(|r| r.as_str().eq_ignore_ascii_case(kernel.repo_id.as_str()));
            KernelAudit {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                repo_type: found.map(|(t, _, _)| t),
                publisher: if allow_listed {
                    Publisher::AllowListed
                } else {
                    Publisher::Unknown
                },
                variants,
            }
        })
        .collect()
}

/// The digest and provenance of a checked variant's `metadata.json`.
fn audit_variant(check: VariantCheck) -> VariantAudit {
    let path = check.dir.join(kernels_trust::METADATA_FILE);
    let metadata = fs_err::metadata(&path)
        .ok()
        .filter(|m| m.len() <= MAX_METADATA_BYTES)
        .and_then(|_| fs_err::read(&path).ok())
        .and_then(|bytes| Metadata::from_slice(&bytes).ok());
    VariantAudit {
        digest: metadata.as_ref().is_some_and(|m| m.digest.is_some()),
        dirty: metadata
            .as_ref()
            .and_then(|m| m.provenance.as_ref())
            .map(|p| p.is_dirty()),
        check,
    }
}
