//! The metadata digest of a variant checked against its files: the one check
//! that `download`, `verify` (and `download --offline`), `mirror`, `to-wheel`
//! and `check` share.
//!
//! Since kernel-builder 0.16 a variant's `build/<v>/metadata.json` records a
//! `digest` of every other file of the variant (rule and wording:
//! [`kernels_trust::digest`]). Every command that uses a variant compares
//! the variant's files with it: a file the digest does not name, a file it
//! names that is not there, or a file whose content hashes to another value
//! is a [`DigestProblem`] naming the file. A variant whose metadata has no
//! `digest` (older builds) is not checked here; the lock's variant hashes,
//! when present, are checked as before.
//!
//! Each command knows its files in its own way (a Hub listing, snapshot links
//! to blobs, a mirror's content store), so [`check`] takes them as
//! [`VariantFile`]s: a path relative to the variant and what is known of the
//! content — an sha256 already verified (an LFS object id or blob name: no
//! read), a file on disk to hash, or nothing yet (the file is not fetched:
//! only its name is compared, see [`Content::Deferred`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rayon::prelude::*;

pub use super::error::describe;
use kernels_trust::DigestProblem;
use kernels_trust::digest::{compare, hash_file, is_excluded};
use kernels_types::metadata::{DigestAlgorithm, VariantDigest};

/// What is known of one file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// The sha256 of the content, already verified (an LFS file's object id,
    /// a blob named by its sha256); with `file`, where to read the content
    /// when the digest uses another algorithm.
    Sha256 {
        /// Raw sha256.
        sha256: [u8; 32],
        /// The content on disk, if there is a copy to read.
        file: Option<PathBuf>,
    },
    /// The content is this file (a blob, a copy in a snapshot); hashed.
    File(PathBuf),
    /// The content is not on disk yet: the file's name is compared, its
    /// content counts as matching (the caller checks it once fetched).
    Deferred,
}

/// One file of a variant, as [`check`] takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantFile {
    /// Path relative to the variant directory, `/`-separated.
    pub relative: String,
    /// What is known of its content.
    pub content: Content,
}

impl VariantFile {
    /// The file at repo path `path` (`build/<variant>/…`), or `None` when
    /// the path is not inside `variant`.
    pub fn at(variant: &str, path: &str, content: Content) -> Option<VariantFile> {
        let relative = relative_path(variant, path)?;
        Some(VariantFile {
            relative: relative.to_owned(),
            content,
        })
    }
}

/// `path` (`build/<variant>/x/y.py`) relative to the variant (`x/y.py`).
pub fn relative_path<'a>(variant: &str, path: &'a str) -> Option<&'a str> {
    path.strip_prefix("build/")?
        .strip_prefix(variant)?
        .strip_prefix('/')
}

/// Compares `files` (every file of one variant; those the digest leaves out,
/// such as `metadata.json` and bytecode, are skipped) with `expected`.
///
/// Returns the problems sorted by path; empty when they agree. Files are
/// hashed in parallel; a file that cannot be read is a
/// [`DigestProblem::Unreadable`] naming it. An algorithm this version does
/// not compute is one [`DigestProblem::UnsupportedAlgorithm`].
pub fn check(
    expected: &VariantDigest,
    files: impl IntoIterator<Item = VariantFile>,
) -> Vec<DigestProblem> {
    if expected.algorithm.digest_len().is_none() {
        return vec![DigestProblem::UnsupportedAlgorithm(
            expected.algorithm.to_string(),
        )];
    }
    let files: Vec<VariantFile> = files
        .into_iter()
        .filter(|f| !is_excluded(&f.relative))
        .collect();
    let hashed: Vec<(String, Result<Vec<u8>, String>)> = files
        .into_par_iter()
        .map(|file| {
            let actual = actual_digest(expected, &file);
            (file.relative, actual)
        })
        .collect();
    let mut unreadable = Vec::new();
    let mut actual = BTreeMap::new();
    for (relative, outcome) in hashed {
        match outcome {
            Ok(bytes) => {
                actual.insert(relative, bytes);
            }
            Err(reason) => unreadable.push(DigestProblem::Unreadable(reason)),
        }
    }
    let mut problems = compare(expected, &actual);
    problems.extend(unreadable);
    problems
}

