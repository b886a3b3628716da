//! `kernels export`: a software bill of materials (SBOM) of what
//! `kernels.lock` pins, one component per build variant of each locked
//! commit, written as CycloneDX 1.5 JSON ([`cyclonedx`]), SPDX 2.3 JSON
//! ([`spdx`]) or this crate's own JSON document ([`json`]).
//!
//! * [`inventory`] gathers the components: the lock gives repository,
//!   commit and (in the variant-hash format of runtimes 0.1.7–0.16) the
//!   variants with their `git_lfs_concat` hashes; each variant's
//!   `metadata.json` gives license, upstream and source URLs, the builder's
//!   provenance and dirty flags. It is read from the Hub cache first, and
//!   from the Hub only on `--online` or when the cache lacks the commit.
//! * Every format is deterministic: components sorted by repository, commit
//!   and variant; no time stamp unless `SOURCE_DATE_EPOCH` fixes one; the
//!   document's id is a UUID v5 of its own content ([`content_uuid`]), so a
//!   rerun on the same lock and cache writes the same bytes.
//! * The package URL of a component ([`Component::purl`]) is of the purl
//!   specification's `huggingface` type: `pkg:huggingface/<owner>/<name>@<commit>?variant=<variant>`.
//! * Signatures are not checked yet: the signer of every component is
//!   [`SIGNER_UNKNOWN`].

pub mod cyclonedx;
pub mod inventory;
pub mod json;
pub mod license;
pub mod spdx;

use kernels_types::CommitId;
use kernels_types::metadata::Metadata;
use kernels_types::repo_id::RepoId;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::lock::format::LockFormat;

pub use inventory::{ExportError, InventoryOptions, MetadataSource, inventory};

/// What every format says of a component's signer while signature checking
/// is not wired into `kernels export` ([`SIGNER_NOTE`] says why).
pub const SIGNER_UNKNOWN: &str = "unknown";

/// Why the signer is [`SIGNER_UNKNOWN`].
pub const SIGNER_NOTE: &str = "kernels export does not check signatures yet";

/// What a lock pins, ready to be written in any format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inventory {
    /// The lock's format.
    pub lock_format: LockFormat,
    /// SHA-256 of the lock file's bytes, lowercase hex.
    pub lock_sha256: String,
    /// The components, sorted by repository, commit and variant.
    pub components: Vec<Component>,
    /// The fixed creation time (`SOURCE_DATE_EPOCH`, in seconds since the
    /// Unix epoch), when one is given.
    pub created: Option<jiff::Timestamp>,
}

/// One build variant of one locked commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The Hub repository.
    pub repo_id: RepoId,
    /// The locked commit.
    pub commit: CommitId,
    /// The directory name under `build/`.
    pub variant: String,
    /// What `pyproject.toml` asked for, as a 0.17 lock records it
    /// (`version 1`, `revision main`), one per lock entry of this commit;
    /// empty in a variant-hash lock.
    pub requested: Vec<String>,
    /// The variant's `git_lfs_concat` hash from a variant-hash lock:
    /// 64 lowercase hex digits of SHA-256, without the `sha256-` prefix.
    pub variant_hash: Option<String>,
    /// Its `metadata.json`.
    pub metadata: VariantMetadata,
}

/// A variant's `metadata.json` as far as it could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantMetadata {
    /// Read and parsed.
    Read {
        /// Where it was read.
        source: MetadataSource,
        /// Git blob id of the file (40 hex), as the cache's link or the Hub's
        /// listing names it.
        git_blob: Option<String>,
        /// SHA-256 of the file's bytes (64 hex), when they were at hand.
        sha256: Option<String>,
        /// The parsed model.
        metadata: Box<Metadata>,
    },
    /// Neither the cache nor (when asked) the Hub had it.
    Unknown {
        /// Why: `not in the cache`, `the variant has no metadata.json`.
        reason: String,
    },
    /// The file is there, but the model refuses it.
    Invalid {
        /// The problem, naming the field.
        problem: String,
    },
}

impl VariantMetadata {
    /// The parsed model, when read.
    pub fn metadata(&self) -> Option<&Metadata> {
        match self {
            VariantMetadata::Read { metadata, .. } => Some(metadata),
            _ => None,
        }
    }

