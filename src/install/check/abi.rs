//! [`super::Check::Abi`]: every compiled file (ELF, Mach-O) of each planned
//! variant against the declared images ([`crate::abi`]), read from
//! `blobs/` (or the placed copy) after the digest check and before anything
//! of the kernel is linked. A refusal takes out the blobs this run fetched,
//! so a refused variant leaves nothing in the cache. The warm path checks
//! the cached files of a complete kernel ([`check_cached`]) against this
//! run's images, which may differ from the run that placed them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kernels_cache::RepoCache;
use kernels_types::fit::Refusal;
use kernels_types::repo_id::RepoId;
use kernels_types::{BlobId, CommitId};

use crate::abi::{self, ImageTarget};
use crate::install::error::{DownloadError, RefusedVariant};
use crate::install::fit::{self, Subject};
use crate::lock::format::LockedKernel;
use crate::variant::VariantWarning;

/// What [`check`] found in the files of the variants of one kernel:
/// refusals per variant and the claimed-ABI warnings.
#[derive(Debug, Default)]
pub struct Findings {
    /// Variant → each refused file's rule.
    pub refused: BTreeMap<String, Vec<Refusal>>,
    /// abi3 and torch stable-ABI findings.
    pub warnings: Vec<VariantWarning>,
}

/// Each compiled file among `files` (path in the repository → where its
/// bytes are on disk) with its verdict for `images` (none: only the
/// architecture and the claimed ABIs): `(variant, path inside the variant
/// directory, verdict)`, in the order of `files`. A file outside
/// `build/<variant>/`, or that cannot be read, is skipped (the digest check
/// reports it).
pub fn file_verdicts(
    files: &[(String, PathBuf)],
    images: &[ImageTarget],
) -> Vec<(String, String, abi::FileVerdict)> {
    files
        .iter()
        .filter_map(|(path, on_disk)| {
            let (variant, file) = path.strip_prefix("build/")?.split_once('/')?;
            let bytes = fs_err::read(on_disk).ok()?;
            abi::is_compiled(path, &bytes).then(|| {
                let verdict = abi::check_file(path, &bytes, variant, images);
                (variant.to_owned(), file.to_owned(), verdict)
            })
        })
        .collect()
}

/// Checks the compiled files among `files` ([`file_verdicts`]) of
/// `repo_id` at `commit` against `images`: each refused file as a
/// [`Refusal::Abi`] of its variant, each claimed-ABI finding as a warning.
pub fn check_files(
    repo_id: &RepoId,
    commit: &CommitId,
    files: &[(String, PathBuf)],
    images: &[ImageTarget],
) -> Findings {
    let mut found = Findings::default();
    for (variant, file, verdict) in file_verdicts(files, images) {
        for problem in verdict.problems {
            found
                .refused
                .entry(variant.clone())
                .or_default()
                .push(Refusal::Abi {
                    file: file.clone(),
                    problem: problem.to_string(),
                });
        }
        for warning in verdict.warnings {
            found.warnings.push(VariantWarning::Abi {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
                variant: variant.clone(),
                file: file.clone(),
                warning: warning.to_string(),
            });
        }
    }
    found
}

/// Every file under `build/<variant>` of `snapshot` (a cached snapshot
/// directory), as (repository path, path on disk), links followed, sorted.
pub fn variant_files(snapshot: &std::path::Path, variant: &str) -> Vec<(String, PathBuf)> {
    let dir = snapshot.join("build").join(variant);
    walkdir::WalkDir::new(&dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let relative = e.path().strip_prefix(snapshot).ok()?;
            let path = relative.to_str()?.replace('\\', "/");
            Some((path, e.path().to_owned()))
        })
        .collect()
}

/// The ABI findings on the cached files of `variant` of `repo_id` at
/// `commit` against `images`, read from the snapshot only (nothing is
/// fetched); `None` when the snapshot holds none of the variant's files
/// but its `metadata.json` and signature bundle (`kernels lock` links
/// those alone): its compiled files are not there to check.
pub fn check_cached_variant(
    repo: &RepoCache,
    repo_id: &RepoId,
    commit: &CommitId,
    variant: &str,
    images: &[ImageTarget],
) -> Option<Findings> {
    let files = placed_files(&repo.snapshot_dir(commit.as_str()), variant)?;
    Some(check_files(repo_id, commit, &files, images))
}

