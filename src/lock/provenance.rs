//! `kernels.lock.provenance`: who built each locked variant, remembered next
//! to the lock (trust on first use, as Go's checksum database and PEP 740
//! intend), without changing a byte of `kernels.lock` itself.
//!
//! One JSON object (`version`, then `kernels` with repositories, commits
//! and variants sorted; two-space indentation, final newline; the
//! format is documented in `docs/lockfile.md`):
//!
//! ```json
//! {
//!   "version": 1,
//!   "kernels": {
//!     "<owner/name>": {
//!       "<commit>": {
//!         "<variant>": {
//!           "files": "sha256-…",
//!           "signer": null | {"issuer": …, "source-repository": …, "workflow": …,
//!                             "workflow-commit": …, "rekor-log-index": N}
//!         }
//!       }
//!     }
//!   }
//! }
//! ```
//!
//! `files` is the `git_lfs_concat` hash of the variant's files but bytecode
//! (`install::signature::files_hash`). An entry is recorded for
//! every signed variant, and for every variant of a kernel the lock pins no
//! hash for (a `KernelLocks` lock), where it is the only pin of the files
//! (`install::vouch`). A project whose kernels are all unsigned and
//! pinned by variant hashes gets no file. A later run that finds the same
//! locked commit and variant signed by another identity (issuer, source
//! repository, workflow), no longer signed, or with other files fails with
//! [`ProvenanceError::Changed`] naming both. Comparing and recording a
//! download run is `install::check::provenance`'s; this module imports
//! nothing of `install`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_trust::SignerIdentity;
use serde::{Deserialize, Serialize};

/// File name of the side file, next to `kernels.lock`.
pub const PROVENANCE_FILE_NAME: &str = "kernels.lock.provenance";

/// Largest side file read, in bytes.
pub const MAX_PROVENANCE_BYTES: u64 = 16 * 1024 * 1024;

/// The format version written.
const VERSION: u32 = 1;

/// The parsed side file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Format version (1).
    pub version: u32,
    /// repo id → commit → variant → entry.
    pub kernels: BTreeMap<String, BTreeMap<String, BTreeMap<String, VariantProvenance>>>,
}

/// What was found for one locked variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantProvenance {
    /// The files hash (`sha256-…`).
    pub files: String,
    /// The signer, `null` for an unsigned variant.
    pub signer: Option<Signer>,
}

/// A signer identity as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Signer {
    /// OIDC issuer.
    pub issuer: String,
    /// Source repository URI.
    pub source_repository: Option<String>,
    /// Signing workflow URI with its ref.
    pub workflow: Option<String>,
    /// Commit of the signing workflow.
    pub workflow_commit: Option<String>,
    /// Rekor log index of the entry.
    pub rekor_log_index: Option<u64>,
}

impl From<&SignerIdentity> for Signer {
    fn from(identity: &SignerIdentity) -> Signer {
        Signer {
            issuer: identity.issuer.clone(),
            source_repository: identity.source_repository.clone(),
            workflow: identity.workflow.clone(),
            workflow_commit: identity.workflow_commit.clone(),
            rekor_log_index: identity.log_index,
        }
    }
}

impl Signer {
    /// `<workflow> (source <repository>, issuer <issuer>)`, for messages.
    fn describe(&self) -> String {
        format!(
            "`{}` (source repository `{}`, issuer `{}`, Rekor log index {})",
            self.workflow.as_deref().unwrap_or("(no workflow)"),
            self.source_repository.as_deref().unwrap_or("(none)"),
            self.issuer,
            self.rekor_log_index
                .map_or_else(|| "(none)".to_owned(), |i| i.to_string())
        )
    }

    /// Whether two signers are the same identity: issuer, source repository
    /// and workflow (the workflow commit and log index say which run).
    fn same_identity(&self, other: &Signer) -> bool {
        self.issuer == other.issuer
            && self.source_repository == other.source_repository
            && self.workflow == other.workflow
    }
}