    /// Whether the build was made from uncommitted sources: `None` when the
    /// metadata has no provenance.
    pub fn dirty(&self) -> Option<bool> {
        self.metadata()
            .and_then(|m| m.provenance.as_ref())
            .map(|p| p.is_dirty())
    }
}

/// Characters a purl qualifier value or name segment percent-encodes
/// (everything but ASCII letters, digits and `.-_~`).
const PURL_ESCAPE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

impl Component {
    /// The package URL: `pkg:huggingface/<owner>/<name>@<commit>?variant=<variant>`
    /// (purl specification, type `huggingface`: the version is the commit in
    /// lowercase).
    pub fn purl(&self) -> String {
        let part = |s: &str| utf8_percent_encode(s, PURL_ESCAPE).to_string();
        format!(
            "pkg:huggingface/{}/{}@{}?variant={}",
            part(self.repo_id.owner()),
            part(self.repo_id.name()),
            self.commit.as_str().to_ascii_lowercase(),
            part(&self.variant)
        )
    }
}

/// A UUID v5 (RFC 9562, SHA-1 name-based, URL namespace) of `content`,
/// prefixed by the format's name: the same document content always gets the
/// same id, and two different documents (another lock, another cache state)
/// get different ones.
pub fn content_uuid(format: &str, content: &[u8]) -> uuid::Uuid {
    let mut name = format!("kernels-export:{format}:").into_bytes();
    name.extend_from_slice(content);
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, &name)
}

/// Inventories the format tests write.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// An inventory of one variant whose `metadata.json` is `text`.
    pub(crate) fn inventory_with(text: &str) -> Inventory {
        Inventory {
            lock_format: LockFormat::KernelLocks,
            lock_sha256: "0".repeat(64),
            components: vec![Component {
                repo_id: "acme/relu".parse().unwrap(),
                commit: "0123456789abcdef0123456789abcdef01234567".parse().unwrap(),
                variant: "torch-cuda".into(),
                requested: vec!["version 1".into()],
                variant_hash: None,
                metadata: VariantMetadata::Read {
                    source: MetadataSource::Cache,
                    git_blob: None,
                    sha256: None,
                    metadata: Box::new(text.parse().unwrap()),
                },
            }],
            created: None,
        }
    }

    pub(crate) const DIRTY: &str = r#"{"version": 1, "python-depends": [], "license": "llama2",
        "upstream": "https://github.com/acme/relu.git",
        "provenance": {
            "kernel-builder": {"version": "0.17.0-dev0",
                "commit": "89abcdef0123456789abcdef0123456789abcdef", "dirty": true},
            "kernel": {"commit": "fedcba9876543210fedcba9876543210fedcba98", "dirty": false}}}"#;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(variant: &str) -> Component {
        Component {
            repo_id: "kernels-community/relu".parse().unwrap(),
            commit: "d649efb5a1b2c3d4e5f60718293a4b5c6d7e8f90".parse().unwrap(),
            variant: variant.to_owned(),
            requested: Vec::new(),
            variant_hash: None,
            metadata: VariantMetadata::Unknown {
                reason: "not in the cache".into(),
            },
        }
    }

    #[test]
    fn purl_is_of_the_huggingface_type_with_a_variant_qualifier() {
        assert_eq!(
            component("torch28-cxx11-cu126-x86_64-linux").purl(),
            "pkg:huggingface/kernels-community/relu@d649efb5a1b2c3d4e5f60718293a4b5c6d7e8f90?variant=torch28-cxx11-cu126-x86_64-linux"
        );
        assert!(
            component("torch+odd")
                .purl()
                .ends_with("?variant=torch%2Bodd")
        );
    }

    #[test]
    fn content_uuid_is_stable_and_content_dependent() {
        let a = content_uuid("cyclonedx", b"lock");
        assert_eq!(a, content_uuid("cyclonedx", b"lock"));
        assert_ne!(a, content_uuid("cyclonedx", b"lock2"));
        assert_ne!(a, content_uuid("spdx", b"lock"));
        assert_eq!(a.get_version_num(), 5);
    }
}
