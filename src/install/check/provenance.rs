//! [`super::Check::Provenance`]: a variant's signer and files against what
//! `kernels.lock.provenance` recorded for its locked commit
//! ([`crate::lock::provenance`]), before the variant is linked online and
//! before a cached one is accepted (warm, offline); and, once a run is done,
//! what it placed recorded in the side file ([`remember`]) and the recorded
//! files hashes that vouch for variants offline ([`file_pins`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use crate::install::error::DownloadError;
use crate::install::report::KernelReport;
use crate::install::signature::{Signature, Trust};
use crate::install::vouch::FilePins;
use crate::lock::format::LockedKernel;
use crate::lock::provenance::{Provenance, ProvenanceError, Signer, VariantProvenance};

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

/// Compares what a download run placed (`done`, for `kernels` of the lock)
/// with the side file of `project_dir` and, with `write`, records what is
/// new (an online run; `--offline` only checks). Records a signed variant,
/// and every variant of a kernel the lock pins no hash for. Errors: the
/// first [`ProvenanceError`].
pub fn remember(
    project_dir: &Path,
    kernels: &[LockedKernel],
    done: &[KernelReport],
    write: bool,
) -> Result<(), ProvenanceError> {
    let mut provenance = Provenance::read(project_dir)?;
    let path = Provenance::path(project_dir);
    for report in done {
        let pinned_by_lock = kernels.iter().any(|k| {
            k.repo_id == report.repo_id
                && k.commit == report.commit
                && k.variants.as_ref().is_some_and(|h| !h.is_empty())
        });
        for (variant, files) in &report.file_hashes {
            let signer = report
                .signatures
                .get(variant)
                .and_then(|s| s.signer())
                .map(Signer::from);
            let known = provenance
                .get(report.repo_id.as_str(), report.commit.as_str(), variant)
                .is_some();
            if signer.is_none() && pinned_by_lock && !known {
                continue;
            }
            let key = (
                report.repo_id.as_str(),
                report.commit.as_str(),
                variant.as_str(),
            );
            let found = VariantProvenance {
                files: files.clone(),
                signer,
            };
            provenance.record(&path, key, found)?;
        }
    }
    if write {
        provenance.write(project_dir)?;
    }
    Ok(())
}

/// The files hashes `download` recorded, for [`crate::install::vouch`]; an
/// unreadable side file pins nothing (the commands that read it for
/// provenance report it).
pub fn file_pins(project_dir: &Path) -> FilePins {
    let Ok(provenance) = Provenance::read(project_dir) else {
        return Default::default();
    };
    let mut pins = FilePins::new();
    for (repo, commits) in &provenance.kernels {
        let Ok(repo_id) = repo.parse::<kernels_types::repo_id::RepoId>() else {
            continue;
        };
        for (commit, variants) in commits {
            let Ok(commit) = commit.parse() else { continue };
            let files = variants
                .iter()
                .map(|(v, e)| (v.clone(), e.files.clone()))
                .collect();
            pins.insert((repo_id.clone(), commit), files);
        }
    }
    pins
}
