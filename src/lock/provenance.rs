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
//!   "version": 2,
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
//! and the signature bundle `metadata.json.sigstore`
//! (`install::signature::files_hash`), so that a re-signed build with the
//! same files keeps its hash. Version 1 hashed the bundle too: its entries
//! are read with [`VariantProvenance::with_bundle`] set (written as
//! `"files-with-bundle": true` until a run re-records them, see
//! [`Provenance::compare`]), and the file is written as version 2. An entry is recorded for
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

/// The format version written: 2, whose files hash leaves out the bundle.
const VERSION: u32 = 2;

/// The first format, whose files hash covered `metadata.json.sigstore` too;
/// still read (see [`VariantProvenance::with_bundle`]).
const VERSION_WITH_BUNDLE: u32 = 1;

/// The parsed side file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// Format version (2; 1 is read and migrated).
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
    /// Whether `files` is a version-1 hash, which covered
    /// `metadata.json.sigstore` as well (`"files-with-bundle": true`, left
    /// out when false).
    #[serde(
        default,
        rename = "files-with-bundle",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub with_bundle: bool,
    /// The signer, `null` for an unsigned variant.
    pub signer: Option<Signer>,
}

impl VariantProvenance {
    /// A version-2 entry: `files` leaves out the bundle.
    pub fn new(files: String, signer: Option<Signer>) -> VariantProvenance {
        VariantProvenance {
            files,
            with_bundle: false,
            signer,
        }
    }
}

