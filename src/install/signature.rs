//! The Sigstore signature of each variant `download` places, checked before
//! anything of the variant is linked into the snapshot.
//!
//! A variant's `build/<v>/metadata.json.sigstore` signs the raw bytes of its
//! `metadata.json` ([`kernels_trust::verify_bundle`]); the metadata's
//! `digest` then covers every other file, which [`super::digest`] checks. So
//! online the bundle and metadata are verified from their blobs before the
//! other files are fetched; for a variant already in the cache (the warm
//! path, `--offline`) the whole directory is verified with
//! [`kernels_trust::verify_variant`]. The outcome names are the reference's
//! (0.17.2 `VerificationResult`): `Success`, `SignatureBundleMissing` (an
//! unsigned variant, accepted unless signatures are required) and the others,
//! which always refuse the variant.

use std::collections::BTreeMap;
use std::path::Path;

use kernels_trust::{Outcome, SignerIdentity, SignerPolicy, TrustRoot};

use crate::lock::trust_settings::TrustSettings;
use kernels_types::repo_id::RepoId;
use kernels_types::{CommitId, Digest};

use super::error::DownloadError;

/// What signatures are checked against: the project's trust settings
/// ([`TrustSettings`]: signer policy per repository, `require-signed`), the
/// trust root they name, and the files hashes of `kernels.lock.provenance`.
#[derive(Debug, Clone)]
pub struct Trust {
    /// The Sigstore root certificates chain to.
    pub root: TrustRoot,
    /// The accepted signers and whether unsigned variants are refused.
    pub settings: TrustSettings,
    /// The files hashes of `kernels.lock.provenance`, which vouch for the
    /// variants of a lock without hashes offline ([`super::vouch`]).
    pub pins: super::vouch::FilePins,
    /// The signers and files `kernels.lock.provenance` recorded, checked
    /// before a variant is linked ([`super::check::provenance`]); `None`
    /// checks nothing (no project, or a side file that cannot be read,
    /// which the command reports itself).
    pub recorded: Option<super::check::provenance::Recorded>,
}

impl Trust {
    /// The accepted signers of `repo_id`.
    pub fn policy_for(&self, repo_id: &RepoId) -> SignerPolicy {
        self.settings.policy_for(repo_id)
    }
}

/// A variant's signature as `download` accepted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// Signed by an accepted signer (`Success`).
    Signed(SignerIdentity),
    /// No `metadata.json.sigstore` (`SignatureBundleMissing`), accepted.
    Unsigned,
}

impl Signature {
    /// The reference's outcome name.
    pub fn outcome(&self) -> &'static str {
        match self {
            Signature::Signed(_) => "Success",
            Signature::Unsigned => "SignatureBundleMissing",
        }
    }

    /// The signer, when signed.
    pub fn signer(&self) -> Option<&SignerIdentity> {
        match self {
            Signature::Signed(identity) => Some(identity),
            Signature::Unsigned => None,
        }
    }
}

/// One kernel's variant, for the errors below.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Kernel repo.
    pub repo_id: &'a RepoId,
    /// Locked commit.
    pub commit: &'a CommitId,
    /// The variant.
    pub variant: &'a str,
}

impl Subject<'_> {
    /// The [`DownloadError::Signature`] of this variant.
    pub fn refused(&self, outcome: &'static str, reason: String) -> DownloadError {
        DownloadError::Signature {
            repo_id: self.repo_id.clone(),
            commit: self.commit.clone(),
            variant: self.variant.to_owned(),
            outcome,
            reason,
        }
    }
}

/// Online: the bundle (`None` when the listing has none) over the raw
/// `metadata` bytes (`None` when the variant has no metadata.json). The
/// digest part of `Success` is checked by [`super::digest`] as the files
/// are placed. Errors: [`DownloadError::Signature`] with the outcome.
pub fn check_bytes(
    trust: &Trust,
    subject: Subject<'_>,
    metadata: Option<&[u8]>,
    bundle: Option<&[u8]>,
) -> Result<Signature, DownloadError> {
    let Some(bundle) = bundle else {
        return unsigned(trust, subject);
    };
    let Some(metadata) = metadata else {
        let reason = "the variant has a signature bundle but no metadata.json".to_owned();
        return Err(subject.refused("MetadataMissing", reason));
    };
    let policy = trust.policy_for(subject.repo_id);
    match kernels_trust::verify_bundle(metadata, bundle, &trust.root, &policy) {
        Ok(identity) => Ok(Signature::Signed(identity)),
        Err(kernels_trust::SignatureFailure::BundleInvalid(reason)) => {
            Err(subject.refused("SignatureBundleInvalid", reason))
        }
        Err(kernels_trust::SignatureFailure::VerificationFailure(reason)) => {
            Err(subject.refused("SignatureVerificationFailure", reason))
        }
    }
}

