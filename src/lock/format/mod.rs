//! `kernels.lock`: reading both lock formats, writing them byte-identically to
//! the reference, and a format-independent view for the download engine.
//!
//! * [`variant_hash`]: the format of reference 0.1.7–0.16 (commit plus a
//!   `git_lfs_concat` hash per build variant).
//! * [`kernel_locks`]: the `KernelLocks` format of reference 0.17 (dependency plus
//!   commit, no hashes).
//!
//! The format of a file is recognised from its first entry; an empty array `[]`
//! reads as an empty variant-hash lock.

pub mod kernel_locks;
pub mod variant_hash;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use kernels_types::CommitId;
use kernels_types::source_text::ClippedText;
use miette::{NamedSource, SourceOffset, SourceSpan};
use serde_json::Value;

pub use kernel_locks::{KernelDependency, KernelLocks, KernelVersion};
use kernels_types::repo_id::RepoId;
pub use variant_hash::{KernelHashLock, VariantHash};

/// File name of the lock inside a project directory.
pub const LOCK_FILE_NAME: &str = "kernels.lock";

/// Which of the two lock formats a file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockFormat {
    /// Variant-hash list (reference 0.1.7–0.16).
    VariantHash,
    /// `KernelLocks` (reference 0.17).
    KernelLocks,
}

impl LockFormat {
    /// The format's name in JSON output: `variant-hash` or `kernel-locks`.
    pub fn id(self) -> &'static str {
        match self {
            LockFormat::VariantHash => "variant-hash",
            LockFormat::KernelLocks => "kernel-locks",
        }
    }

    /// The format as status lines and warnings name it, with the runtimes
    /// that read it: `variant-hash (kernels ≤0.16)` or `KernelLocks (kernels
    /// 0.17)`.
    pub fn name(self) -> &'static str {
        match self {
            LockFormat::VariantHash => "variant-hash (kernels ≤0.16)",
            LockFormat::KernelLocks => "KernelLocks (kernels 0.17)",
        }
    }

    /// The format as the findings of the offline and online lock checks name
    /// it ([`crate::lock::freshness`]): `variant-hash format (kernels
    /// 0.1.7–0.16)` or `KernelLocks format (kernels 0.17)`.
    pub fn finding_name(self) -> &'static str {
        match self {
            LockFormat::VariantHash => "variant-hash format (kernels 0.1.7–0.16)",
            LockFormat::KernelLocks => "KernelLocks format (kernels 0.17)",
        }
    }
}

/// A parsed `kernels.lock` in either format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lockfile {
    /// Variant-hash list, in file order.
    VariantHash(Vec<KernelHashLock>),
    /// `KernelLocks`, sorted.
    KernelLocks(KernelLocks),
}

/// One kernel to download, whatever the lock format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedKernel {
    /// Hub repository id.
    pub repo_id: RepoId,
    /// Locked commit: 40 hex (64 only in `KernelLocks` files of SHA-256 repositories).
    pub commit: CommitId,
    /// Variant name → `sha256-…` `git_lfs_concat` hash, in file order; `None` for
    /// `KernelLocks` files, which carry no hashes.
    pub variants: Option<IndexMap<String, String>>,
}