/// The digest of one file's content under `expected.algorithm`; a deferred
/// file gets the expected value (or nothing, when it is not expected: then
/// it is an unknown file whatever its content).
fn actual_digest(expected: &VariantDigest, file: &VariantFile) -> Result<Vec<u8>, String> {
    let read = |path: &PathBuf| {
        hash_file(path, &expected.algorithm).map_err(|err| format!("{}: {err}", file.relative))
    };
    match &file.content {
        Content::Sha256 { sha256, .. } if expected.algorithm == DigestAlgorithm::Sha256 => {
            Ok(sha256.to_vec())
        }
        Content::Sha256 {
            file: Some(path), ..
        }
        | Content::File(path) => read(path),
        Content::Sha256 { file: None, .. } | Content::Deferred => Ok(expected
            .files
            .get(&file.relative)
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default()),
    }
}

/// Compares the variant directory `dir` on disk (a checkout, or a snapshot
/// whose links are followed) with `expected` ([`kernels_trust::check_variant`]).
/// A directory that cannot be walked is one [`DigestProblem::Unreadable`].
pub fn check_dir(dir: &Path, expected: &VariantDigest) -> Vec<DigestProblem> {
    kernels_trust::check_variant(dir, expected)
        .unwrap_or_else(|err| vec![DigestProblem::Unreadable(err.to_string())])
}

/// The files under the variant directory `dir` (links not followed) that
/// `expected` does not name, as [`DigestProblem::Unknown`]s: after
/// `download` placed the planned files, what else is there was added to the
/// cache (a concurrent download's temporary names are not). A directory
/// that does not exist has none.
pub fn unknown_in_dir(dir: &Path, expected: &VariantDigest) -> Vec<DigestProblem> {
    placed_files(dir)
        .into_iter()
        .filter(|relative| !is_excluded(relative) && !expected.files.contains_key(relative))
        .map(DigestProblem::Unknown)
        .collect()
}

/// Every file under the variant directory `dir` (links not followed, not
/// directories), as `/`-separated paths relative to it in name order; the
/// temporary names of a concurrent download ([`kernels_cache::is_temp_name`])
/// are left out. A directory that does not exist has none.
pub fn placed_files(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_type().is_dir())
        .filter(|entry| !kernels_cache::is_temp_name(&entry.file_name().to_string_lossy()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(dir).ok()?;
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            Some(parts.join("/"))
        })
        .collect()
}

/// One file's content as its variant's digest records it: checked on a
/// fetched blob before it becomes `blobs/<etag>`, and on a blob already
/// there before it is linked ([`check_content`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedContent {
    /// The variant whose digest names the file.
    pub variant: String,
    /// Path relative to the variant.
    pub relative: String,
    /// The digest's algorithm.
    pub algorithm: DigestAlgorithm,
    /// The recorded digest, raw.
    pub digest: Vec<u8>,
}

/// Hashes `path` once per algorithm that `expected` uses and compares it
/// with each entry. Returns `(variant, problem)` per entry that differs; a
/// file that cannot be read is a [`DigestProblem::Unreadable`] for each.
pub fn check_content(path: &Path, expected: &[ExpectedContent]) -> Vec<(String, DigestProblem)> {
    let mut hashes: Vec<(&DigestAlgorithm, Result<Vec<u8>, String>)> = Vec::new();
    let mut problems = Vec::new();
    for want in expected {
        if !hashes.iter().any(|(a, _)| *a == &want.algorithm) {
            let hash =
                hash_file(path, &want.algorithm).map_err(|err| format!("{}: {err}", want.relative));
            hashes.push((&want.algorithm, hash));
        }
        let problem = match hashes.iter().find(|(a, _)| *a == &want.algorithm) {
            Some((_, Ok(got))) if *got == want.digest => continue,
            Some((_, Ok(got))) => DigestProblem::Mismatch {
                path: want.relative.clone(),
                expected: STANDARD.encode(&want.digest),
                actual: STANDARD.encode(got),
            },
            Some((_, Err(reason))) => DigestProblem::Unreadable(reason.clone()),
            None => continue,
        };
        problems.push((want.variant.clone(), problem));
    }
    problems
}

/// Per blob (by its digest), what the metadata digests of the paths it
/// backs expect of its content.
pub type Expectations = HashMap<kernels_types::Digest, Vec<ExpectedContent>>;

