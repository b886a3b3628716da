//! The `metadata.json` of one build variant (`build/<variant>/metadata.json`),
//! as kernel-builder writes it: one model ([`Metadata`]), one parser
//! ([`Metadata::from_slice`]) and one error type ([`MetadataError`]), used by
//! `kernels lock` (the `kernel-depends` walk of 0.17 profiles) and `kernels
//! to-wheel` (`Requires-Dist`, `License`, `Project-URL`).
//!
//! Fields by builder era (reference `kernels-data` `metadata.rs`, the builder's
//! `kernel-requirements.md` "Kernel metadata", and the Hub):
//!
//! * every era: `version` (the kernel's major version) and `python-depends`;
//! * later: `license`, `backend {type, archs}`;
//! * current: `name`, `id`, `upstream`, `source`, `kernel-depends`,
//!   `python-depends-backends`, `digest {algorithm, files}`, `provenance`,
//!   `kernels-minver`.
//!
//! The rules:
//!
//! * **Lenient to older and newer builders.** Every field is optional (old
//!   builders wrote only `version` and `python-depends`), `null` counts as
//!   absent (but for `name`, `id`, `version`, `license` and `backend`, whose
//!   `null` 0.16.2 to 0.19.1 refuse, and for the lists `python-depends` and `kernel-depends`: `null`
//!   there is malformed, as 0.16.2, 0.17.2 and 0.19.1 refuse it in
//!   `python-depends` and 0.17.2 and 0.19.1 in `kernel-depends`), and keys this version does not know are ignored — at the top
//!   level they are listed in [`Metadata::unknown_fields`], inside known
//!   objects they are dropped. A backend type or digest algorithm this version
//!   does not know is kept by name ([`BackendType::Other`],
//!   [`DigestAlgorithm::Other`]): a newer builder never makes a kernel
//!   unreadable.
//! * **Strict where a known field is malformed.** A known field of the wrong
//!   JSON type or with a bad value (a `kernel-depends` entry with both
//!   `version` and `revision`, a digest that is not base64 of the algorithm's
//!   length, a provenance commit that is not a commit id, a `kernels-minver`
//!   that is not `X.Y.Z`) is a [`MetadataError::Field`] naming the field, as
//!   the 0.17 runtime refuses such a file. A runtime before 0.17 does not
//!   parse `kernels-minver` with the rest ([`Metadata::from_slice_for`],
//!   [`LegacyVersion`]).
//!
//! Nothing here checks whether a variant *fits* (archs, `kernels-minver`,
//! `python-depends` allow-lists) or whether its files match the digest: the
//! model only makes those fields typed.
//!
//! ```
//! use kernels_types::metadata::{BackendType, DependencyVersion, Metadata};
//! let text = r#"{"name": "relu", "version": 1, "python-depends": [],
//!     "backend": {"type": "cuda", "archs": ["8.0", "9.0a"]},
//!     "kernel-depends": [{"repo-id": "kernels-community/einops", "version": 1}],
//!     "built-by": "a newer builder"}"#;
//! let metadata: Metadata = text.parse().unwrap();
//! assert_eq!(metadata.backend.unwrap().kind, BackendType::Cuda);
//! assert_eq!(metadata.kernel_depends[0].version, DependencyVersion::Version(1));
//! assert_eq!(metadata.unknown_fields, ["built-by"]);
//! let err = r#"{"version": "1"}"#.parse::<Metadata>().unwrap_err();
//! assert_eq!(err.to_string(), "`version` is not a non-negative integer");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::commit::CommitId;
use crate::repo_id::RepoId;

/// The top-level keys this version reads; any other key is listed in
/// [`Metadata::unknown_fields`].
pub const KNOWN_FIELDS: &[&str] = &[
    "name",
    "id",
    "version",
    "license",
    "upstream",
    "source",
    "python-depends",
    "python-depends-backends",
    "kernel-depends",
    "backend",
    "digest",
    "provenance",
    "kernels-minver",
];

/// One variant's `metadata.json`, parsed and checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    /// `name`: the kernel name, `^[a-z][-a-z0-9]*[a-z0-9]$` (its module name
    /// with `-` as `_`).
    pub name: Option<String>,
    /// `id`: the unique identifier of the build, also its Python module name
    /// (`_relu_cuda_9134a00`).
    pub id: Option<String>,
    /// `version`: the kernel's major version (branch `v<version>`).
    pub version: Option<u64>,
    /// `license`: a Hub license identifier (`apache-2.0`, `MIT`).
    pub license: Option<String>,
    /// `upstream`: git URL of the repository the kernel's code comes from.
    pub upstream: Option<String>,
    /// `source`: git URL of the kernel-builder source repository.
    pub source: Option<String>,
    /// `python-depends`: dependency keys of the runtime's curated table
    /// (`einops`, `tvm-ffi`); empty when absent.
    pub python_depends: Vec<String>,
    /// `python-depends-backends`: backend type → dependency keys needed only
    /// on that backend; empty when absent.
    pub python_depends_backends: BTreeMap<BackendType, Vec<String>>,
    /// `kernel-depends`: other Hub kernels this one needs (0.17); empty when
    /// absent.
    pub kernel_depends: Vec<KernelDependency>,
    /// `backend`: the compute backend of this variant.
    pub backend: Option<BackendInfo>,
    /// `digest`: per-file digests of the variant directory.
    pub digest: Option<VariantDigest>,
    /// `provenance`: the git state of the builder and of the kernel source.
    pub provenance: Option<Provenance>,
    /// `kernels-minver`: the oldest `kernels` runtime that may load the variant.
    pub kernels_minver: Option<KernelsVersion>,
    /// `kernels-minver` as written, when it is a string: what a runtime
    /// before 0.17 reads ([`LegacyVersion`]; 0.16.2 `minver.py`), also when
    /// [`Metadata::from_slice_for`] let through a value `X.Y.Z` refuses.
    pub kernels_minver_text: Option<String>,
    /// Top-level keys not in [`KNOWN_FIELDS`], in file order; ignored.
    pub unknown_fields: Vec<String>,
}

