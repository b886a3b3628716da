//! [`super::Check::Provenance`]: a variant's signer and files against what
//! `kernels.lock.provenance` recorded for its locked commit
//! ([`crate::lock::provenance`]), before the variant is linked online and
//! before a cached one is accepted (warm, offline). Recording what is new
//! stays with the command, once the run is done.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use crate::install::error::DownloadError;
use crate::install::signature::{Signature, Trust};
use crate::lock::provenance::{Provenance, Signer, VariantProvenance};

/// A project's side file as read before the run.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The side file (`<project>/kernels.lock.provenance`), named in errors.
    pub path: PathBuf,
    /// What it records.
    pub provenance: Provenance,
}

impl Recorded {
    /// The side file of `project_dir`; `None` when it cannot be read (the
    /// command that records the run reports that).
    pub fn read(project_dir: &Path) -> Option<Recorded> {
        let provenance = Provenance::read(project_dir).ok()?;
        Some(Recorded {
            path: Provenance::path(project_dir),
            provenance,
        })
    }
}

/// Checks each variant of `files` (variant → its files hash,
/// [`crate::install::signature::files_hash`]) with its signature among
/// `signatures` (none: unsigned) against `trust`'s record. Errors:
/// [`DownloadError::Provenance`] for the first variant whose recorded
/// signer or files differ.
pub fn check(
    trust: &Trust,
    repo_id: &RepoId,
    commit: &CommitId,
    files: &BTreeMap<String, String>,
    signatures: &BTreeMap<String, Signature>,
) -> Result<(), DownloadError> {
    let Some(recorded) = &trust.recorded else {
        return Ok(());
    };
    for (variant, hash) in files {
        let found = VariantProvenance {
            files: hash.clone(),
            signer: signatures
                .get(variant)
                .and_then(Signature::signer)
                .map(Signer::from),
        };
        let key = (repo_id.as_str(), commit.as_str(), variant.as_str());
        recorded.provenance.compare(&recorded.path, key, &found)?;
    }
    Ok(())
}