/// Why a lock file cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LockfileError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    #[diagnostic(
        code(kernels::lockfile::io),
        help("check that this user may read the file and enter every directory above it")
    )]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The file contains git merge conflict markers.
    #[error("{} contains unresolved merge conflict markers (line {line})", path.display())]
    #[diagnostic(
        code(kernels::lockfile::conflict),
        help(
            "resolve the conflict in pyproject.toml if needed, delete kernels.lock and run `kernels lock` again"
        )
    )]
    ConflictMarkers {
        /// The lock file.
        path: PathBuf,
        /// 1-based line of the first marker.
        line: usize,
    },

    /// The file is not JSON, or JSON of the wrong shape, or an unsupported lock flavour.
    #[error("{} is not a kernels lock file: {detail}", path.display())]
    #[diagnostic(
        code(kernels::lockfile::not_a_lockfile),
        help(
            "expected a JSON array of `{{\"repo_id\", \"sha\", \"variants\"}}` objects (kernels 0.1.7–0.16) or of `{{\"dependency\", \"lock\"}}` objects (kernels 0.17); run `kernels lock` to write one"
        )
    )]
    NotALockfile {
        /// The lock file.
        path: PathBuf,
        /// What was found instead.
        detail: String,
        /// The file text, when pointing into it helps.
        #[source_code]
        source_code: Option<Arc<NamedSource<ClippedText>>>,
        /// Where the problem is.
        #[label("here")]
        span: Option<SourceSpan>,
    },

    /// The file starts with a UTF-8 byte order mark, which neither runtime
    /// reads (0.1.7–0.16 `json.load`: `Unexpected UTF-8 BOM`; 0.17:
    /// `expected value at line 1 column 1`).
    #[error("{} starts with a UTF-8 byte order mark (BOM), which no kernels runtime reads", path.display())]
    #[diagnostic(
        code(kernels::lockfile::bom),
        help("save the file as UTF-8 without BOM, or run `kernels lock` to write it again")
    )]
    ByteOrderMark {
        /// The lock file.
        path: PathBuf,
    },

    /// A lock file of a known format with an invalid entry.
    #[error("{} is not a valid {format} lock file: {detail}", path.display())]
    #[diagnostic(
        code(kernels::lockfile::invalid),
        help("fix the entry or delete the file and run `kernels lock` again")
    )]
    Invalid {
        /// The lock file.
        path: PathBuf,
        /// `variant-hash (kernels ≤0.16)` or `KernelLocks (kernels 0.17)`.
        format: &'static str,
        /// What is wrong, naming the entry.
        detail: String,
        /// The file text.
        #[source_code]
        source_code: Option<Arc<NamedSource<ClippedText>>>,
        /// Where the problem is, when known.
        #[label("here")]
        span: Option<SourceSpan>,
    },
}

const FORMAT_A: &str = "variant-hash (kernels 0.1.7–0.16)";
const FORMAT_B: &str = "KernelLocks (kernels 0.17)";

impl LockfileError {
    /// For a file that is not a lock file of either format (not JSON, or JSON
    /// of another shape, such as a checksum list): what it looks like.
    /// `None` for lock files with a problem `kernels lock` repairs by writing
    /// them again (merge conflict markers, a byte order mark, an invalid
    /// entry) and for I/O errors.
    pub fn foreign_detail(&self) -> Option<&str> {
        match self {
            LockfileError::NotALockfile { detail, .. } => Some(detail),
            _ => None,
        }
    }
}