/// Why a `metadata.json` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum MetadataError {
    /// The text is not JSON.
    #[error("invalid JSON: {0}")]
    #[diagnostic(code(kernels::metadata::syntax))]
    Syntax(String),
    /// The JSON is not an object.
    #[error("the document is not a JSON object")]
    #[diagnostic(code(kernels::metadata::not_an_object))]
    NotAnObject,
    /// A known field has the wrong type or a bad value.
    #[error("`{field}` {problem}")]
    #[diagnostic(code(kernels::metadata::field))]
    Field {
        /// The field's path: `version`, `kernel-depends[1].revision`,
        /// `digest.files."_ops.py"`.
        field: String,
        /// What is wrong, as a predicate: `is not a list of strings`.
        problem: String,
    },
}

impl MetadataError {
    /// A [`MetadataError::Field`].
    pub fn field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        MetadataError::Field {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The field the error is about, if it is about one.
    pub fn field_name(&self) -> Option<&str> {
        match self {
            MetadataError::Field { field, .. } => Some(field),
            MetadataError::Syntax(_) | MetadataError::NotAnObject => None,
        }
    }
}

/// A backend type (`backend.type`, keys of `python-depends-backends`). Sorts
/// by name for the known types; [`BackendType::Other`] sorts last.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BackendType {
    /// `cann`: Huawei Ascend.
    Cann,
    /// `cpu`.
    Cpu,
    /// `cuda`.
    Cuda,
    /// `metal`: Apple Metal.
    Metal,
    /// `neuron`: AWS Neuron.
    Neuron,
    /// `rocm`.
    Rocm,
    /// `tpu`.
    Tpu,
    /// `xpu`: Intel oneAPI.
    Xpu,
    /// A type this version does not know (a newer builder's), as written.
    Other(String),
}

impl BackendType {
    /// The type a name spells; never fails.
    pub fn parse(name: &str) -> Self {
        match name {
            "cann" => BackendType::Cann,
            "cpu" => BackendType::Cpu,
            "cuda" => BackendType::Cuda,
            "metal" => BackendType::Metal,
            "neuron" => BackendType::Neuron,
            "rocm" => BackendType::Rocm,
            "tpu" => BackendType::Tpu,
            "xpu" => BackendType::Xpu,
            other => BackendType::Other(other.to_owned()),
        }
    }

    /// The name as `metadata.json` writes it (the same as
    /// [`crate::variant_name::Backend::family`]).
    pub fn as_str(&self) -> &str {
        match self {
            BackendType::Cann => "cann",
            BackendType::Cpu => "cpu",
            BackendType::Cuda => "cuda",
            BackendType::Metal => "metal",
            BackendType::Neuron => "neuron",
            BackendType::Rocm => "rocm",
            BackendType::Tpu => "tpu",
            BackendType::Xpu => "xpu",
            BackendType::Other(name) => name,
        }
    }
}

impl fmt::Display for BackendType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `backend`: what the variant runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// `backend.type` (required when `backend` is present).
    pub kind: BackendType,
    /// `backend.archs`: CUDA capabilities (`8.0`, `9.0a`, `9.0+PTX`) or ROCm
    /// targets (`gfx90a`) the build supports, as written; empty when absent.
    pub archs: Vec<String>,
}

/// A `kernel-depends` entry: `{"repo-id", "version": N}` or `{"repo-id",
/// "revision": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelDependency {
    /// `repo-id`.
    pub repo_id: RepoId,
    /// `version` or `revision`.
    pub version: DependencyVersion,
}

/// What a `kernel-depends` entry asks for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DependencyVersion {
    /// `version`: the major version N (branch `vN`).
    Version(u64),
    /// `revision`: a branch, tag or commit.
    Revision(String),
}

/// `digest`: the digest of every file of the variant directory except the
/// top-level `metadata.json` and `metadata.json.sigstore` (reference
/// `Digest::hash_variant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantDigest {
    /// `digest.algorithm`.
    pub algorithm: DigestAlgorithm,
    /// `digest.files`: path relative to the variant directory (`/`-separated,
    /// checked by [`crate::repo_path::check`]) → digest of the content.
    pub files: BTreeMap<String, FileDigest>,
}

/// `digest.algorithm`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DigestAlgorithm {
    /// `sha256`: 32-byte digests.
    Sha256,
    /// `sha512`: 64-byte digests.
    Sha512,
    /// An algorithm this version does not know, as written; its digests are
    /// base64 of any length.
    Other(String),
}

impl DigestAlgorithm {
    /// The name as `metadata.json` writes it.
    pub fn as_str(&self) -> &str {
        match self {
            DigestAlgorithm::Sha256 => "sha256",
            DigestAlgorithm::Sha512 => "sha512",
            DigestAlgorithm::Other(name) => name,
        }
    }