/// A side file that cannot be used, or a variant whose provenance changed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ProvenanceError {
    /// The file cannot be read or written.
    #[error("cannot use `{}`: {reason}", path.display())]
    #[diagnostic(code(kernels::provenance::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        reason: String,
    },
    /// The file is not a provenance file of this version.
    #[error("`{}` is not a kernels.lock.provenance file: {reason}", path.display())]
    #[diagnostic(
        code(kernels::provenance::invalid),
        help(
            "restore it from version control, or remove it to trust what the next `kernels download` finds (trust on first use)"
        )
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A locked variant is now signed by another identity, unsigned, or has
    /// other files than recorded.
    #[error(
        "{subject}: `{}` records {recorded}, but the cache now has {found}",
        path.display()
    )]
    #[diagnostic(
        code(kernels::provenance::changed),
        help(
            "the same locked commit should never change who built it: find out why (a compromised mirror or cache, a re-signed build), then either lock another version or, if the new provenance is right, delete the entry from kernels.lock.provenance and run the command again"
        )
    )]
    Changed {
        /// The side file.
        path: PathBuf,
        /// `owner/name@<commit> variant `<variant>``.
        subject: String,
        /// What the file records.
        recorded: String,
        /// What was found.
        found: String,
    },
}

impl Provenance {
    /// `<project>/kernels.lock.provenance`.
    pub fn path(project_dir: &Path) -> PathBuf {
        project_dir.join(PROVENANCE_FILE_NAME)
    }

