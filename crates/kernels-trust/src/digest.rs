//! The `digest` of a variant's `metadata.json` against the files on disk.
//!
//! Rule (kernel-builder's `Digest::hash_variant`, read by reference 0.16+):
//! walk the variant directory following symbolic links, hash every regular
//! file, and leave out the top-level `metadata.json` and
//! `metadata.json.sigstore` (copies deeper down are hashed), every path with a
//! `__pycache__` component and every `*.pyc`. Keys are paths relative to the
//! variant with `/` separators.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kernels_types::metadata::{DigestAlgorithm, VariantDigest};
use sha2::{Digest as _, Sha256, Sha512};

use crate::{BUNDLE_FILE, METADATA_FILE};

/// One way the files on disk differ from the metadata's `digest`.
///
/// `Display` gives the reference's wording (`Missing file: …`, `Unknown
/// file: …`, `File hash mismatch for …: expected: …, got: …`), digests in
/// standard base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DigestProblem {
    /// The digest names a file the variant does not have.
    Missing(String),
    /// The variant has a file the digest does not name.
    Unknown(String),
    /// The file's content hashes to another value.
    Mismatch {
        /// Path relative to the variant.
        path: String,
        /// Base64 digest the metadata records.
        expected: String,
        /// Base64 digest of the file on disk.
        actual: String,
    },
    /// The metadata names an algorithm this version cannot compute.
    UnsupportedAlgorithm(String),
    /// The variant directory or one of its files cannot be read.
    Unreadable(String),
}

impl DigestProblem {
    /// The variant-relative path the problem is about, if it is about one file.
    pub fn path(&self) -> Option<&str> {
        match self {
            DigestProblem::Missing(path) | DigestProblem::Unknown(path) => Some(path),
            DigestProblem::Mismatch { path, .. } => Some(path),
            DigestProblem::UnsupportedAlgorithm(_) | DigestProblem::Unreadable(_) => None,
        }
    }
}

impl fmt::Display for DigestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DigestProblem::Missing(path) => write!(f, "Missing file: {path}"),
            DigestProblem::Unknown(path) => write!(f, "Unknown file: {path}"),
            DigestProblem::Mismatch {
                path,
                expected,
                actual,
            } => write!(
                f,
                "File hash mismatch for {path}: expected: {expected}, got: {actual}"
            ),
            DigestProblem::UnsupportedAlgorithm(name) => {
                write!(f, "Unsupported digest algorithm: {name}")
            }
            DigestProblem::Unreadable(reason) => write!(f, "Cannot read the variant: {reason}"),
        }
    }
}

/// Whether `relative` (a `/`-separated path inside the variant) is left out
/// of the digest.
pub fn is_excluded(relative: &str) -> bool {
    relative == METADATA_FILE
        || relative == BUNDLE_FILE
        || relative.ends_with(".pyc")
        || relative.split('/').any(|part| part == "__pycache__")
}

/// Hash every file of the variant directory `dir` that the digest covers.
///
/// Returns path → raw digest bytes. Errors: the directory or a file cannot
/// be read (the error names the path), or `algorithm` is not one this
/// version computes (`ErrorKind::Unsupported`).
pub fn hash_variant(
    dir: &Path,
    algorithm: &DigestAlgorithm,
) -> std::io::Result<BTreeMap<String, Vec<u8>>> {
    if algorithm.digest_len().is_none() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("unsupported digest algorithm `{algorithm}`"),
        ));
    }
    let mut hashes = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
    {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(relative) = relative_key(dir, entry.path()) else {
            continue;
        };
        if is_excluded(&relative) {
            continue;
        }
        hashes.insert(relative, hash_file(entry.path(), algorithm)?);
    }
    Ok(hashes)
}

fn relative_key(dir: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(dir).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().replace('\\', "/"))
        .collect();
    Some(parts.join("/"))
}