    /// Digest length in bytes, for the algorithms this version knows.
    pub fn digest_len(&self) -> Option<usize> {
        match self {
            DigestAlgorithm::Sha256 => Some(32),
            DigestAlgorithm::Sha512 => Some(64),
            DigestAlgorithm::Other(_) => None,
        }
    }
}

impl fmt::Display for DigestAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file's digest, decoded from standard base64 with padding (the form
/// the builder writes and [`fmt::Display`] gives back).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileDigest(Vec<u8>);

impl FileDigest {
    /// The raw digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for FileDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&STANDARD.encode(&self.0))
    }
}

/// `provenance`: where the build came from. A dirty part means the build was
/// made from uncommitted sources and cannot be reproduced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// `provenance.kernel-builder`.
    pub kernel_builder: Option<BuilderProvenance>,
    /// `provenance.kernel`: the kernel source tree.
    pub kernel: Option<GitState>,
}

impl Provenance {
    /// Whether the builder or the kernel source was dirty.
    pub fn is_dirty(&self) -> bool {
        self.kernel_builder
            .as_ref()
            .and_then(|b| b.git.as_ref())
            .is_some_and(|g| g.dirty)
            || self.kernel.as_ref().is_some_and(|k| k.dirty)
    }
}

/// `provenance.kernel-builder`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuilderProvenance {
    /// `version` of kernel-builder (`0.17.0-dev0`).
    pub version: String,
    /// `commit` (or the older `sha`) with `dirty`, when the builder knew its
    /// source; the two come together or not at all.
    pub git: Option<GitState>,
}

/// The state of a git working tree: `{"commit" (or "sha"), "dirty"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitState {
    /// The `HEAD` commit.
    pub commit: CommitId,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
}

/// `kernels-minver`: a `kernels` release, exactly `X.Y.Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelsVersion {
    /// `X`.
    pub major: u64,
    /// `Y`.
    pub minor: u64,
    /// `Z`.
    pub patch: u64,
}

impl fmt::Display for KernelsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl FromStr for KernelsVersion {
    type Err = MetadataError;

    /// Parses `X.Y.Z` (three decimal components, nothing else).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || MetadataError::field("kernels-minver", "is not a version `X.Y.Z`");
        let mut parts = s.split('.').map(|part| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u64>().ok())
                .flatten()
        });
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Ok(KernelsVersion {
                major,
                minor,
                patch,
            }),
            _ => Err(bad()),
        }
    }
}

/// A `kernels-minver` as a runtime before 0.17 reads it (0.16.2 `minver.py`
/// with `kernels_data`'s `Version`): surrounding whitespace trimmed, dot-separated
/// decimal numbers of any count (`0.17`, `0.17.0.1`; a leading `+` allowed),
/// trailing zero components dropped, compared component by component. Any
/// other text (`v0.17`, `0.17.0rc1`, ``) is not a version, and that runtime
/// ignores it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LegacyVersion(Vec<u64>);

impl LegacyVersion {
    /// Parses `text` as 0.16.2 does; `None` where it gives up.
    pub fn parse(text: &str) -> Option<LegacyVersion> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let mut parts = text
            .split('.')
            .map(|part| part.parse::<u64>().ok())
            .collect::<Option<Vec<u64>>>()?;
        while parts.last() == Some(&0) {
            parts.pop();
        }
        Some(LegacyVersion(parts))
    }
}

impl From<KernelsVersion> for LegacyVersion {
    fn from(v: KernelsVersion) -> Self {
        LegacyVersion::parse(&v.to_string()).unwrap_or(LegacyVersion(Vec::new()))
    }
}

impl fmt::Display for LegacyVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        match parts.is_empty() {
            true => f.write_str("0"),
            false => f.write_str(&parts.join(".")),
        }
    }
}

/// The first runtime whose metadata parser requires `kernels-minver` to be
/// exactly `X.Y.Z` (0.17.2 `kernels-data`); before it the value is read only
/// for a warning ([`LegacyVersion`]).
pub const STRICT_MINVER_FROM: KernelsVersion = KernelsVersion {
    major: 0,
    minor: 17,
    patch: 0,
};

impl Metadata {
    /// Parses the bytes of a `metadata.json`.
    ///
    /// # Errors
    /// [`MetadataError::Syntax`] for text that is not JSON,
    /// [`MetadataError::NotAnObject`] for JSON that is not an object, and
    /// [`MetadataError::Field`] for a known field of the wrong type or with a
    /// bad value (see the module docs).
    pub fn from_slice(bytes: &[u8]) -> Result<Self, MetadataError> {
        Metadata::parse(bytes, false)
    }

    /// [`Metadata::from_slice`] as the target runtime `runtime` parses it:
    /// before [`STRICT_MINVER_FROM`] a `kernels-minver` that is not `X.Y.Z`
    /// (or not a string) is no error, as 0.16.2 reads it only for a warning
    /// (kept in [`Metadata::kernels_minver_text`]); `None` or a later
    /// runtime parses as [`Metadata::from_slice`].
    ///
    /// # Errors
    /// As [`Metadata::from_slice`].
    pub fn from_slice_for(
        bytes: &[u8],
        runtime: Option<KernelsVersion>,
    ) -> Result<Self, MetadataError> {
        Metadata::parse(bytes, runtime.is_some_and(|r| r < STRICT_MINVER_FROM))
    }