/// For `download`: checks the planned `files` of `variant` (a Hub listing:
/// names, and the sha256 of LFS files) against its digest, then adds to
/// `expectations` what the content of every other file must hash to (git
/// files, or every file for a digest that is not sha256), to be checked
/// once fetched ([`check_content`]). Errors: the problems the listing shows.
pub fn expect_planned(
    variant: &str,
    files: &[super::plan::PlannedFile],
    expected: &VariantDigest,
    expectations: &mut Expectations,
) -> Result<(), Vec<DigestProblem>> {
    let sha256 = expected.algorithm == DigestAlgorithm::Sha256;
    let listed = files.iter().filter_map(|file| {
        let content = match file.digest.digest {
            kernels_types::Digest::Sha256(sha256) => Content::Sha256 { sha256, file: None },
            kernels_types::Digest::GitSha1(_) => Content::Deferred,
        };
        VariantFile::at(variant, &file.path, content)
    });
    let problems = check(expected, listed);
    if !problems.is_empty() {
        return Err(problems);
    }
    for file in files {
        let known = sha256 && matches!(file.digest.digest, kernels_types::Digest::Sha256(_));
        let Some(relative) = relative_path(variant, &file.path) else {
            continue;
        };
        let Some(want) = expected.files.get(relative).filter(|_| !known) else {
            continue;
        };
        expectations
            .entry(file.digest.digest)
            .or_default()
            .push(ExpectedContent {
                variant: variant.to_owned(),
                relative: relative.to_owned(),
                algorithm: expected.algorithm.clone(),
                digest: want.as_bytes().to_vec(),
            });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::metadata::Metadata;

    fn digest(files: &[(&str, &[u8])]) -> VariantDigest {
        use base64::Engine as _;
        use sha2::Digest as _;
        let files: serde_json::Map<String, serde_json::Value> = files
            .iter()
            .map(|(path, content)| {
                let hash =
                    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(content));
                ((*path).to_owned(), serde_json::Value::String(hash))
            })
            .collect();
        let json = serde_json::json!({"digest": {"algorithm": "sha256", "files": files}});
        Metadata::from_slice(json.to_string().as_bytes())
            .unwrap()
            .digest
            .unwrap()
    }

    fn sha256(content: &[u8]) -> [u8; 32] {
        use sha2::Digest as _;
        sha2::Sha256::digest(content).into()
    }

    #[test]
    fn known_hashes_files_and_deferred_files_are_compared() {
        let dir = tempfile::tempdir().unwrap();
        let init = dir.path().join("init");
        fs_err::write(&init, b"changed\n").unwrap();
        let expected = digest(&[
            ("__init__.py", b"x = 1\n"),
            ("_ops.so", b"elf"),
            ("a.py", b"a"),
        ]);
        let file = |relative: &str, content| VariantFile {
            relative: relative.to_owned(),
            content,
        };
        let ok = check(
            &expected,
            [
                file(
                    "_ops.so",
                    Content::Sha256 {
                        sha256: sha256(b"elf"),
                        file: None,
                    },
                ),
                file("a.py", Content::Deferred),
                file("__init__.py", Content::Deferred),
                file("__pycache__/a.cpython-312.pyc", Content::File(init.clone())),
                file("metadata.json", Content::Deferred),
            ],
        );
        assert_eq!(ok, []);
        let bad = check(
            &expected,
            [
                file("__init__.py", Content::File(init)),
                file(
                    "_ops.so",
                    Content::Sha256 {
                        sha256: sha256(b"elf"),
                        file: None,
                    },
                ),
                file("planted.py", Content::Deferred),
            ],
        );
        let lines: Vec<String> = bad.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("File hash mismatch for __init__.py: expected: "));
        assert_eq!(
            lines[1..],
            ["Missing file: a.py", "Unknown file: planted.py"]
        );
    }

    #[test]
    fn paths_are_made_relative_to_their_variant() {
        assert_eq!(
            relative_path("torch-cpu", "build/torch-cpu/relu/x.py"),
            Some("relu/x.py")
        );
        assert_eq!(relative_path("torch-cpu", "build/torch-cpu2/x.py"), None);
        assert_eq!(relative_path("torch-cpu", "README.md"), None);
    }
}