/// A variant directory in the cache (the warm path, `--offline`), verified
/// whole ([`kernels_trust::verify_variant`]; links are followed).
pub fn check_dir(
    trust: &Trust,
    subject: Subject<'_>,
    dir: &Path,
) -> Result<Signature, DownloadError> {
    let policy = trust.policy_for(subject.repo_id);
    let outcome = kernels_trust::verify_variant(dir, &trust.root, &policy);
    let reason = match &outcome {
        Outcome::Success(identity) => return Ok(Signature::Signed(identity.clone())),
        Outcome::SignatureBundleMissing => return unsigned(trust, subject),
        Outcome::MetadataMissing => "the variant has no metadata.json".to_owned(),
        Outcome::DigestMissing => "the signed metadata.json has no digest".to_owned(),
        Outcome::SignatureBundleInvalid(reason)
        | Outcome::MetadataInvalid(reason)
        | Outcome::SignatureVerificationFailure(reason) => reason.clone(),
        Outcome::DigestVerificationFailure(problems) => super::digest::describe(problems),
    };
    Err(subject.refused(outcome.name(), reason))
}

fn unsigned(trust: &Trust, subject: Subject<'_>) -> Result<Signature, DownloadError> {
    if trust.settings.require_signed {
        let reason = "the variant has no metadata.json.sigstore, and signatures are required (`--require-signed` or `require-signed = true`)".to_owned();
        return Err(subject.refused("SignatureBundleMissing", reason));
    }
    Ok(Signature::Unsigned)
}

/// The signatures of the variants of a kernel that
/// [`super::verify::verify_kernels`] found complete in `repo` (the warm
/// path, `--offline`), by variant; the first variant refused is the error.
pub fn check_cached(
    trust: &Trust,
    repo: &kernels_cache::RepoCache,
    check: &super::verify::KernelVerification,
) -> Result<BTreeMap<String, Signature>, DownloadError> {
    let mut out = BTreeMap::new();
    for variant in check.variants.keys() {
        let dir = repo.snapshot_path(check.commit.as_str(), &format!("build/{variant}"))?;
        let subject = Subject {
            repo_id: &check.repo_id,
            commit: &check.commit,
            variant,
        };
        out.insert(variant.clone(), check_dir(trust, subject, &dir)?);
    }
    Ok(out)
}

/// The hash that pins a variant's files where the lock pins none (a
/// `KernelLocks` lock) and that `kernels.lock.provenance` records: the
/// `git_lfs_concat` variant hash
/// ([`kernels_types::file_set::variant_hash`]) of every `(repo path,
/// digest)` of the variant but bytecode (`__pycache__/`, `*.pyc`, which the
/// runtime may write next to the files) and its signature bundle
/// (`build/<variant>/metadata.json.sigstore`: a re-signed build keeps the
/// hash of its files).
pub fn files_hash<'a>(variant: &str, files: impl IntoIterator<Item = (&'a str, Digest)>) -> String {
    files_hashes(variant, files).files
}

/// A variant's files hash as recorded now ([`files_hash`]) and as version 1
/// of `kernels.lock.provenance` recorded it (the bundle included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesHash {
    /// Without the bundle: [`files_hash`].
    pub files: String,
    /// With the bundle (equal to `files` for a variant without one).
    pub with_bundle: String,
}

/// Both hashes of [`FilesHash`] of the variant's `(repo path, digest)`s.
pub fn files_hashes<'a>(
    variant: &str,
    files: impl IntoIterator<Item = (&'a str, Digest)>,
) -> FilesHash {
    let bundle = format!("build/{variant}/{}", kernels_trust::BUNDLE_FILE);
    let kept: Vec<(&str, Digest)> = files
        .into_iter()
        .filter(|(path, _)| !is_bytecode(path))
        .collect();
    let without = kept.iter().copied().filter(|(path, _)| *path != bundle);
    FilesHash {
        files: kernels_types::file_set::variant_hash(variant, without),
        with_bundle: kernels_types::file_set::variant_hash(variant, kept.iter().copied()),
    }
}

/// Whether `path` is Python bytecode (`__pycache__/…`, `*.pyc`).
pub fn is_bytecode(path: &str) -> bool {
    path.ends_with(".pyc") || path.split('/').any(|part| part == "__pycache__")
}
