//! The `kernels` runtime's own verification receipts (Python `kernels`
//! 0.18 and 0.19), which `kernels download` writes after its own full check
//! so that a cache the runtime cannot write to (a read-only image) still
//! loads without hashing every file of every variant at each process start.
//!
//! ```text
//! <root>/.verified-kernels/digest/v1/<key>      what the digest check found
//! <root>/.verified-kernels/signature/v1/<key>   what the signature check found (never written here)
//! ```
//!
//! `<key>` is the lowercase hex SHA-256 of four strings, each preceded by its
//! length in bytes as a big-endian `u64`: `remote_kernel`, the repository id,
//! the commit (40 hex) and the variant. The content is compact JSON without a
//! trailing newline, keys in this order:
//! `{"location":{"type":"remote_kernel","repo_id":…,"revision":…,"variant":…}}`
//! (bytes compared with what 0.18.3 and 0.19.1 write, `tests/it/runtime_receipts.rs`).
//! A receipt names a location only: the runtime that finds one skips its
//! digest check of that variant entirely, whatever the files hold now.
//!
//! Later upstream sources move the folder and add fields, so the format is
//! tied to the runtime version by [`RuntimeReceiptFormat`], which the target
//! profile chooses.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{CacheError, HubCache, fsx};

/// The folder of the runtime's receipts in the cache root.
pub const VERIFIED_DIR: &str = ".verified-kernels";

/// The receipt kinds (sub-folders of [`VERIFIED_DIR`]) the runtime keeps.
const KINDS: [&str; 2] = ["digest", "signature"];

/// The location type of a kernel downloaded from the Hub.
const REMOTE_KERNEL: &str = "remote_kernel";

/// A runtime receipt format; which one a target runtime reads is decided by
/// its version (`crate` users: the target profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeReceiptFormat {
    /// `kernels` 0.18–0.19: `.verified-kernels/digest/v1/<key>`.
    DigestV1,
}

/// The kernel variant a runtime receipt vouches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLocation<'a> {
    /// Hub repository id, `owner/name`.
    pub repo_id: &'a str,
    /// The commit, full lowercase hex.
    pub revision: &'a str,
    /// The variant (directory name under `build/`).
    pub variant: &'a str,
}

/// The receipt file as JSON (field order is the runtime's).
#[derive(Serialize, Deserialize)]
struct Stored<L> {
    location: L,
}

#[derive(Serialize)]
struct LocationOut<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    repo_id: &'a str,
    revision: &'a str,
    variant: &'a str,
}

#[derive(Deserialize)]
struct LocationIn {
    #[serde(rename = "type")]
    kind: String,
    repo_id: String,
    revision: String,
    variant: String,
}

impl KernelLocation<'_> {
    /// The receipt file name: hex SHA-256 over the length-prefixed
    /// (big-endian `u64`) strings `remote_kernel`, repo id, revision, variant.
    pub fn key(&self) -> String {
        let mut framed = Vec::new();
        for part in [REMOTE_KERNEL, self.repo_id, self.revision, self.variant] {
            framed.extend_from_slice(&(part.len() as u64).to_be_bytes());
            framed.extend_from_slice(part.as_bytes());
        }
        kernels_types::digest::sha256(&framed)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The receipt file's bytes (compact JSON, no trailing newline).
    pub fn contents(&self) -> Vec<u8> {
        let stored = Stored {
            location: LocationOut {
                kind: REMOTE_KERNEL,
                repo_id: self.repo_id,
                revision: self.revision,
                variant: self.variant,
            },
        };
        serde_json::to_vec(&stored).unwrap_or_default()
    }
}

impl RuntimeReceiptFormat {
    /// The folder of this format's digest receipts, relative to the cache root.
    fn digest_dir(self) -> PathBuf {
        match self {
            RuntimeReceiptFormat::DigestV1 => Path::new(VERIFIED_DIR).join("digest").join("v1"),
        }
    }
}

impl HubCache {
    /// Where the runtime reading `format` looks for the digest receipt of `location`.
    pub fn runtime_receipt_path(
        &self,
        format: RuntimeReceiptFormat,
        location: &KernelLocation<'_>,
    ) -> PathBuf {
        self.root().join(format.digest_dir()).join(location.key())
    }