    /// Reads the side file of `project_dir`; none is an empty record.
    pub fn read(project_dir: &Path) -> Result<Provenance, ProvenanceError> {
        let path = Provenance::path(project_dir);
        let io = |reason: String| ProvenanceError::Io {
            path: path.clone(),
            reason,
        };
        let size = match fs_err::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Provenance::default());
            }
            Err(err) => return Err(io(err.to_string())),
        };
        if size > MAX_PROVENANCE_BYTES {
            return Err(io(format!(
                "it is {size} bytes, more than {MAX_PROVENANCE_BYTES}"
            )));
        }
        let bytes = fs_err::read(&path).map_err(|e| io(e.to_string()))?;
        let parsed: Provenance =
            serde_json::from_slice(&bytes).map_err(|e| ProvenanceError::Invalid {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        if parsed.version != VERSION {
            return Err(ProvenanceError::Invalid {
                path,
                reason: format!("version {} (this tool reads {VERSION})", parsed.version),
            });
        }
        Ok(parsed)
    }

    /// The recorded entry of one variant.
    pub fn get(&self, repo_id: &str, commit: &str, variant: &str) -> Option<&VariantProvenance> {
        self.kernels.get(repo_id)?.get(commit)?.get(variant)
    }

    /// Compares `found` with the recorded entry of the variant, recording
    /// nothing: `Ok` when there is no entry, or the entry allows `found`
    /// (the same signer identity, or unsigned then signed, with the same
    /// files). Errors: [`ProvenanceError::Changed`], `path` naming the file.
    pub fn compare(
        &self,
        path: &Path,
        (repo_id, commit, variant): (&str, &str, &str),
        found: &VariantProvenance,
    ) -> Result<(), ProvenanceError> {
        let changed = |recorded: String, found: String| ProvenanceError::Changed {
            path: path.to_owned(),
            subject: format!("{repo_id}@{commit} variant `{variant}`"),
            recorded,
            found,
        };
        let Some(old) = self.get(repo_id, commit, variant) else {
            return Ok(());
        };
        match (&old.signer, &found.signer) {
            (Some(was), Some(now)) if !was.same_identity(now) => {
                return Err(changed(
                    format!("signer {}", was.describe()),
                    format!("signer {}", now.describe()),
                ));
            }
            (Some(was), None) => {
                return Err(changed(
                    format!("signer {}", was.describe()),
                    "no signature".to_owned(),
                ));
            }
            _ => {}
        }
        if old.files != found.files {
            return Err(changed(
                format!("files {}", old.files),
                format!("files {}", found.files),
            ));
        }
        Ok(())
    }

    /// Compares `found` with the entry of the variant ([`Provenance::compare`])
    /// and records it when there is none (or the entry was unsigned and
    /// `found` is signed, with the same files). Errors:
    /// [`ProvenanceError::Changed`], `path` naming the file.
    pub fn record(
        &mut self,
        path: &Path,
        key: (&str, &str, &str),
        found: VariantProvenance,
    ) -> Result<(), ProvenanceError> {
        self.compare(path, key, &found)?;
        let (repo_id, commit, variant) = key;
        if let Some(old) = self.get(repo_id, commit, variant)
            && (old.signer.is_some() || found.signer.is_none())
        {
            return Ok(());
        }
        self.version = VERSION;
        self.kernels
            .entry(repo_id.to_owned())
            .or_default()
            .entry(commit.to_owned())
            .or_default()
            .insert(variant.to_owned(), found);
        Ok(())
    }

    /// The file's text: entries sorted, two-space indentation, final newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("provenance serializes");
        text.push('\n');
        text
    }

    /// Writes the side file of `project_dir` when there is something to
    /// record and it differs from what is there; an empty record writes
    /// nothing.
    pub fn write(&self, project_dir: &Path) -> Result<(), ProvenanceError> {
        if self.kernels.is_empty() {
            return Ok(());
        }
        let path = Provenance::path(project_dir);
        let text = self.to_text();
        if fs_err::read(&path).is_ok_and(|old| old == text.as_bytes()) {
            return Ok(());
        }
        kernels_cache::atomic::write_atomic(&path, text.as_bytes()).map_err(|e| {
            ProvenanceError::Io {
                path: path.clone(),
                reason: e.to_string(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer(workflow: &str, index: u64) -> Signer {
        Signer {
            issuer: "https://token.actions.githubusercontent.com".into(),
            source_repository: Some("https://github.com/acme/ci".into()),
            workflow: Some(workflow.into()),
            workflow_commit: Some("c".repeat(40)),
            rekor_log_index: Some(index),
        }
    }

    fn entry(files: &str, signer: Option<Signer>) -> VariantProvenance {
        VariantProvenance {
            files: files.into(),
            signer,
        }
    }

    #[test]
    fn first_use_is_recorded_and_a_change_names_both() {
        let path = Path::new("kernels.lock.provenance");
        let key = ("acme/relu", "a1", "torch-cpu");
        let mut p = Provenance::default();
        p.record(path, key, entry("sha256-1", None)).unwrap();
        // Unsigned, then signed with the same files: the signer is recorded.
        p.record(path, key, entry("sha256-1", Some(signer("build.yaml", 7))))
            .unwrap();
        assert!(
            p.get("acme/relu", "a1", "torch-cpu")
                .unwrap()
                .signer
                .is_some()
        );
        // The same identity from another run is the same signer.
        p.record(path, key, entry("sha256-1", Some(signer("build.yaml", 9))))
            .unwrap();
        let other = p.record(path, key, entry("sha256-1", Some(signer("evil.yaml", 7))));
        let text = other.unwrap_err().to_string();
        assert!(
            text.contains("`build.yaml`") && text.contains("`evil.yaml`"),
            "{text}"
        );
        let unsigned = p.record(path, key, entry("sha256-1", None)).unwrap_err();
        assert!(unsigned.to_string().contains("no signature"), "{unsigned}");
        let signed = Some(signer("build.yaml", 7));
        let files = p.record(path, key, entry("sha256-2", signed)).unwrap_err();
        assert!(files.to_string().contains("files sha256-1"), "{files}");
    }

    #[test]
    fn the_text_is_sorted_and_round_trips() {
        let path = Path::new("x");
        let mut p = Provenance::default();
        p.record(path, ("b/k", "c", "v"), entry("sha256-2", None))
            .unwrap();
        p.record(
            path,
            ("a/k", "c", "v"),
            entry("sha256-1", Some(signer("w", 1))),
        )
        .unwrap();
        let text = p.to_text();
        assert!(text.find("a/k").unwrap() < text.find("b/k").unwrap());
        assert!(text.contains("\"rekor-log-index\": 1"), "{text}");
        let back: Provenance = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn an_unreadable_side_file_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Provenance::read(dir.path()).unwrap(), Provenance::default());
        let path = Provenance::path(dir.path());
        fs_err::write(&path, b"{\"version\": 1, \"kernels\": {\"a/b\": 3}}").unwrap();
        let err = Provenance::read(dir.path()).unwrap_err();
        assert!(matches!(err, ProvenanceError::Invalid { .. }), "{err}");
        assert!(err.to_string().contains("kernels.lock.provenance"), "{err}");
        fs_err::write(&path, b"{\"version\": 2, \"kernels\": {}}").unwrap();
        let err = Provenance::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("version 2"), "{err}");
        // Nothing recorded writes nothing.
        fs_err::remove_file(&path).unwrap();
        Provenance::default().write(dir.path()).unwrap();
        assert!(!path.exists());
    }
}