/// Whether the lock file at `path` exists: `Ok(false)` only when nothing is
/// there (`NotFound`); any other failure to look (a directory the user may not
/// enter: permission denied) is [`LockfileError::Io`] naming the path, so that
/// it is never reported as a missing lock.
pub fn lock_file_exists(path: &Path) -> Result<bool, LockfileError> {
    match fs_err::metadata(path) {
        Ok(metadata) => Ok(metadata.is_file()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(LockfileError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

impl Lockfile {
    /// Reads and parses a lock file.
    pub fn read(path: &Path) -> Result<Self, LockfileError> {
        let text = fs_err::read_to_string(path).map_err(|source| LockfileError::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses lock file text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, LockfileError> {
        let file = LockText { text, path };
        if text.starts_with('\u{feff}') {
            return Err(LockfileError::ByteOrderMark {
                path: path.to_owned(),
            });
        }
        let value: Value = serde_json::from_str(text).map_err(|err| file.not_json(&err))?;
        let Value::Array(items) = &value else {
            return Err(file.not_a_lockfile(
                format!(
                    "the top level is {}, not an array",
                    variant_hash::kind(&value)
                ),
                None,
            ));
        };
        let Some(first) = items.first() else {
            return Ok(Lockfile::VariantHash(Vec::new()));
        };
        let Value::Object(first) = first else {
            return Err(file.not_a_lockfile(
                format!("the array holds {}, not objects", variant_hash::kind(first)),
                None,
            ));
        };
        if first.contains_key("dependency") || first.contains_key("lock") {
            return file.kernel_locks(items);
        }
        if first.contains_key("files") && !first.contains_key("variants") {
            return Err(file.not_a_lockfile(
                "it is a legacy `hf-kernels` lock (per-file `files` lists), which no `kernels` version reads"
                    .into(),
                None,
            ));
        }
        if !(first.contains_key("repo_id")
            || first.contains_key("sha")
            || first.contains_key("variants"))
        {
            let keys: Vec<String> = first.keys().map(|k| format!("`{k}`")).collect();
            return Err(file.not_a_lockfile(
                format!("its first entry has the keys {}", keys.join(", ")),
                None,
            ));
        }
        variant_hash::from_value(items)
            .map(Lockfile::VariantHash)
            .map_err(|(index, message)| LockfileError::Invalid {
                path: path.to_owned(),
                format: FORMAT_A,
                detail: format!("entry {}: {message}", index + 1),
                source_code: None,
                span: None,
            })
    }

    /// The file's format.
    pub fn format(&self) -> LockFormat {
        match self {
            Lockfile::VariantHash(_) => LockFormat::VariantHash,
            Lockfile::KernelLocks(_) => LockFormat::KernelLocks,
        }
    }

    /// Serializes byte-identically to the reference writer of the file's format
    /// (no final newline).
    pub fn to_json(&self) -> String {
        match self {
            Lockfile::VariantHash(locks) => variant_hash::to_json(locks),
            Lockfile::KernelLocks(locks) => locks.to_json(),
        }
    }

    /// The kernels to download. Variant-hash entries come in file order;
    /// `KernelLocks` entries in their sorted order, with repeated `(repo, commit)`
    /// pairs listed once. `path` is used in error messages.
    ///
    /// Fails when a repo id is not of the form `owner/name`.
    pub fn locked_kernels(&self, path: &Path) -> Result<Vec<LockedKernel>, LockfileError> {
        let invalid =
            |format, repo: &str, err: kernels_types::repo_id::RepoIdError| LockfileError::Invalid {
                path: path.to_owned(),
                format,
                detail: format!("repo id `{repo}`: {err}"),
                source_code: None,
                span: None,
            };
        match self {
            Lockfile::VariantHash(locks) => locks
                .iter()
                .map(|lock| {
                    Ok(LockedKernel {
                        repo_id: lock
                            .repo_id
                            .parse()
                            .map_err(|err| invalid(FORMAT_A, &lock.repo_id, err))?,
                        commit: lock.sha.clone(),
                        variants: Some(
                            lock.variants
                                .iter()
                                .map(|(name, v)| (name.clone(), v.hash.clone()))
                                .collect(),
                        ),
                    })
                })
                .collect(),
            Lockfile::KernelLocks(locks) => {
                let mut out: Vec<LockedKernel> = Vec::new();
                for (dep, commit) in locks.iter() {
                    let repo_id: RepoId = dep
                        .repo_id
                        .parse()
                        .map_err(|err| invalid(FORMAT_B, &dep.repo_id, err))?;
                    if out
                        .iter()
                        .any(|k| k.repo_id == repo_id && k.commit == *commit)
                    {
                        continue;
                    }
                    out.push(LockedKernel {
                        repo_id,
                        commit: commit.clone(),
                        variants: None,
                    });
                }
                Ok(out)
            }
        }
    }
}

/// The text of a lock file being parsed, with its path, for the errors of
/// [`Lockfile::parse`].
struct LockText<'a> {
    text: &'a str,
    path: &'a Path,
}

impl LockText<'_> {
    /// The file text as a diagnostic source.
    fn source(&self) -> Option<Arc<NamedSource<ClippedText>>> {
        Some(Arc::new(NamedSource::new(
            self.path.display().to_string(),
            ClippedText::new(self.text),
        )))
    }

    fn not_a_lockfile(&self, detail: String, span: Option<SourceSpan>) -> LockfileError {
        LockfileError::NotALockfile {
            path: self.path.to_owned(),
            detail,
            source_code: span.and(self.source()),
            span,
        }
    }

    /// Why text that is not JSON is no lock: conflict markers, a checksum
    /// list, comments, or where the JSON breaks.
    fn not_json(&self, err: &serde_json::Error) -> LockfileError {
        let text = self.text;
        if let Some(line) = conflict_marker_line(text) {
            return LockfileError::ConflictMarkers {
                path: self.path.to_owned(),
                line,
            };
        }
        if looks_like_checksum_list(text) {
            return self.not_a_lockfile(
                "it looks like a checksum list (`<hex digest>  <file name>` lines), not JSON"
                    .into(),
                None,
            );
        }
        let span = span_at(text, err.line(), err.column());
        let mut detail = format!("invalid JSON: {err}");
        if text.lines().any(|l| l.trim_start().starts_with("//")) {
            detail.push_str(" (JSON has no comments: remove the `//` lines)");
        }
        self.not_a_lockfile(detail, span)
    }

    /// Reads the text as a `KernelLocks` file (its first entry has
    /// `dependency` or `lock`); a nix-builder lock is refused.
    fn kernel_locks(&self, items: &[Value]) -> Result<Lockfile, LockfileError> {
        let is_nix = items
            .iter()
            .any(|item| item.get("lock").and_then(|lock| lock.get("hash")).is_some());
        if is_nix {
            return Err(self.not_a_lockfile(
                "it is a nix-builder lock (`lock.hash` entries), which the Python runtime does not read"
                    .into(),
                None,
            ));
        }
        let invalid = |detail, span: Option<SourceSpan>| LockfileError::Invalid {
            path: self.path.to_owned(),
            format: FORMAT_B,
            detail,
            source_code: span.and(self.source()),
            span,
        };
        match KernelLocks::parse(self.text) {
            Ok(locks) => Ok(Lockfile::KernelLocks(locks)),
            Err(kernel_locks::ParseError::Json {
                line,
                column,
                message,
            }) => Err(invalid(message, span_at(self.text, line, column))),
            Err(kernel_locks::ParseError::Entry { index, message }) => {
                Err(invalid(format!("entry {}: {message}", index + 1), None))
            }
        }
    }
}

/// 1-based line of the first git conflict marker, if any.
fn conflict_marker_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            line.starts_with("<<<<<<< ")
                || line == "<<<<<<<"
                || line.starts_with(">>>>>>> ")
                || line == ">>>>>>>"
                || line == "======="
        })
        .map(|i| i + 1)
}

/// Whether every non-empty line is `<hex digest> <name>` as `sha256sum` prints.
fn looks_like_checksum_list(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && lines.all(|line| {
            let mut parts = line.split_whitespace();
            let digest = parts.next().unwrap_or("");
            matches!(digest.len(), 32 | 40 | 64 | 128)
                && digest.bytes().all(|b| b.is_ascii_hexdigit())
                && parts.next().is_some()
        })
}

/// A one-character span at a serde 1-based line/column, if inside the text.
fn span_at(text: &str, line: usize, column: usize) -> Option<SourceSpan> {
    if line == 0 {
        return None;
    }
    let offset = SourceOffset::from_location(text, line, column.max(1)).offset();
    let len = usize::from(offset < text.len());
    Some(SourceSpan::new(offset.min(text.len()).into(), len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real projects with their committed locks (`fixtures/projects/*/kernels.lock.real`).
    fn projects_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects")
    }

    fn real_lock_files() -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = fs_err::read_dir(projects_dir())
            .expect("fixtures/projects")
            .map(|dir| dir.unwrap().path().join("kernels.lock.real"))
            .filter(|path| path.exists())
            .collect();
        files.sort();
        files
    }

    /// Every real lock file re-serializes byte-identically (modulo one final
    /// newline added by the project's own tooling).
    #[test]
    fn real_lock_files_round_trip() {
        let files = real_lock_files();
        assert!(files.len() >= 14, "found only {} files", files.len());
        for path in files {
            let text = fs_err::read_to_string(&path).unwrap();
            let lock =
                Lockfile::read(&path).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            let expected = text.strip_suffix('\n').unwrap_or(&text);
            assert_eq!(lock.to_json(), expected, "{}", path.display());
            let kernels = lock.locked_kernels(&path).unwrap();
            assert!(!kernels.is_empty());
        }
    }

    #[test]
    fn crlf_and_extra_keys_are_tolerated() {
        let text = "[\r\n {\"repo_id\": \"a/b\", \"extra\": 1, \"sha\": \"0123456789012345678901234567890123456789\",\r\n \"variants\": {\"torch-universal\": {\"hash\": \"sha256-00\"}}}\r\n]\r\n";
        let lock = Lockfile::parse(text, Path::new("kernels.lock")).unwrap();
        assert_eq!(lock.format(), LockFormat::VariantHash);
        assert!(lock.to_json().contains("\"hash_type\": \"git_lfs_concat\""));
    }

    fn error_text(text: &str) -> String {
        let err = Lockfile::parse(text, Path::new("proj/kernels.lock")).unwrap_err();
        let mut out = err.to_string();
        if let Some(help) = miette::Diagnostic::help(&err) {
            out.push_str(&format!(" | {help}"));
        }
        out
    }

    #[test]
    fn clear_errors_for_non_lock_files() {
        let checksum = format!(
            "{}  build/a.so\n{}  build/b.so\n",
            "a".repeat(64),
            "b".repeat(64)
        );
        assert!(error_text(&checksum).contains("checksum list"));
        let conflict = "[\n<<<<<<< HEAD\n]\n=======\n[]\n>>>>>>> other\n";
        assert!(error_text(conflict).contains("conflict markers (line 2)"));
        let commented = "[\n  {\n    \"repo_id\": \"a/b\",\n    // ...\n  }\n]";
        assert!(error_text(commented).contains("JSON has no comments"));
        let object = r#"{"repo_id": "a/b"}"#;
        assert!(error_text(object).contains("top level is an object"));
        let strings = r#"["a"]"#;
        assert!(error_text(strings).contains("holds a string"));
        let wrong = r#"[{"name": "x"}]"#;
        assert!(error_text(wrong).contains("`name`"));
        let legacy =
            fs_err::read_to_string(projects_dir().join("tgi-server-aab6141b/hf-kernels.lock.real"))
                .unwrap();
        assert!(error_text(&legacy).contains("legacy `hf-kernels`"));
        // Shape of nix-builder's `examples/kernels/kernel-deps/kernels.lock`.
        let nix = r#"[
  {
    "dependency": {
      "repo-id": "kernels-community/einops",
      "version": 1
    },
    "lock": {
      "commit": "0bd00775195dda6f84c16c31f6d94564232d08b3",
      "hash": "sha256-lAQANGFUvfOe71Ikrt3BaJ5vPgnmwxRbTqji6LNXt6s="
    }
  }
]
"#;
        assert!(error_text(nix).contains("nix-builder"));
        for text in [checksum.as_str(), object, wrong] {
            assert!(error_text(text).contains("proj/kernels.lock"));
            assert!(error_text(text).contains("expected a JSON array"));
        }
        let missing_variants =
            r#"[{"repo_id": "a/b", "sha": "0123456789012345678901234567890123456789"}]"#;
        assert!(error_text(missing_variants).contains("entry 1: `variants` of `a/b` is missing"));
        let mixed = r#"[{"dependency": {"repo-id": "a/b", "version": 1}, "lock": {"commit": "0123456789012345678901234567890123456789"}}, {"repo_id": "a/b"}]"#;
        assert!(error_text(mixed).contains("unknown field `repo_id`"));
    }
}
