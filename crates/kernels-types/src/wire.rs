//! JSON shapes of the Hub API endpoints that `kernels` uses (see
//! `docs/hub-protocol.md`). Field names follow the Hub's camelCase.

use serde::{Deserialize, Serialize};

use crate::{CommitId, Digest};

/// One git ref in a `GET /api/{type}s/{repo_id}/refs` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRefInfo {
    /// Short name, for example `v1` or `v0.0.2`.
    pub name: String,
    /// Full ref, for example `refs/heads/v1` or `refs/tags/v0.0.2`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    /// The commit the ref points at (40 hex; any case on the wire, lowercase here).
    #[serde(rename = "targetCommit")]
    pub target_commit: CommitId,
}

/// The `refs` answer. `branches`, `converts` and `tags` are always present;
/// `pullRequests` only when `include_prs=1` was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRefs {
    /// Branches (`refs/heads/*`).
    pub branches: Vec<GitRefInfo>,
    /// Converts (`refs/convert/*`).
    #[serde(default)]
    pub converts: Vec<GitRefInfo>,
    /// Tags (`refs/tags/*`).
    pub tags: Vec<GitRefInfo>,
    /// Pull requests (`refs/pr/*`), only when requested.
    #[serde(
        rename = "pullRequests",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub pull_requests: Option<Vec<GitRefInfo>>,
}

/// LFS details of a tree entry (`lfs.oid` is the sha256 of the content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeLfs {
    /// SHA-256 of the file content (64 hex on the wire).
    pub oid: Digest,
    /// Content size in bytes.
    pub size: u64,
    /// Size of the git LFS pointer text in bytes.
    #[serde(rename = "pointerSize")]
    pub pointer_size: u64,
}

/// One entry of `GET /api/{type}s/{repo_id}/tree/{rev}[/{path}]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// `file` or `directory`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Git object id (blob SHA-1 of the content, or of the LFS pointer for LFS
    /// files; the tree SHA-1 of a directory).
    pub oid: Digest,
    /// Content size in bytes (0 for directories).
    #[serde(default)]
    pub size: u64,
    /// Full repo-relative path with `/` separators.
    pub path: String,
    /// Present for LFS files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lfs: Option<TreeLfs>,
}

impl TreeEntry {
    /// Whether this entry is a file (anything else is a folder).
    pub fn is_file(&self) -> bool {
        self.kind == "file"
    }
}

/// LFS details of a `siblings` item (`blobs=true`); note `sha256`, not `oid`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiblingLfs {
    /// SHA-256 of the content.
    pub sha256: Digest,
    /// Content size in bytes.
    pub size: u64,
    /// Size of the LFS pointer text.
    #[serde(rename = "pointerSize")]
    pub pointer_size: u64,
}

/// One `siblings` item of a model repo info answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sibling {
    /// Repo-relative path.
    pub rfilename: String,
    /// Git blob id (only with `blobs=true`).
    #[serde(rename = "blobId", default, skip_serializing_if = "Option::is_none")]
    pub blob_id: Option<Digest>,
    /// Size in bytes (only with `blobs=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// LFS details (only with `blobs=true`, only for LFS files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lfs: Option<SiblingLfs>,
}

/// The parts of `GET /api/{type}s/{repo_id}[/revision/{rev}]` that `kernels` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoInfo {
    /// `owner/name`.
    pub id: String,
    /// The commit the revision resolved to (the client checks it is SHA-1).
    pub sha: CommitId,
    /// File list; model repos only (kernel repos answer without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub siblings: Option<Vec<Sibling>>,
}

/// `GET /api/organizations/{org}/overview`, the fields `kernels` reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationOverview {
    /// Organization name.
    pub name: String,
    /// Display name, when the Hub sends one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fullname: Option<String>,
    /// Whether the Hub marks the organization as a trusted kernel publisher.
    #[serde(rename = "trustedKernelPublisher", default)]
    pub trusted_kernel_publisher: bool,
}

/// Hub repository types `kernels` deals with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RepoType {
    /// `kernel` repos: API `/api/kernels/…`, downloads under `/kernels/…`, cache `kernels--…`.
    Kernel,
    /// `model` repos: API `/api/models/…`, downloads at the root, cache `models--…`.
    Model,
}

impl RepoType {
    /// Singular name: `kernel` or `model`.
    pub fn as_str(self) -> &'static str {
        match self {
            RepoType::Kernel => "kernel",
            RepoType::Model => "model",
        }
    }

    /// API path segment: `kernels` or `models`.
    pub fn api_segment(self) -> &'static str {
        match self {
            RepoType::Kernel => "kernels",
            RepoType::Model => "models",
        }
    }

    /// Prefix of `/resolve/` download URLs: `kernels/` or empty.
    pub fn url_prefix(self) -> &'static str {
        match self {
            RepoType::Kernel => "kernels/",
            RepoType::Model => "",
        }
    }
}

/// One entry of `GET /api/{type}s/{repo_id}/commits/{revision}` (newest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitInfo {
    /// The commit id.
    pub id: CommitId,
    /// Commit title.
    #[serde(default)]
    pub title: String,
    /// Commit date.
    #[serde(default)]
    pub date: String,
}