/// The files of `variant` under `root` (a cached snapshot, or a local
/// kernel repository holding `build/`) as [`variant_files`] lists them;
/// `None` when there are none but its `metadata.json` and signature bundle
/// (`kernels lock` links those alone): its compiled files are not there.
pub fn placed_files(root: &std::path::Path, variant: &str) -> Option<Vec<(String, PathBuf)>> {
    let files = variant_files(root, variant);
    let metadata_only = [
        format!("build/{variant}/{}", kernels_trust::METADATA_FILE),
        format!("build/{variant}/{}", kernels_trust::BUNDLE_FILE),
    ];
    (!files.iter().all(|(path, _)| metadata_only.contains(path))).then_some(files)
}

/// Before linking: the ABI of every compiled file of `blobs` (each blob
/// with the paths it backs), read from `blobs/` or the placed copy. Errors:
/// [`DownloadError::Unfit`] naming each refused file, after removing the
/// blobs of `fetched` (those this run downloaded).
pub fn check(
    repo: &RepoCache,
    kernel: &LockedKernel,
    blobs: &[(BlobId, Vec<(String, bool)>)],
    fetched: &[&BlobId],
    images: &[ImageTarget],
    named: bool,
) -> Result<Vec<VariantWarning>, DownloadError> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    let commit = kernel.commit.as_str();
    let files: Vec<(String, PathBuf)> = blobs
        .iter()
        .flat_map(|(blob, paths)| {
            paths.iter().filter_map(move |(path, _)| {
                let on_disk = if repo.blob_matches(blob).unwrap_or(false) {
                    repo.blob_path(&blob.etag())
                } else {
                    repo.snapshot_path(commit, path).ok()?
                };
                Some((path.clone(), on_disk))
            })
        })
        .collect();
    let subject = Subject {
        repo_id: &kernel.repo_id,
        commit: &kernel.commit,
        runtime: None,
    };
    judge(subject, &files, images, named, || {
        for blob in fetched {
            let _ = fs_err::remove_file(repo.blob_path(&blob.etag()));
        }
    })
}

/// The warm path: the compiled files of `check` (a kernel complete and
/// verified in `repo`) against `images`, whatever image an earlier run
/// placed them for. Errors: [`DownloadError::Unfit`] naming each refused
/// file; the cached files stay (this run placed none of them).
pub fn check_cached(
    repo: &RepoCache,
    check: &crate::install::verify::KernelVerification,
    images: &[ImageTarget],
    named: bool,
) -> Result<Vec<VariantWarning>, DownloadError> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    let commit = check.commit.as_str();
    let files: Vec<(String, PathBuf)> = check
        .variants
        .values()
        .flatten()
        .filter_map(|f| Some((f.path.clone(), repo.snapshot_path(commit, &f.path).ok()?)))
        .collect();
    let subject = Subject {
        repo_id: &check.repo_id,
        commit: &check.commit,
        runtime: None,
    };
    judge(subject, &files, images, named, || {})
}

/// The verdict of [`check`] and [`check_cached`] on `files` of `subject`:
/// the claimed-ABI warnings when no file is refused, else
/// [`DownloadError::Unfit`] naming each refused file (`named`: the variant
/// was asked for by name), after `before_refusing` (which takes out what
/// this run fetched).
fn judge(
    subject: Subject<'_>,
    files: &[(String, PathBuf)],
    images: &[ImageTarget],
    named: bool,
    before_refusing: impl FnOnce(),
) -> Result<Vec<VariantWarning>, DownloadError> {
    let found = check_files(subject.repo_id, subject.commit, files, images);
    if found.refused.is_empty() {
        return Ok(found.warnings);
    }
    before_refusing();
    let refused = found
        .refused
        .into_iter()
        .map(|(variant, refusals)| RefusedVariant { variant, refusals })
        .collect();
    Err(fit::unfit(subject, refused, named))
}