    fn parse(bytes: &[u8], lenient_minver: bool) -> Result<Self, MetadataError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|err| MetadataError::Syntax(err.to_string()))?;
        let Value::Object(mut map) = value else {
            return Err(MetadataError::NotAnObject);
        };
        let unknown_fields = map
            .keys()
            .filter(|key| !KNOWN_FIELDS.contains(&key.as_str()))
            .cloned()
            .collect();
        // `null` where the runtime needs a value: 0.16.2 to 0.19.1 refuse it.
        for key in REQUIRED_NOT_NULL {
            if map.get(*key).is_some_and(Value::is_null) {
                return Err(MetadataError::field(
                    *key,
                    "is `null`; the runtime needs a value there",
                ));
            }
        }
        let minver = take(&mut map, "kernels-minver");
        let kernels_minver_text = minver.as_ref().and_then(Value::as_str).map(str::to_owned);
        let kernels_minver = match minver {
            Some(v) if lenient_minver => v.as_str().and_then(|s| s.parse().ok()),
            Some(v) => Some(string(v, "kernels-minver")?.parse()?),
            None => None,
        };
        Ok(Metadata {
            name: take(&mut map, "name").map(kernel_name).transpose()?,
            id: take(&mut map, "id").map(|v| string(v, "id")).transpose()?,
            version: take(&mut map, "version")
                .map(|v| integer(v, "version"))
                .transpose()?,
            license: take(&mut map, "license")
                .map(|v| string(v, "license"))
                .transpose()?,
            upstream: take(&mut map, "upstream")
                .map(|v| string(v, "upstream"))
                .transpose()?,
            source: take(&mut map, "source")
                .map(|v| string(v, "source"))
                .transpose()?,
            // `null` is no list: every runtime (0.16.2 to 0.19.1) refuses it.
            python_depends: map
                .remove("python-depends")
                .map(|v| strings(v, "python-depends"))
                .transpose()?
                .unwrap_or_default(),
            python_depends_backends: take(&mut map, "python-depends-backends")
                .map(backend_depends)
                .transpose()?
                .unwrap_or_default(),
            kernel_depends: map
                .remove("kernel-depends")
                .map(kernel_depends)
                .transpose()?
                .unwrap_or_default(),
            backend: take(&mut map, "backend").map(backend).transpose()?,
            digest: take(&mut map, "digest").map(digest).transpose()?,
            provenance: take(&mut map, "provenance").map(provenance).transpose()?,
            kernels_minver,
            kernels_minver_text,
            unknown_fields,
        })
    }
}

impl FromStr for Metadata {
    type Err = MetadataError;

    /// [`Metadata::from_slice`] of the text.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metadata::from_slice(s.as_bytes())
    }
}

fn string(value: Value, field: &str) -> Result<String, MetadataError> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(MetadataError::field(field, "is not a string")),
    }
}

fn integer(value: Value, field: &str) -> Result<u64, MetadataError> {
    value
        .as_u64()
        .ok_or_else(|| MetadataError::field(field, "is not a non-negative integer"))
}

fn boolean(value: Value, field: &str) -> Result<bool, MetadataError> {
    value
        .as_bool()
        .ok_or_else(|| MetadataError::field(field, "is not `true` or `false`"))
}

fn strings(value: Value, field: &str) -> Result<Vec<String>, MetadataError> {
    let not = || MetadataError::field(field, "is not a list of strings");
    let Value::Array(items) = value else {
        return Err(not());
    };
    items
        .into_iter()
        .map(|item| match item {
            Value::String(s) => Ok(s),
            _ => Err(not()),
        })
        .collect()
}

fn object(value: Value, field: &str) -> Result<Map<String, Value>, MetadataError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(MetadataError::field(field, "is not an object")),
    }
}

/// The keys whose `null` every runtime (0.16.2 to 0.19.1) refuses (their
/// absence is left to [`Metadata`]'s leniency towards older builders).
const REQUIRED_NOT_NULL: &[&str] = &["name", "id", "version", "license", "backend"];

/// Removes `key` from `map`; `null` counts as absent.
fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.remove(key).filter(|v| !v.is_null())
}

/// `name`, checked against the builder's rule `^[a-z][-a-z0-9]*[a-z0-9]$`.
fn kernel_name(value: Value) -> Result<String, MetadataError> {
    let name = string(value, "name")?;
    let bytes = name.as_bytes();
    let valid = bytes.len() >= 2
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1] != b'-'
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if valid {
        Ok(name)
    } else {
        Err(MetadataError::field(
            "name",
            format!(
                "`{name}` is not a kernel name: lowercase letters, digits and `-`, starting with a letter, not ending with `-`"
            ),
        ))
    }
}

fn backend_depends(value: Value) -> Result<BTreeMap<BackendType, Vec<String>>, MetadataError> {
    object(value, "python-depends-backends")?
        .into_iter()
        .filter(|(_, keys)| !keys.is_null())
        .map(|(backend, keys)| {
            let keys = strings(keys, &format!("python-depends-backends.{backend}"))?;
            Ok((BackendType::parse(&backend), keys))
        })
        .collect()
}