/// What a run found for one variant: its entry, and the files hash as
/// version 1 of the side file computed it (`metadata.json.sigstore`
/// included), to compare with a version-1 entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The version-2 entry of what was found.
    pub entry: VariantProvenance,
    /// The files hash with the bundle, equal to `entry.files` when the
    /// variant has no bundle.
    pub files_with_bundle: String,
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
            "the same locked commit should never change who built it or what it holds: find out why (a compromised mirror or cache, a rebuilt or re-signed release); to keep what is recorded, lock another version or download from where the recorded build is. If the new state is right, accept it after review, which records it in kernels.lock.provenance:\n\n    kernels download --accept-provenance {repo}"
        )
    )]
    Changed {
        /// The side file.
        path: PathBuf,
        /// The repository (`owner/name`), for the command that accepts the change.
        repo: String,
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
        let mut parsed = parsed;
        match parsed.version {
            VERSION => {}
            VERSION_WITH_BUNDLE => parsed.migrate(),
            other => {
                return Err(ProvenanceError::Invalid {
                    path,
                    reason: format!(
                        "version {other} (this tool reads {VERSION_WITH_BUNDLE} and {VERSION})"
                    ),
                });
            }
        }
        Ok(parsed)
    }

    /// The recorded entry of one variant.
    pub fn get(&self, repo_id: &str, commit: &str, variant: &str) -> Option<&VariantProvenance> {
        self.kernels.get(repo_id)?.get(commit)?.get(variant)
    }

    /// A version-1 record read as version 2: every entry's files hash is
    /// marked as one that covered the bundle.
    fn migrate(&mut self) {
        self.version = VERSION;
        let entries = self.kernels.values_mut().flat_map(|c| c.values_mut());
        for entry in entries.flat_map(|v| v.values_mut()) {
            entry.with_bundle = true;
        }
    }

    /// Compares `found` with the recorded entry of the variant, recording
    /// nothing. `Ok` when there is no entry, or the entry allows `found`:
    /// the same signer identity (issuer, source repository, workflow; any
    /// run) or unsigned then signed, with the same files. A version-1 entry
    /// ([`VariantProvenance::with_bundle`]) allows the files when its hash
    /// equals either hash of `found`; when it equals neither and `found` has
    /// a bundle, the old hash cannot tell a new bundle from new files, and
    /// the signer alone decides (the entry is then re-recorded). Errors:
    /// [`ProvenanceError::Changed`], `path` naming the file, signer before
    /// files.
    pub fn compare(
        &self,
        path: &Path,
        (repo_id, commit, variant): (&str, &str, &str),
        found: &Found,
    ) -> Result<(), ProvenanceError> {
        let changed = |recorded: String, found: String| ProvenanceError::Changed {
            path: path.to_owned(),
            repo: repo_id.to_owned(),
            subject: format!("{repo_id}@{commit} variant `{variant}`"),
            recorded,
            found,
        };
        let Some(old) = self.get(repo_id, commit, variant) else {
            return Ok(());
        };
        match (&old.signer, &found.entry.signer) {
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
        let same_files = if old.with_bundle {
            let has_bundle = found.files_with_bundle != found.entry.files;
            old.files == found.entry.files || old.files == found.files_with_bundle || has_bundle
        } else {
            old.files == found.entry.files
        };
        if !same_files {
            return Err(changed(
                format!("files {}", old.files),
                format!("files {}", found.entry.files),
            ));
        }
        Ok(())
    }

    /// Compares `found` with the entry of the variant ([`Provenance::compare`])
    /// and records it when there is none, when the entry was unsigned and
    /// `found` is signed (with the same files), or when the entry is a
    /// version-1 one (re-recorded as version 2, keeping its signer). Another
    /// run of the recorded signer changes nothing. Errors:
    /// [`ProvenanceError::Changed`], `path` naming the file.
    pub fn record(
        &mut self,
        path: &Path,
        key: (&str, &str, &str),
        found: Found,
    ) -> Result<(), ProvenanceError> {
        self.compare(path, key, &found)?;
        let (repo_id, commit, variant) = key;
        let mut entry = found.entry;
        if let Some(old) = self.get(repo_id, commit, variant) {
            let gains_signer = old.signer.is_none() && entry.signer.is_some();
            if !old.with_bundle && !gains_signer {
                return Ok(());
            }
            if old.signer.is_some() {
                entry.signer = old.signer.clone();
            }
        }
        self.put(key, entry);
        Ok(())
    }

    /// Records `found` for the variant whatever the entry held: what
    /// `kernels download --accept-provenance` does after review.
    pub fn accept(&mut self, key: (&str, &str, &str), found: Found) {
        self.put(key, found.entry);
    }

    fn put(&mut self, (repo_id, commit, variant): (&str, &str, &str), entry: VariantProvenance) {
        self.version = VERSION;
        self.kernels
            .entry(repo_id.to_owned())
            .or_default()
            .entry(commit.to_owned())
            .or_default()
            .insert(variant.to_owned(), entry);
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

    fn entry(files: &str, signer: Option<Signer>) -> Found {
        Found {
            entry: VariantProvenance::new(files.into(), signer),
            files_with_bundle: files.into(),
        }
    }

    /// A signed variant: `files` without the bundle, `bundle` the hash with it.
    fn signed(files: &str, bundle: &str, workflow: &str, index: u64) -> Found {
        Found {
            entry: VariantProvenance::new(files.into(), Some(signer(workflow, index))),
            files_with_bundle: bundle.into(),
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
        assert!(text.starts_with("{\n  \"version\": 2,"), "{text}");
        assert!(!text.contains("files-with-bundle"), "{text}");
        let back: Provenance = serde_json::from_str(&text).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn a_new_run_of_the_same_workflow_changes_nothing() {
        let path = Path::new("kernels.lock.provenance");
        let key = ("acme/relu", "a1", "torch-cpu");
        let mut p = Provenance::default();
        p.record(path, key, signed("sha256-1", "sha256-b1", "build.yaml", 7))
            .unwrap();
        let before = p.clone();
        // Re-signed: another bundle, another log index, the same files.
        p.record(path, key, signed("sha256-1", "sha256-b2", "build.yaml", 9))
            .unwrap();
        assert_eq!(p, before);
        // Another workflow is refused even with the same files; so are other
        // files from the same workflow; both name the command that accepts.
        for found in [
            signed("sha256-1", "sha256-b3", "build-mac.yaml", 10),
            signed("sha256-2", "sha256-b4", "build.yaml", 11),
        ] {
            let err = p.record(path, key, found.clone()).unwrap_err();
            let ProvenanceError::Changed { repo, .. } = &err else {
                panic!("{err}")
            };
            assert_eq!(repo, "acme/relu");
            p.accept(key, found.clone());
            assert_eq!(p.get("acme/relu", "a1", "torch-cpu"), Some(&found.entry));
            p = before.clone();
        }
    }

    #[test]
    fn a_version_1_file_is_migrated_and_never_reported_as_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = Provenance::path(dir.path());
        let v1 =
            |files: &str, signer: &str| format!("{{\"files\": \"{files}\", \"signer\": {signer}}}");
        let signer_json = serde_json::to_string(&signer("build.yaml", 7)).unwrap();
        let text = format!(
            "{{\"version\": 1, \"kernels\": {{\"acme/relu\": {{\"a1\": {{\"cpu\": {}, \"cuda\": {}, \"rocm\": {}}}}}}}}}",
            v1("sha256-b1", &signer_json),
            v1("sha256-u", "null"),
            v1("sha256-r", &signer_json),
        );
        fs_err::write(&path, text).unwrap();
        let mut p = Provenance::read(dir.path()).unwrap();
        assert_eq!(p.version, 2);
        assert!(p.get("acme/relu", "a1", "cpu").unwrap().with_bundle);
        // The same bundle: the version-1 hash matches the one with it.
        let key = |v| ("acme/relu", "a1", v);
        p.record(
            &path,
            key("cpu"),
            signed("sha256-1", "sha256-b1", "build.yaml", 7),
        )
        .unwrap();
        let cpu = p.get("acme/relu", "a1", "cpu").unwrap();
        assert_eq!((cpu.files.as_str(), cpu.with_bundle), ("sha256-1", false));
        // Unsigned then signed: the version-1 hash had no bundle.
        p.record(
            &path,
            key("cuda"),
            signed("sha256-u", "sha256-ub", "build.yaml", 8),
        )
        .unwrap();
        assert!(p.get("acme/relu", "a1", "cuda").unwrap().signer.is_some());
        // Re-signed by the same workflow: the old hash cannot tell, the
        // signer decides; the recorded run is kept.
        p.record(
            &path,
            key("rocm"),
            signed("sha256-2", "sha256-rb", "build.yaml", 9),
        )
        .unwrap();
        let rocm = p.get("acme/relu", "a1", "rocm").unwrap();
        assert_eq!(rocm.files, "sha256-2");
        assert_eq!(rocm.signer.as_ref().unwrap().rekor_log_index, Some(7));
        // Entries no run checked keep their mark in the version-2 file.
        let mut q = Provenance::read(dir.path()).unwrap();
        q.write(dir.path()).unwrap();
        let written = fs_err::read_to_string(&path).unwrap();
        assert!(written.contains("\"files-with-bundle\": true"), "{written}");
        assert_eq!(Provenance::read(dir.path()).unwrap(), q);
        // An unsigned version-1 entry still pins its files exactly.
        q.record(&path, key("cuda"), entry("sha256-x", None))
            .unwrap_err();
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
        fs_err::write(&path, b"{\"version\": 3, \"kernels\": {}}").unwrap();
        let err = Provenance::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("version 3"), "{err}");
        // Nothing recorded writes nothing.
        fs_err::remove_file(&path).unwrap();
        Provenance::default().write(dir.path()).unwrap();
        assert!(!path.exists());
    }
}
