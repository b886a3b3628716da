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
use kernels_cache::HubCache;
use kernels_types::wire::RepoType;

use crate::install::signature::{FilesHash, Signature, Trust, files_hashes};
use crate::install::verify::KernelVerification;
use crate::install::vouch::FilePins;
use crate::lock::format::LockedKernel;
use crate::lock::provenance::{Found, Provenance, ProvenanceError, Signer, VariantProvenance};

/// A project's side file as read before the run.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The side file (`<project>/kernels.lock.provenance`), named in errors.
    pub path: PathBuf,
    /// What it records.
    pub provenance: Provenance,
    /// The repositories whose changed provenance this run accepts
    /// (`kernels download --accept-provenance`): not compared, and recorded
    /// as found ([`remember`]).
    pub accepted: Vec<RepoId>,
}

impl Recorded {
    /// The side file of `project_dir`; `None` when it cannot be read (the
    /// command that records the run reports that).
    pub fn read(project_dir: &Path) -> Option<Recorded> {
        let provenance = Provenance::read(project_dir).ok()?;
        Some(Recorded {
            path: Provenance::path(project_dir),
            provenance,
            accepted: Vec::new(),
        })
    }
}

/// What was found for a variant: its files hashes and its signer (none:
/// unsigned).
pub fn found(files: &FilesHash, signature: Option<&Signature>) -> Found {
    Found {
        entry: VariantProvenance::new(
            files.files.clone(),
            signature.and_then(Signature::signer).map(Signer::from),
        ),
        files_with_bundle: files.with_bundle.clone(),
    }
}

/// Checks each variant of `files` (variant → its files hashes,
/// [`crate::install::signature::files_hashes`]) with its signature among
/// `signatures` (none: unsigned) against `trust`'s record; a repository the
/// run accepts is not checked. Errors: [`DownloadError::Provenance`] for the
/// first variant whose recorded signer or files differ.
pub fn check(
    trust: &Trust,
    repo_id: &RepoId,
    commit: &CommitId,
    files: &BTreeMap<String, FilesHash>,
    signatures: &BTreeMap<String, Signature>,
) -> Result<(), DownloadError> {
    let Some(recorded) = &trust.recorded else {
        return Ok(());
    };
    if recorded.accepted.contains(repo_id) {
        return Ok(());
    }
    for (variant, hash) in files {
        let found = found(hash, signatures.get(variant));
        let key = (repo_id.as_str(), commit.as_str(), variant.as_str());
        recorded.provenance.compare(&recorded.path, key, &found)?;
    }
    Ok(())
}

/// Compares what a download run placed (`done`, for `kernels` of the lock)
/// with the side file of `project_dir` and, with `write`, records what is
/// new (an online run; `--offline` only checks). Records a signed variant,
/// and every variant of a kernel the lock pins no hash for; the variants of
/// a repository in `accepted` are recorded as found, whatever the file held.
/// Errors: the first [`ProvenanceError`].
pub fn remember(
    project_dir: &Path,
    kernels: &[LockedKernel],
    done: &[KernelReport],
    write: bool,
    accepted: &[RepoId],
) -> Result<(), ProvenanceError> {
    let mut provenance = Provenance::read(project_dir)?;
    let path = Provenance::path(project_dir);
    for report in done {
        let pinned_by_lock = kernels.iter().any(|k| {
            k.repo_id == report.repo_id
                && k.commit == report.commit
                && k.variants.as_ref().is_some_and(|h| !h.is_empty())
        });
        let accept = accepted.contains(&report.repo_id);
        for (variant, files) in &report.file_hashes {
            let found = found(files, report.signatures.get(variant));
            let key = (
                report.repo_id.as_str(),
                report.commit.as_str(),
                variant.as_str(),
            );
            let known = provenance.get(key.0, key.1, key.2).is_some();
            if found.entry.signer.is_none() && pinned_by_lock && !known {
                continue;
            }
            if accept {
                provenance.accept(key, found);
            } else {
                provenance.record(&path, key, found)?;
            }
        }
    }
    if write {
        provenance.write(project_dir)?;
    }
    Ok(())
}

/// Compares each variant of `checks` (kernels verified in `cache` without
/// problems) with the record of `recorded`: its files hashes and the signer
/// its bundle names. The bundle is read, not verified (`verify
/// --signatures` verifies it): this finds a variant an older version of this
/// tool linked although the record refused it. Errors: the first
/// [`ProvenanceError::Changed`].
pub fn check_cache(
    cache: &HubCache,
    repo_type: RepoType,
    checks: &[KernelVerification],
    recorded: &Recorded,
) -> Result<(), ProvenanceError> {
    for check in checks.iter().filter(|c| c.problems.is_empty()) {
        let build = cache
            .repo(&check.repo_id, repo_type)
            .snapshot_dir(check.commit.as_str())
            .join("build");
        for (variant, files) in &check.variants {
            let hashed = files.iter().map(|f| (f.path.as_str(), f.digest));
            let bundle = build.join(variant).join(kernels_trust::BUNDLE_FILE);
            let signer = fs_err::read(&bundle)
                .ok()
                .and_then(|bytes| kernels_trust::claimed_signer(&bytes));
            let hashes = files_hashes(variant, hashed);
            let found = Found {
                entry: VariantProvenance::new(hashes.files, signer.as_ref().map(Signer::from)),
                files_with_bundle: hashes.with_bundle,
            };
            let key = (
                check.repo_id.as_str(),
                check.commit.as_str(),
                variant.as_str(),
            );
            recorded.provenance.compare(&recorded.path, key, &found)?;
        }
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