/// Hash one file's content with `algorithm` (sha512, else sha256; callers
/// check [`DigestAlgorithm::digest_len`] first). Returns the raw digest;
/// errors name the path.
pub fn hash_file(path: &Path, algorithm: &DigestAlgorithm) -> std::io::Result<Vec<u8>> {
    let mut file = fs_err::File::open(path)?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut sha256 = Sha256::new();
    let mut sha512 = Sha512::new();
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        match algorithm {
            DigestAlgorithm::Sha512 => sha512.update(&buffer[..n]),
            _ => sha256.update(&buffer[..n]),
        }
    }
    Ok(match algorithm {
        DigestAlgorithm::Sha512 => sha512.finalize().to_vec(),
        _ => sha256.finalize().to_vec(),
    })
}

/// Compare the files of `dir` with `expected`; an empty list means they agree.
///
/// Problems come sorted by path: missing, unknown and changed files alike.
/// Errors: reading the directory failed (see [`hash_variant`]); an
/// unsupported algorithm is a [`DigestProblem`], not an error.
pub fn check_variant(dir: &Path, expected: &VariantDigest) -> std::io::Result<Vec<DigestProblem>> {
    let actual = match hash_variant(dir, &expected.algorithm) {
        Ok(actual) => actual,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            return Ok(vec![DigestProblem::UnsupportedAlgorithm(
                expected.algorithm.to_string(),
            )]);
        }
        Err(e) => return Err(e),
    };
    Ok(compare(expected, &actual))
}

/// Compare a recorded digest with computed hashes (path → raw bytes).
pub fn compare(expected: &VariantDigest, actual: &BTreeMap<String, Vec<u8>>) -> Vec<DigestProblem> {
    let mut problems = Vec::new();
    for (path, want) in &expected.files {
        match actual.get(path) {
            None => problems.push(DigestProblem::Missing(path.clone())),
            Some(got) if got.as_slice() != want.as_bytes() => {
                problems.push(DigestProblem::Mismatch {
                    path: path.clone(),
                    expected: want.to_string(),
                    actual: STANDARD.encode(got),
                })
            }
            Some(_) => {}
        }
    }
    for path in actual.keys() {
        if !expected.files.contains_key(path) {
            problems.push(DigestProblem::Unknown(path.clone()));
        }
    }
    problems.sort_by(|a, b| a.path().cmp(&b.path()));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::metadata::Metadata;

    fn variant(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, content).unwrap();
        }
        dir
    }

    fn digest_of(json: &str) -> VariantDigest {
        Metadata::from_slice(json.as_bytes())
            .unwrap()
            .digest
            .unwrap()
    }

    #[test]
    fn known_vector_and_exclusions() {
        let dir = variant(&[
            ("flat", b"flat = 1\n"),
            ("metadata.json", b"{}"),
            ("metadata.json.sigstore", b"{}"),
            ("sub/metadata.json", b"{}"),
            ("__pycache__/x.cpython-312.pyc", b"x"),
            ("a.pyc", b"x"),
        ]);
        let hashes = hash_variant(dir.path(), &DigestAlgorithm::Sha256).unwrap();
        let keys: Vec<&str> = hashes.keys().map(String::as_str).collect();
        assert_eq!(keys, ["flat", "sub/metadata.json"]);
        assert_eq!(
            STANDARD.encode(&hashes["flat"]),
            "9g6sX+a9TQLsH79dUV4AmCNo3YZZuRPeuaGpvpC2sgs="
        );
    }

    #[test]
    fn missing_unknown_and_changed_files_are_named() {
        let dir = variant(&[("flat", b"2\n"), ("planted.py", b"raise SystemExit")]);
        let expected = digest_of(
            r#"{"digest": {"algorithm": "sha256", "files": {
                "flat": "9g6sX+a9TQLsH79dUV4AmCNo3YZZuRPeuaGpvpC2sgs=",
                "gone.so": "9g6sX+a9TQLsH79dUV4AmCNo3YZZuRPeuaGpvpC2sgs="}}}"#,
        );
        let problems = check_variant(dir.path(), &expected).unwrap();
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "File hash mismatch for flat: expected: 9g6sX+a9TQLsH79dUV4AmCNo3YZZuRPeuaGpvpC2sgs=, got: U8I05ehHK2rFHBrhyrP+BvrQU7646/2Jd7AQZVv908M=",
                "Missing file: gone.so",
                "Unknown file: planted.py",
            ]
        );
    }
}