fn kernel_depends(value: Value) -> Result<Vec<KernelDependency>, MetadataError> {
    let Value::Array(items) = value else {
        return Err(MetadataError::field("kernel-depends", "is not a list"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| kernel_dependency(item, &format!("kernel-depends[{i}]")))
        .collect()
}

fn kernel_dependency(value: Value, field: &str) -> Result<KernelDependency, MetadataError> {
    let mut map = object(value, field)?;
    let repo_field = format!("{field}.repo-id");
    let repo_id = take(&mut map, "repo-id")
        .ok_or_else(|| MetadataError::field(&repo_field, "is missing"))
        .and_then(|v| string(v, &repo_field))?;
    let repo_id = repo_id
        .parse::<RepoId>()
        .map_err(|err| MetadataError::field(&repo_field, format!("is invalid: {err}")))?;
    let version = match (take(&mut map, "version"), take(&mut map, "revision")) {
        (Some(n), None) => DependencyVersion::Version(integer(n, &format!("{field}.version"))?),
        (None, Some(r)) => {
            let revision_field = format!("{field}.revision");
            let revision = string(r, &revision_field)?;
            if revision.is_empty() {
                return Err(MetadataError::field(revision_field, "is empty"));
            }
            DependencyVersion::Revision(revision)
        }
        _ => {
            return Err(MetadataError::field(
                field,
                format!("(`{repo_id}`) needs exactly one of `version` and `revision`"),
            ));
        }
    };
    Ok(KernelDependency { repo_id, version })
}

fn backend(value: Value) -> Result<BackendInfo, MetadataError> {
    let mut map = object(value, "backend")?;
    let kind = take(&mut map, "type")
        .ok_or_else(|| MetadataError::field("backend.type", "is missing"))
        .and_then(|v| string(v, "backend.type"))?;
    Ok(BackendInfo {
        kind: BackendType::parse(&kind),
        archs: take(&mut map, "archs")
            .map(|v| strings(v, "backend.archs"))
            .transpose()?
            .unwrap_or_default(),
    })
}

fn digest(value: Value) -> Result<VariantDigest, MetadataError> {
    let mut map = object(value, "digest")?;
    let algorithm = match take(&mut map, "algorithm")
        .ok_or_else(|| MetadataError::field("digest.algorithm", "is missing"))
        .and_then(|v| string(v, "digest.algorithm"))?
        .as_str()
    {
        "sha256" => DigestAlgorithm::Sha256,
        "sha512" => DigestAlgorithm::Sha512,
        other => DigestAlgorithm::Other(other.to_owned()),
    };
    let files = take(&mut map, "files")
        .ok_or_else(|| MetadataError::field("digest.files", "is missing"))
        .and_then(|v| object(v, "digest.files"))?;
    let files = files
        .into_iter()
        .map(|(path, value)| {
            let field = format!("digest.files.{path:?}");
            crate::repo_path::check(&path).map_err(|err| {
                MetadataError::field(&field, format!("is not a relative file path: {err}"))
            })?;
            let digest = file_digest(string(value, &field)?, &algorithm, &field)?;
            Ok((path, digest))
        })
        .collect::<Result<_, MetadataError>>()?;
    Ok(VariantDigest { algorithm, files })
}

fn file_digest(
    text: String,
    algorithm: &DigestAlgorithm,
    field: &str,
) -> Result<FileDigest, MetadataError> {
    let bytes = STANDARD
        .decode(text.as_bytes())
        .map_err(|_| MetadataError::field(field, format!("`{text}` is not standard base64")))?;
    match algorithm.digest_len() {
        Some(len) if bytes.len() != len => Err(MetadataError::field(
            field,
            format!(
                "is {} bytes long, not the {len} of a {algorithm} digest",
                bytes.len()
            ),
        )),
        _ => Ok(FileDigest(bytes)),
    }
}

fn provenance(value: Value) -> Result<Provenance, MetadataError> {
    let mut map = object(value, "provenance")?;
    let kernel_builder = take(&mut map, "kernel-builder")
        .map(|v| {
            let field = "provenance.kernel-builder";
            let mut builder = object(v, field)?;
            let version = take(&mut builder, "version")
                .ok_or_else(|| MetadataError::field(format!("{field}.version"), "is missing"))
                .and_then(|v| string(v, &format!("{field}.version")))?;
            let git = git_state(builder, field, true)?;
            Ok(BuilderProvenance { version, git })
        })
        .transpose()?;
    let kernel = take(&mut map, "kernel")
        .map(|v| {
            let field = "provenance.kernel";
            git_state(object(v, field)?, field, false)?
                .ok_or_else(|| MetadataError::field(field, "needs `commit` and `dirty`"))
        })
        .transpose()?;
    Ok(Provenance {
        kernel_builder,
        kernel,
    })
}

/// `commit` (or the older `sha`) and `dirty` of `map`; with `optional`, both
/// may be absent (`None`), but never only one of them.
fn git_state(
    mut map: Map<String, Value>,
    field: &str,
    optional: bool,
) -> Result<Option<GitState>, MetadataError> {
    let commit = take(&mut map, "commit").or_else(|| take(&mut map, "sha"));
    let dirty = take(&mut map, "dirty");
    match (commit, dirty) {
        (None, None) if optional => Ok(None),
        (Some(commit), Some(dirty)) => {
            let commit_field = format!("{field}.commit");
            let commit = string(commit, &commit_field)?
                .parse::<CommitId>()
                .map_err(|err| MetadataError::field(&commit_field, format!("is invalid: {err}")))?;
            let dirty = boolean(dirty, &format!("{field}.dirty"))?;
            Ok(Some(GitState { commit, dirty }))
        }
        _ => Err(MetadataError::field(
            field,
            "needs `commit` and `dirty` together",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oldest builders' file (rotary e363fa0c, deep-gemm efc5faa2).
    const OLDEST: &str = r#"{
  "version": 1,
  "python-depends": []
}"#;

    /// A current builder's file (the bundled mirror's relu d649efb5).
    const CURRENT: &str = r#"{
  "name": "relu",
  "id": "_relu_cuda_9134a00",
  "version": 1,
  "license": "apache-2.0",
  "python-depends": [],
  "backend": {
    "type": "cuda"
  },
  "kernel-depends": [],
  "digest": {
    "algorithm": "sha256",
    "files": {
      "__init__.py": "r3Dnnpwzkpy28YkYaXmv4wtnK7c9R+MHzNAlAZ1021c=",
      "_ops.py": "nxN61LaUYABMVarI+FjARCDw/QwWf6JpfQGx/hH0ltI=",
      "layers/__init__.py": "f0t+Uni3gby08xtoZnV7ZJ0pNGrgKFtYpv4bensJSbw="
    }
  }
}"#;

    /// The reference's sample with the older `sha` provenance keys.
    const LEGACY_SHA_PROVENANCE: &str = r#"{
  "name": "einops",
  "id": "_einops_cpu_d45adda",
  "version": 1,
  "license": "MIT",
  "upstream": "https://github.com/arogozhnikov/einops.git",
  "python-depends": [],
  "backend": {"type": "cpu"},
  "digest": {"algorithm": "sha256", "files": {"__init__.py": "Zi5UF5cdv0EjT90oh0zsv0Jfi4QbTrfZnE0Tv5on8F8="}},
  "provenance": {
    "kernel-builder": {"version": "0.17.0-dev0", "sha": "d0610aa58db33b142c86b59598a2a1c730f52996", "dirty": false},
    "kernel": {"sha": "d45addadb0c380f3d7cc2813310b3bcd75f8aa9a", "dirty": false}
  }
}"#;

    fn parse(text: &str) -> Metadata {
        text.parse().unwrap_or_else(|err| panic!("{err}: {text}"))
    }

    fn error(text: &str) -> String {
        text.parse::<Metadata>().unwrap_err().to_string()
    }

    /// `CURRENT` with `field` set to `value` (JSON).
    fn current_with(field: &str, value: &str) -> String {
        let mut doc: Value = serde_json::from_str(CURRENT).unwrap();
        doc[field] = serde_json::from_str(value).unwrap();
        doc.to_string()
    }

    #[test]
    fn oldest_builders_file_reads_with_defaults() {
        let metadata = parse(OLDEST);
        assert_eq!(metadata.version, Some(1));
        assert!(metadata.python_depends.is_empty());
        assert!(metadata.kernel_depends.is_empty());
        assert_eq!(metadata.backend, None);
        assert_eq!(metadata.digest, None);
        assert!(metadata.unknown_fields.is_empty());
        assert_eq!(parse("{}"), Metadata::default());
    }

    #[test]
    fn current_builders_file_is_typed() {
        let metadata = parse(CURRENT);
        assert_eq!(metadata.name.as_deref(), Some("relu"));
        assert_eq!(metadata.id.as_deref(), Some("_relu_cuda_9134a00"));
        assert_eq!(metadata.license.as_deref(), Some("apache-2.0"));
        let backend = metadata.backend.unwrap();
        assert_eq!(backend.kind, BackendType::Cuda);
        assert!(backend.archs.is_empty());
        let digest = metadata.digest.unwrap();
        assert_eq!(digest.algorithm, DigestAlgorithm::Sha256);
        assert_eq!(digest.files.len(), 3);
        let ops = &digest.files["_ops.py"];
        assert_eq!(ops.as_bytes().len(), 32);
        assert_eq!(
            ops.to_string(),
            "nxN61LaUYABMVarI+FjARCDw/QwWf6JpfQGx/hH0ltI="
        );
    }

    #[test]
    fn every_current_field() {
        let text = r#"{
  "name": "mykernel", "id": "_mykernel_cuda_7a4e5a7", "version": 2, "license": "Apache-2.0",
  "upstream": "https://github.com/a/b.git", "source": "git@github.com:c/d.git",
  "python-depends": ["einops"],
  "python-depends-backends": {"xpu": ["onednn"], "cuda": ["nvidia-cutlass-dsl"]},
  "kernel-depends": [
    {"repo-id": "kernels-community/einops", "version": 1},
    {"repo-id": "kernels-test/other", "revision": "main"}
  ],
  "backend": {"type": "cuda", "archs": ["7.0", "9.0+PTX"]},
  "digest": {"algorithm": "sha512", "files": {"a.so": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="}},
  "provenance": {
    "kernel-builder": {"version": "0.17.1", "commit": "D0610AA58DB33B142C86B59598A2A1C730F52996", "dirty": true},
    "kernel": {"commit": "d45addadb0c380f3d7cc2813310b3bcd75f8aa9a", "dirty": false}
  },
  "kernels-minver": "0.17.2"
}"#;
        let metadata = parse(text);
        assert_eq!(metadata.version, Some(2));
        assert_eq!(
            metadata.upstream.as_deref(),
            Some("https://github.com/a/b.git")
        );
        assert_eq!(metadata.source.as_deref(), Some("git@github.com:c/d.git"));
        assert_eq!(metadata.python_depends, ["einops"]);
        let backends: Vec<_> = metadata.python_depends_backends.keys().collect();
        assert_eq!(backends, [&BackendType::Cuda, &BackendType::Xpu]);
        assert_eq!(
            metadata.kernel_depends,
            [
                KernelDependency {
                    repo_id: "kernels-community/einops".parse().unwrap(),
                    version: DependencyVersion::Version(1),
                },
                KernelDependency {
                    repo_id: "kernels-test/other".parse().unwrap(),
                    version: DependencyVersion::Revision("main".to_owned()),
                },
            ]
        );
        assert_eq!(metadata.backend.unwrap().archs, ["7.0", "9.0+PTX"]);
        let digest = metadata.digest.unwrap();
        assert_eq!(digest.algorithm, DigestAlgorithm::Sha512);
        assert_eq!(digest.files["a.so"].as_bytes(), [0u8; 64]);
        let provenance = metadata.provenance.unwrap();
        assert!(provenance.is_dirty());
        let builder = provenance.kernel_builder.unwrap();
        assert_eq!(builder.version, "0.17.1");
        assert_eq!(
            builder.git.unwrap().commit.as_str(),
            "d0610aa58db33b142c86b59598a2a1c730f52996"
        );
        assert_eq!(
            metadata.kernels_minver,
            Some(KernelsVersion {
                major: 0,
                minor: 17,
                patch: 2
            })
        );
        assert_eq!(metadata.kernels_minver.unwrap().to_string(), "0.17.2");
    }

    #[test]
    fn legacy_sha_provenance_reads_as_commit() {
        let provenance = parse(LEGACY_SHA_PROVENANCE).provenance.unwrap();
        assert!(!provenance.is_dirty());
        assert_eq!(
            provenance.kernel.unwrap().commit.as_str(),
            "d45addadb0c380f3d7cc2813310b3bcd75f8aa9a"
        );
        let builder = r#"{"provenance": {"kernel-builder": {"version": "0.1.0"}}}"#;
        let provenance = parse(builder).provenance.unwrap();
        assert_eq!(provenance.kernel_builder.unwrap().git, None);
        assert_eq!(provenance.kernel, None);
    }

    #[test]
    fn newer_builders_unknown_keys_and_names_are_kept_or_ignored() {
        let mut doc: Value = serde_json::from_str(LEGACY_SHA_PROVENANCE).unwrap();
        doc["zz-future"] = serde_json::json!({"nested": [1, 2]});
        doc["build-host"] = serde_json::json!("ci-runner-7");
        doc["backend"] = serde_json::json!({"type": "vulkan", "archs": [], "extra": 1});
        doc["provenance"]["kernel"]["future"] = serde_json::json!(true);
        doc["digest"]["algorithm"] = serde_json::json!("blake3");
        doc["kernel-depends"] =
            serde_json::json!([{"repo-id": "a/b", "version": 1, "optional": true}]);
        let metadata = parse(&doc.to_string());
        assert_eq!(metadata.unknown_fields, ["zz-future", "build-host"]);
        assert_eq!(
            metadata.backend.unwrap().kind,
            BackendType::Other("vulkan".to_owned())
        );
        assert_eq!(
            metadata.digest.unwrap().algorithm,
            DigestAlgorithm::Other("blake3".to_owned())
        );
        assert_eq!(metadata.kernel_depends.len(), 1);
    }

    #[test]
    fn null_is_absent() {
        // Only where the runtimes take `null` for absent (optional fields);
        // `license` and `backend` are `null_where_the_runtime_needs_a_value`.
        let text = r#"{"upstream": null, "python-depends": [],
            "digest": null, "python-depends-backends": {"cuda": null}}"#;
        let metadata = parse(text);
        assert_eq!(metadata.upstream, None);
        assert_eq!(metadata.digest, None);
        assert!(metadata.python_depends_backends.is_empty());
    }

    #[test]
    fn null_where_a_list_is_required_is_malformed() {
        // 0.16.2, 0.17.2 and 0.19.1 refuse `"python-depends": null`; 0.17.2
        // and 0.19.1 `"kernel-depends": null` (0.16.2 ignores the field).
        for (field, what) in [
            ("python-depends", "a list of strings"),
            ("kernel-depends", "a list"),
        ] {
            let text = format!(r#"{{"python-depends": [], "{field}": null}}"#);
            assert_eq!(error(&text), format!("`{field}` is not {what}"), "{text}");
        }
    }

    #[test]
    fn malformed_known_fields_name_the_field() {
        let cases = [
            (
                "version",
                r#""1""#,
                "`version` is not a non-negative integer",
            ),
            ("version", "-1", "`version` is not a non-negative integer"),
            ("license", "3", "`license` is not a string"),
            ("name", r#""Relu""#, "`name` `Relu` is not a kernel name"),
            (
                "python-depends",
                r#""einops""#,
                "`python-depends` is not a list of strings",
            ),
            (
                "python-depends-backends",
                r#"{"cuda": "x"}"#,
                "`python-depends-backends.cuda` is not a list of strings",
            ),
            ("kernel-depends", "{}", "`kernel-depends` is not a list"),
            (
                "kernel-depends",
                r#"[{"repo-id": "a/b"}]"#,
                "`kernel-depends[0]` (`a/b`) needs exactly one of `version` and `revision`",
            ),
            (
                "kernel-depends",
                r#"[{"repo-id": "a/b", "version": 1, "revision": "main"}]"#,
                "`kernel-depends[0]` (`a/b`) needs exactly one",
            ),
            (
                "kernel-depends",
                r#"[{"repo-id": "a/b", "version": 1}, {"repo-id": "nope", "version": 1}]"#,
                "`kernel-depends[1].repo-id` is invalid: repo id `nope` has no `/`",
            ),
            (
                "kernel-depends",
                r#"[{"version": 1}]"#,
                "`kernel-depends[0].repo-id` is missing",
            ),
            ("backend", r#""cuda""#, "`backend` is not an object"),
            ("backend", r#"{"archs": []}"#, "`backend.type` is missing"),
            (
                "backend",
                r#"{"type": "cuda", "archs": "8.0"}"#,
                "`backend.archs` is not a list",
            ),
        ];
        assert_each_names_its_field(&cases);
    }

    #[test]
    fn malformed_digest_provenance_and_minver_name_the_field() {
        let cases = [
            (
                "digest",
                r#"{"algorithm": "sha256", "files": {"a.py": "not base64!"}}"#,
                r#"`digest.files."a.py"` `not base64!` is not standard base64"#,
            ),
            (
                "digest",
                r#"{"algorithm": "sha256", "files": {"a.py": "AAAA"}}"#,
                r#"`digest.files."a.py"` is 3 bytes long, not the 32 of a sha256 digest"#,
            ),
            (
                "digest",
                r#"{"algorithm": "sha256", "files": {"../a.py": "AAAA"}}"#,
                r#"`digest.files."../a.py"` is not a relative file path"#,
            ),
            (
                "digest",
                r#"{"algorithm": "sha256"}"#,
                "`digest.files` is missing",
            ),
            ("provenance", "42", "`provenance` is not an object"),
            (
                "provenance",
                r#"{"kernel": {"commit": "not-a-commit", "dirty": false}}"#,
                "`provenance.kernel.commit` is invalid",
            ),
            (
                "provenance",
                r#"{"kernel": {"commit": "d45addadb0c380f3d7cc2813310b3bcd75f8aa9a"}}"#,
                "`provenance.kernel` needs `commit` and `dirty`",
            ),
            (
                "provenance",
                r#"{"kernel-builder": {"version": "0.1.0", "dirty": true}}"#,
                "`provenance.kernel-builder` needs `commit` and `dirty` together",
            ),
            (
                "provenance",
                r#"{"kernel": {"commit": "d45addadb0c380f3d7cc2813310b3bcd75f8aa9a", "dirty": "no"}}"#,
                "`provenance.kernel.dirty` is not `true` or `false`",
            ),
            (
                "kernels-minver",
                r#""0.17""#,
                "`kernels-minver` is not a version `X.Y.Z`",
            ),
            (
                "kernels-minver",
                r#""0.17.2rc1""#,
                "`kernels-minver` is not a version",
            ),
            ("kernels-minver", "17", "`kernels-minver` is not a string"),
        ];
        assert_each_names_its_field(&cases);
    }

    /// Each `(field, value, expected)`: the current document with `field` set to
    /// `value` fails with a message that starts with `expected`.
    fn assert_each_names_its_field(cases: &[(&str, &str, &str)]) {
        for (field, value, expected) in cases {
            let err = error(&current_with(field, value));
            assert!(err.starts_with(expected), "{field} = {value}: {err}");
        }
    }

    #[test]
    fn not_json_or_not_an_object() {
        assert!(error("{").starts_with("invalid JSON: "));
        assert_eq!(error("[]"), "the document is not a JSON object");
        let err = "{\"version\": true}".parse::<Metadata>().unwrap_err();
        assert_eq!(err.field_name(), Some("version"));
        assert_eq!(MetadataError::NotAnObject.field_name(), None);
    }

    #[test]
    fn backend_names_round_trip() {
        for name in [
            "cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu", "new",
        ] {
            assert_eq!(BackendType::parse(name).as_str(), name);
        }
    }

    #[test]
    fn minver_before_0_17_is_read_as_0_16_2_reads_it() {
        let old = Some("0.16.2".parse().unwrap());
        for (text, kept) in [(r#""0.17""#, true), (r#""v0.17""#, true), ("17", false)] {
            let json = format!(r#"{{"kernels-minver": {text}}}"#);
            assert!(Metadata::from_slice(json.as_bytes()).is_err(), "{text}");
            let lenient = Metadata::from_slice_for(json.as_bytes(), old).unwrap();
            assert_eq!(lenient.kernels_minver, None, "{text}");
            assert_eq!(lenient.kernels_minver_text.is_some(), kept, "{text}");
            let strict = Metadata::from_slice_for(json.as_bytes(), Some("0.17.0".parse().unwrap()));
            assert!(strict.is_err(), "{text}");
        }
        let parse = |t: &str| LegacyVersion::parse(t).map(|v| v.to_string());
        assert_eq!(parse("0.17.0"), Some("0.17".to_owned()));
        assert_eq!(parse(" 0.16.2.1 "), Some("0.16.2.1".to_owned()));
        assert_eq!(parse("+1"), Some("1".to_owned()));
        for bad in ["v0.17", "0.17.0rc1", "", "0..1", "0.17.", "1.-2"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(
            LegacyVersion::parse("0.17").unwrap()
                > "0.16.2".parse::<KernelsVersion>().unwrap().into()
        );
        assert_eq!(
            LegacyVersion::parse("0.17.0"),
            Some("0.17.0".parse::<KernelsVersion>().unwrap().into())
        );
    }

    #[test]
    fn null_where_the_runtime_needs_a_value_is_malformed() {
        for key in REQUIRED_NOT_NULL {
            let json = format!(r#"{{"{key}": null}}"#);
            assert_eq!(
                error(&json).to_string(),
                format!("`{key}` is `null`; the runtime needs a value there")
            );
        }
        let absent =
            Metadata::from_slice(br#"{"upstream": null, "kernels-minver": null}"#).unwrap();
        assert_eq!(absent.upstream, None);
    }
}