    /// Writes the digest receipt of `location` in `format` (atomically,
    /// [`crate::write_atomic`]), unless a file with the same bytes is there.
    /// Only for a variant whose files this process checked in full. Returns
    /// whether a file was written.
    ///
    /// Errors: [`CacheError::BadCommit`] for a revision that is not a full
    /// commit id; [`CacheError::Io`] (or [`CacheError::Escapes`]) when the
    /// folder or file cannot be written.
    pub fn write_runtime_receipt(
        &self,
        format: RuntimeReceiptFormat,
        location: &KernelLocation<'_>,
    ) -> Result<bool, CacheError> {
        if !kernels_types::CommitId::is_canonical(location.revision) {
            return Err(CacheError::BadCommit {
                value: location.revision.to_owned(),
            });
        }
        let path = self.runtime_receipt_path(format, location);
        let bytes = location.contents();
        if fs_err::read(&path).is_ok_and(|old| old == bytes) {
            return Ok(false);
        }
        let dir = path.parent().unwrap_or(self.root());
        fsx::create_dir_inside(self.root(), dir)?;
        crate::write_atomic(&path, &bytes)?;
        Ok(true)
    }

    /// The runtime receipts (digest and signature, format v1) whose variant
    /// directory is in neither the `kernels--` nor the `models--` folder of
    /// its repository: they vouch for files that are gone. A file that is
    /// not a receipt of this format under its own key is not listed.
    pub(crate) fn orphan_runtime_receipts(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for kind in KINDS {
            let dir = self.root().join(VERIFIED_DIR).join(kind).join("v1");
            let Ok(entries) = fs_err::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                if self.receipt_is_orphan(&path) {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Whether `path` is a v1 runtime receipt under its own key whose
    /// variant directory is not in the cache.
    fn receipt_is_orphan(&self, path: &Path) -> bool {
        let is_file = fs_err::symlink_metadata(path).is_ok_and(|m| m.is_file());
        let Some(stored) = is_file
            .then(|| fs_err::read(path).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Stored<LocationIn>>(&bytes).ok())
        else {
            return false;
        };
        let LocationIn {
            kind,
            repo_id,
            revision,
            variant,
        } = stored.location;
        let location = KernelLocation {
            repo_id: &repo_id,
            revision: &revision,
            variant: &variant,
        };
        let own_key = path.file_name().and_then(|n| n.to_str()) == Some(&location.key());
        let (Ok(repo), true) = (repo_id.parse::<kernels_types::RepoId>(), own_key) else {
            return false;
        };
        let plain = |s: &str| !s.is_empty() && !s.contains(['/', '\\']) && s != "." && s != "..";
        if kind != REMOTE_KERNEL || !plain(&revision) || !plain(&variant) {
            return false;
        }
        !["kernel", "model"].iter().any(|repo_type| {
            self.root()
                .join(repo.folder_name(repo_type))
                .join("snapshots")
                .join(&revision)
                .join("build")
                .join(&variant)
                .is_dir()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn relu() -> KernelLocation<'static> {
        KernelLocation {
            repo_id: "kernels-community/relu",
            revision: COMMIT,
            variant: "torch-cpu",
        }
    }

    /// Key and bytes as `kernels` 0.19.1 and 0.18.3 wrote them for this
    /// location (`DigestReceiptStore.store`), checked live by the tests in
    /// `tests/it/runtime_receipts.rs`.
    #[test]
    fn key_and_bytes_are_the_runtime_s() {
        assert_eq!(
            relu().key(),
            "11c50f9838ec6f0136f94cd9337823786da2baaf482edccbb53aa7da78fde252"
        );
        assert_eq!(
            String::from_utf8(relu().contents()).unwrap(),
            format!(
                r#"{{"location":{{"type":"remote_kernel","repo_id":"kernels-community/relu","revision":"{COMMIT}","variant":"torch-cpu"}}}}"#
            )
        );
    }

    #[test]
    fn written_once_and_orphans_found() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let format = RuntimeReceiptFormat::DigestV1;
        assert!(cache.write_runtime_receipt(format, &relu()).unwrap());
        assert!(!cache.write_runtime_receipt(format, &relu()).unwrap());
        let path = cache.runtime_receipt_path(format, &relu());
        assert!(path.starts_with(dir.path().join(".verified-kernels/digest/v1")));
        assert_eq!(fs_err::read(&path).unwrap(), relu().contents());
        // No snapshot: the receipt is an orphan; a foreign file is left alone.
        let foreign = path.with_file_name("notes.txt");
        fs_err::write(&foreign, b"x").unwrap();
        assert_eq!(cache.orphan_runtime_receipts(), std::slice::from_ref(&path));
        let variant_dir = dir
            .path()
            .join("kernels--kernels-community--relu/snapshots")
            .join(COMMIT)
            .join("build/torch-cpu");
        fs_err::create_dir_all(&variant_dir).unwrap();
        assert!(cache.orphan_runtime_receipts().is_empty());
        let bad = KernelLocation {
            revision: "main",
            ..relu()
        };
        assert!(cache.write_runtime_receipt(format, &bad).is_err());
    }
}
