//! Loading a mirror directory (`kernels/`, test fixtures) into memory.
//!
//! Only metadata is kept: paths, sizes, git object ids, LFS sha256s and commit
//! shas. File bodies stay on disk (or are generated, for `[synthetic]` files)
//! and are streamed per request.
//!
//! Layout (`kernels serve --help` summarises it for mirror authors):
//! `orgs/<org>.toml`, `repos/<kernels|models>/<owner>/<name>/repo.toml` and
//! `repos/…/commits/<label>/{commit.toml,tree/…}`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha1::{Digest as _, Sha1};

use kernels_types::digest::git_blob_sha1;
use kernels_types::{CommitId, Digest, DigestKind};

use super::content::{self, Content};
use super::glob::fnmatch;
use kernels_types::wire::RepoType;

/// Default date of a commit whose `commit.toml` has none.
const DEFAULT_DATE: &str = "2025-01-01T00:00:00.000Z";

/// A malformed mirror directory. Every variant names the file, the entry and the fix.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum MirrorError {
    /// The mirror directory has no `repos/` folder.
    #[error("{} is not a mirror directory: it has no `repos/` folder", .0.display())]
    #[diagnostic(
        code(kernels::serve::not_a_mirror),
        help(
            "pass the mirror root (the folder holding `repos/kernels/<owner>/<name>/repo.toml`), for example `kernels serve kernels`"
        )
    )]
    NotAMirror(PathBuf),

    /// Reading a file or folder failed.
    #[error("cannot read the mirror")]
    #[diagnostic(code(kernels::serve::io))]
    Io(#[from] std::io::Error),

    /// A TOML file does not parse or has a wrong value type.
    #[error("{} is not valid: {message}", path.display())]
    #[diagnostic(
        code(kernels::serve::bad_toml),
        help("fix the entry named above; `kernels serve --help` describes the mirror layout")
    )]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message (includes line and column).
        message: String,
    },

    /// A path of the mirror resolves (through a symbolic link) outside the mirror root.
    #[error("{} leads outside the mirror: it resolves to {}, which is not under {}", path.display(), target.display(), root.display())]
    #[diagnostic(
        code(kernels::serve::link_outside),
        help(
            "nothing outside the mirror is served: replace the link with a copy of what it points at, or make it point inside the mirror"
        )
    )]
    LinkOutside {
        /// The path in the mirror (the link, or a path through it).
        path: PathBuf,
        /// Where it resolves to.
        target: PathBuf,
        /// The mirror root, resolved.
        root: PathBuf,
    },

    /// A symbolic link in the mirror points nowhere, or links form a loop.
    #[error("{} is a broken symbolic link: {message}", path.display())]
    #[diagnostic(
        code(kernels::serve::broken_link),
        help("remove the link or point it at a file inside the mirror")
    )]
    BrokenLink {
        /// The link.
        path: PathBuf,
        /// What resolving it reported.
        message: String,
    },

    /// A value inside a valid TOML file is wrong.
    #[error("{}: `{entry}` {problem}", path.display())]
    #[diagnostic(code(kernels::serve::bad_entry), help("{fix}"))]
    Entry {
        /// The file holding the entry.
        path: PathBuf,
        /// The entry, for example `branches.v1`.
        entry: String,
        /// What is wrong with it.
        problem: String,
        /// How to fix it.
        fix: String,
    },
}

impl MirrorError {
    fn entry(
        path: &Path,
        entry: impl Into<String>,
        problem: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        MirrorError::Entry {
            path: path.to_owned(),
            entry: entry.into(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

/// Gating mode of a repository (`gated` in `repo.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gated {
    /// Not gated.
    No,
    /// `"auto"`: any authenticated token listed in `allowed_tokens` gets access.
    Auto,
    /// `"manual"`: only tokens in `allowed_tokens` get access.
    Manual,
}

impl Gated {
    /// The JSON value of `gated` in repo info answers.
    pub fn json(self) -> serde_json::Value {
        match self {
            Gated::No => serde_json::Value::Bool(false),
            Gated::Auto => "auto".into(),
            Gated::Manual => "manual".into(),
        }
    }
}

/// LFS details of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lfs {
    /// SHA-256 of the content.
    pub sha256: Digest,
    /// Length of the LFS pointer text in bytes.
    pub pointer_size: u64,
}

/// One file of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// Content length in bytes.
    pub size: u64,
    /// Git object id: blob SHA-1 of the content, or of the pointer for LFS files.
    pub oid: Digest,
    /// Present for LFS files.
    pub lfs: Option<Lfs>,
    /// Where the bytes come from.
    pub content: Content,
}

/// A file or directory of a commit's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A file.
    File(FileMeta),
    /// A directory; `oid` is its git tree sha1.
    Dir {
        /// Git tree object id.
        oid: Digest,
    },
}

/// A tree entry plus the index of the last commit that changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// File or directory.
    pub kind: NodeKind,
    /// Index into [`Repo::commits`] of the newest commit (up to this one) that changed the entry.
    pub last_commit: usize,
}

impl Node {
    /// The git object id.
    pub fn oid(&self) -> Digest {
        match &self.kind {
            NodeKind::File(f) => f.oid,
            NodeKind::Dir { oid } => *oid,
        }
    }
}

/// One commit of a repository.
#[derive(Debug, Clone)]
pub struct Commit {
    /// Directory name under `commits/`.
    pub label: String,
    /// The commit id (SHA-1).
    pub sha: CommitId,
    /// Commit title.
    pub title: String,
    /// `YYYY-MM-DDTHH:MM:SS[.fff]Z`.
    pub date: String,
    /// Every file and directory by repo-relative path (the root is not included).
    pub tree: BTreeMap<String, Node>,
    /// Index of the parent commit: the previous commit unless `commit.toml`
    /// sets `parent` (a label, or `""` for a root commit of unrelated history).
    pub parent: Option<usize>,
}

impl Commit {
    /// Files of the commit in path order.
    pub fn files(&self) -> impl Iterator<Item = (&String, &FileMeta)> {
        self.tree.iter().filter_map(|(p, n)| match &n.kind {
            NodeKind::File(f) => Some((p, f)),
            NodeKind::Dir { .. } => None,
        })
    }
}

/// A repository of the mirror.
#[derive(Debug, Clone)]
pub struct Repo {
    /// `owner/name`.
    pub id: String,
    /// The type given by its folder (`repos/kernels` or `repos/models`).
    pub primary: RepoType,
    /// Every type it answers as (`primary` plus `also_serve_as`).
    pub types: Vec<RepoType>,
    /// Hidden (`RepoNotFound`) unless the request carries a token from `allowed_tokens`.
    pub private: bool,
    /// Gating of downloads.
    pub gated: Gated,
    /// Tokens granted access to private or gated repos.
    pub allowed_tokens: Vec<String>,
    /// Default branch (`main` unless set).
    pub default_branch: String,
    /// Commits, oldest first.
    pub commits: Vec<Commit>,
    /// Branch name → commit index.
    pub branches: BTreeMap<String, usize>,
    /// Tag name → commit index.
    pub tags: BTreeMap<String, usize>,
    /// `refs/convert/<name>` → commit index.
    pub converts: BTreeMap<String, usize>,
    /// Pull request number → commit index.
    pub pull_requests: BTreeMap<String, usize>,
}

impl Repo {
    /// Resolves a revision to a commit index: a 40-hex commit sha, a branch
    /// (branches win over tags), a tag, or a full ref (`refs/heads/X`,
    /// `refs/tags/X`, `refs/convert/X`, `refs/pr/N`).
    pub fn resolve(&self, rev: &str) -> Option<usize> {
        if let Ok(commit) = rev.parse::<CommitId>()
            && let Some(i) = self.commits.iter().position(|c| c.sha == commit)
        {
            return Some(i);
        }
        if let Some(&i) = self.branches.get(rev).or_else(|| self.tags.get(rev)) {
            return Some(i);
        }
        let (table, name) = if let Some(n) = rev.strip_prefix("refs/heads/") {
            (&self.branches, n)
        } else if let Some(n) = rev.strip_prefix("refs/tags/") {
            (&self.tags, n)
        } else if let Some(n) = rev.strip_prefix("refs/convert/") {
            (&self.converts, n)
        } else if let Some(n) = rev.strip_prefix("refs/pr/") {
            (&self.pull_requests, n)
        } else {
            return None;
        };
        table.get(name).copied()
    }

    /// Owner part of the id.
    pub fn owner(&self) -> &str {
        self.id.split_once('/').map_or("", |(o, _)| o)
    }
}

/// An organization from `orgs/<name>.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Org {
    /// Organization name (file stem).
    pub name: String,
    /// Display name.
    pub fullname: String,
    /// Whether the Hub marks it as a trusted kernel publisher.
    pub trusted_kernel_publisher: bool,
}

/// A loaded mirror.
#[derive(Debug)]
pub struct Mirror {
    /// The mirror root.
    pub root: PathBuf,
    /// Repositories in load order.
    pub repos: Vec<Repo>,
    /// Organizations by name.
    pub orgs: BTreeMap<String, Org>,
    by_id: HashMap<(RepoType, String), usize>,
    /// LFS objects by sha256, for the CDN listener.
    objects: HashMap<Digest, (u64, Content)>,
}

impl Mirror {
    /// The repository answering as `kind` under `id` (`owner/name`).
    pub fn repo(&self, kind: RepoType, id: &str) -> Option<&Repo> {
        self.by_id
            .get(&(kind, id.to_owned()))
            .map(|&i| &self.repos[i])
    }

    /// An LFS object by its SHA-256 as a blob name (64 lowercase hex): its
    /// size and content.
    pub fn object(&self, sha256: &str) -> Option<&(u64, Content)> {
        let digest = Digest::from_etag(sha256).ok()?;
        self.objects.get(&digest)
    }

    /// Loads and validates the mirror at `root`, hashing every file.
    ///
    /// Symbolic links are resolved here, once: one that resolves inside the
    /// mirror root is served as what it points at; one leading outside it,
    /// or nowhere, is a load error naming it.
    pub fn load(root: &Path) -> Result<Mirror, MirrorError> {
        let repos_dir = root.join("repos");
        if !repos_dir.is_dir() {
            return Err(MirrorError::NotAMirror(root.to_owned()));
        }
        let real_root = fs_err::canonicalize(root)?;
        let confine = Confine { root: &real_root };
        confine.check(&repos_dir)?;
        let mut mirror = Mirror {
            root: root.to_owned(),
            repos: Vec::new(),
            orgs: load_orgs(&root.join("orgs"), confine)?,
            by_id: HashMap::new(),
            objects: HashMap::new(),
        };
        let digester = Digester::default();
        for (folder, kind) in [("kernels", RepoType::Kernel), ("models", RepoType::Model)] {
            let dir = repos_dir.join(folder);
            if !dir.is_dir() {
                continue;
            }
            confine.check(&dir)?;
            for owner in sorted_dirs(&dir)? {
                for name in sorted_dirs(&owner)? {
                    let repo = load_repo(&name, kind, &digester, confine)?;
                    mirror.add(repo, &name)?;
                }
            }
        }
        Ok(mirror)
    }

    fn add(&mut self, repo: Repo, dir: &Path) -> Result<(), MirrorError> {
        let index = self.repos.len();
        for &kind in &repo.types {
            if self.by_id.insert((kind, repo.id.clone()), index).is_some() {
                return Err(MirrorError::entry(
                    &dir.join("repo.toml"),
                    "also_serve_as",
                    format!(
                        "makes `{}` a second {} repository of that name",
                        repo.id,
                        kind.as_str()
                    ),
                    "keep one folder per repo id and type",
                ));
            }
        }
        for commit in &repo.commits {
            for (_, file) in commit.files() {
                if let Some(lfs) = &file.lfs {
                    self.objects
                        .entry(lfs.sha256)
                        .or_insert_with(|| (file.size, file.content.clone()));
                }
            }
        }
        self.repos.push(repo);
        Ok(())
    }
}

/// Resolves paths and refuses those that leave the mirror root.
#[derive(Clone, Copy)]
struct Confine<'a> {
    /// The canonical mirror root.
    root: &'a Path,
}

impl Confine<'_> {
    /// The canonical form of `path`, which must exist and lie under the root.
    fn check(self, path: &Path) -> Result<PathBuf, MirrorError> {
        let target = fs_err::canonicalize(path).map_err(|err| MirrorError::BrokenLink {
            path: path.to_owned(),
            message: err.to_string(),
        })?;
        if !target.starts_with(self.root) {
            return Err(MirrorError::LinkOutside {
                path: path.to_owned(),
                target,
                root: self.root.to_owned(),
            });
        }
        Ok(target)
    }

    /// [`Confine::check`] for a path that may be missing (an optional file).
    fn check_if_present(self, path: &Path) -> Result<(), MirrorError> {
        if fs_err::symlink_metadata(path).is_ok() {
            self.check(path)?;
        }
        Ok(())
    }
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, MirrorError> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

pub(crate) fn read_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, MirrorError> {
    let text = fs_err::read_to_string(path)?;
    toml::from_str(&text).map_err(|err| MirrorError::Toml {
        path: path.to_owned(),
        message: err.to_string().trim_end().to_owned(),
    })
}

#[derive(Deserialize, Serialize)]
pub(crate) struct OrgToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fullname: Option<String>,
    #[serde(default, alias = "trustedKernelPublisher")]
    pub(crate) trusted_kernel_publisher: bool,
}

fn load_orgs(dir: &Path, confine: Confine<'_>) -> Result<BTreeMap<String, Org>, MirrorError> {
    let mut orgs = BTreeMap::new();
    if !dir.is_dir() {
        return Ok(orgs);
    }
    confine.check(dir)?;
    for entry in fs_err::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        confine.check(&path)?;
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let parsed: OrgToml = read_toml(&path)?;
        orgs.insert(
            name.clone(),
            Org {
                fullname: parsed.fullname.unwrap_or_else(|| name.clone()),
                name,
                trusted_kernel_publisher: parsed.trusted_kernel_publisher,
            },
        );
    }
    Ok(orgs)
}

#[derive(Deserialize, Serialize, Default)]
#[serde(untagged)]
pub(crate) enum GatedToml {
    #[default]
    Unset,
    Bool(bool),
    Mode(String),
}

#[derive(Deserialize, Serialize)]
pub(crate) struct SyntheticToml {
    size: u64,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    lfs: bool,
}

/// `repo.toml`; read here and written by [`crate::writer`] (one definition of the format).
#[derive(Deserialize, Serialize, Default)]
pub(crate) struct RepoToml {
    pub(crate) commits: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) also_serve_as: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) private: bool,
    #[serde(default, skip_serializing_if = "GatedToml::is_unset")]
    pub(crate) gated: GatedToml,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) allowed_tokens: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) default_branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lfs: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) branches: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) tags: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) converts: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) pull_requests: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) synthetic: BTreeMap<String, SyntheticToml>,
}

impl GatedToml {
    fn is_unset(&self) -> bool {
        matches!(self, GatedToml::Unset)
    }
}

/// `commit.toml`; read here and written by [`crate::writer`].
#[derive(Deserialize, Serialize, Default)]
pub(crate) struct CommitToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sha: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lfs: Option<Vec<String>>,
    /// Exact paths of this commit's LFS files; when present it replaces every
    /// pattern (`lfs` here or in `repo.toml`, `.gitattributes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lfs_files: Option<Vec<String>>,
}

pub(crate) fn is_sha(s: &str) -> bool {
    CommitId::is_canonical(s) && s.len() == 40
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z`, the only date shape Python's parser accepts.
pub(crate) fn is_hub_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 20 || !s.ends_with('Z') {
        return false;
    }
    let head = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let tail = &s[19..s.len() - 1];
    head && (tail.is_empty()
        || (tail.starts_with('.')
            && tail.len() > 1
            && tail[1..].bytes().all(|c| c.is_ascii_digit())))
}

fn load_repo(
    dir: &Path,
    primary: RepoType,
    digester: &Digester,
    confine: Confine<'_>,
) -> Result<Repo, MirrorError> {
    confine.check(dir)?;
    let toml_path = dir.join("repo.toml");
    confine.check_if_present(&toml_path)?;
    let parsed: RepoToml = read_toml(&toml_path)?;
    let id = repo_id_of(dir, &toml_path)?;
    let types = repo_types(&parsed, primary, &toml_path)?;
    let gated = gated_mode(&parsed, &toml_path)?;
    let commits_dir = dir.join("commits");
    check_commit_labels(&parsed, &commits_dir, &toml_path, confine)?;
    let synthetic = synthetic_by_label(&parsed, &toml_path)?;
    let source = CommitSource {
        commits_dir: &commits_dir,
        toml_path: &toml_path,
        parsed: &parsed,
        synthetic: &synthetic,
        digester,
        confine,
    };
    let mut commits: Vec<Commit> = Vec::with_capacity(parsed.commits.len());
    for label in &parsed.commits {
        let commit = load_commit(&source, label, &commits)?;
        commits.push(commit);
    }
    let Refs {
        branches,
        tags,
        converts,
        pull_requests,
        default_branch,
    } = resolve_refs(&parsed, &commits, &toml_path)?;
    Ok(Repo {
        id,
        primary,
        types,
        private: parsed.private,
        gated,
        allowed_tokens: parsed.allowed_tokens,
        default_branch,
        commits,
        branches,
        tags,
        converts,
        pull_requests,
    })
}

/// `owner/name` from the repository folder's last two components.
fn repo_id_of(dir: &Path, toml_path: &Path) -> Result<String, MirrorError> {
    let owner = dir
        .parent()
        .and_then(Path::file_name)
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let name = dir.file_name().and_then(|s| s.to_str()).unwrap_or_default();
    let id = format!("{owner}/{name}");
    if id.parse::<kernels_types::RepoId>().is_err() {
        return Err(MirrorError::entry(
            toml_path,
            "repository folder",
            format!("gives the invalid repo id `{id}`"),
            "rename the folders to `repos/<type>/<owner>/<name>` using letters, digits, `-`, `_` and `.`",
        ));
    }
    Ok(id)
}

/// The primary repo type and those of `also_serve_as`.
fn repo_types(
    parsed: &RepoToml,
    primary: RepoType,
    toml_path: &Path,
) -> Result<Vec<RepoType>, MirrorError> {
    let mut types = vec![primary];
    for (i, other) in parsed.also_serve_as.iter().enumerate() {
        let kind = match other.as_str() {
            "model" => RepoType::Model,
            "kernel" => RepoType::Kernel,
            _ => {
                return Err(MirrorError::entry(
                    toml_path,
                    format!("also_serve_as[{i}]"),
                    format!("is `{other}`, not a supported repo type"),
                    "use \"model\" or \"kernel\"",
                ));
            }
        };
        if !types.contains(&kind) {
            types.push(kind);
        }
    }
    Ok(types)
}

/// `gated` of `repo.toml`.
fn gated_mode(parsed: &RepoToml, toml_path: &Path) -> Result<Gated, MirrorError> {
    Ok(match &parsed.gated {
        GatedToml::Unset | GatedToml::Bool(false) => Gated::No,
        GatedToml::Bool(true) => Gated::Auto,
        GatedToml::Mode(m) if m == "auto" => Gated::Auto,
        GatedToml::Mode(m) if m == "manual" => Gated::Manual,
        GatedToml::Mode(m) => {
            return Err(MirrorError::entry(
                toml_path,
                "gated",
                format!("is `{m}`"),
                "use false, \"auto\" or \"manual\"",
            ));
        }
    })
}

/// `commits` of `repo.toml` names exactly the folders under `commits/`.
fn check_commit_labels(
    parsed: &RepoToml,
    commits_dir: &Path,
    toml_path: &Path,
    confine: Confine<'_>,
) -> Result<(), MirrorError> {
    if parsed.commits.is_empty() {
        return Err(MirrorError::entry(
            toml_path,
            "commits",
            "is empty",
            "list the folders under commits/, oldest first, e.g. commits = [\"c1\"]",
        ));
    }
    for (i, label) in parsed.commits.iter().enumerate() {
        if label.is_empty() || label == "." || label == ".." || label.contains(['/', '\\']) {
            return Err(MirrorError::entry(
                toml_path,
                format!("commits[{i}]"),
                format!("is `{label}`, not the name of a folder under commits/"),
                "list folder names only, e.g. commits = [\"c1\", \"c2\"]",
            ));
        }
    }
    confine.check_if_present(commits_dir)?;
    for found in sorted_dirs(commits_dir)? {
        let label = found
            .file_name()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if !parsed.commits.iter().any(|c| c == label) {
            return Err(MirrorError::entry(
                toml_path,
                "commits",
                format!("does not list the folder commits/{label}"),
                format!("add \"{label}\" to `commits` (oldest first) or delete the folder"),
            ));
        }
    }
    Ok(())
}

/// `synthetic` entries of `repo.toml`, grouped by commit label.
type SyntheticByLabel<'a> = HashMap<&'a str, Vec<(&'a str, &'a SyntheticToml)>>;

fn synthetic_by_label<'a>(
    parsed: &'a RepoToml,
    toml_path: &Path,
) -> Result<SyntheticByLabel<'a>, MirrorError> {
    let mut synthetic: HashMap<&str, Vec<(&str, &SyntheticToml)>> = HashMap::new();
    for (key, spec) in &parsed.synthetic {
        let Some((label, path)) = key
            .split_once(':')
            .filter(|(l, p)| !l.is_empty() && kernels_types::repo_path::check(p).is_ok())
        else {
            return Err(MirrorError::entry(
                toml_path,
                format!("synthetic.\"{key}\""),
                "is not of the form \"<commit label>:<path>\"",
                "write the key as \"c1:big.bin\"",
            ));
        };
        if !parsed.commits.iter().any(|c| c == label) {
            return Err(MirrorError::entry(
                toml_path,
                format!("synthetic.\"{key}\""),
                format!("names the commit `{label}`, which `commits` does not list"),
                "use a label from `commits`",
            ));
        }
        synthetic.entry(label).or_default().push((path, spec));
    }
    Ok(synthetic)
}

/// What [`load_commit`] reads a commit from.
struct CommitSource<'a> {
    commits_dir: &'a Path,
    toml_path: &'a Path,
    parsed: &'a RepoToml,
    synthetic: &'a SyntheticByLabel<'a>,
    digester: &'a Digester,
    confine: Confine<'a>,
}

/// One commit folder (`commits/<label>/`: `commit.toml` and `tree/`), given
/// the commits loaded before it (its default parent is the previous one).
fn load_commit(
    source: &CommitSource<'_>,
    label: &String,
    commits: &[Commit],
) -> Result<Commit, MirrorError> {
    let commit_dir = source.commits_dir.join(label);
    let tree_dir = commit_dir.join("tree");
    let commit_toml_path = commit_dir.join("commit.toml");
    let meta = read_commit_toml(source, label, &tree_dir, &commit_toml_path)?;
    let patterns = match meta.lfs.clone().or_else(|| source.parsed.lfs.clone()) {
        Some(p) => p,
        None => gitattributes_lfs(&tree_dir.join(".gitattributes"))?,
    };

    let files = describe_tree(&tree_dir, &meta, &patterns, label, source)?;

    let parent_index = parent_index(&meta, commits, &commit_toml_path)?;
    let parent = parent_index.map(|i| &commits[i].sha);
    let sha = match meta.sha {
        // Checked by `is_sha` above.
        Some(sha) => sha.parse().expect("a commit id"),
        None => derived_commit_sha(label, parent, &files),
    };
    if let Some(dup) = commits.iter().find(|c| c.sha == sha) {
        return Err(MirrorError::entry(
            &commit_toml_path,
            "sha",
            format!("repeats the sha of commit `{}`", dup.label),
            "give every commit a distinct sha",
        ));
    }
    let mut tree = build_tree(files, commits.len());
    if let Some(prev) = commits.last() {
        keep_last_commits(&mut tree, prev);
    }
    Ok(Commit {
        label: label.clone(),
        sha,
        title: meta.title.unwrap_or_else(|| format!("Commit {label}")),
        date: meta.date.unwrap_or_else(|| DEFAULT_DATE.to_owned()),
        tree,
        parent: parent_index,
    })
}

/// The checked `commit.toml` of commit `label` (defaults when there is none),
/// after confining its `tree/`, `commit.toml` and `.gitattributes` to the mirror.
fn read_commit_toml(
    source: &CommitSource<'_>,
    label: &str,
    tree_dir: &Path,
    commit_toml_path: &Path,
) -> Result<CommitToml, MirrorError> {
    if !tree_dir.is_dir() {
        return Err(MirrorError::entry(
            source.toml_path,
            "commits",
            format!("lists `{label}`, but {} is missing", tree_dir.display()),
            "create the commit's file tree under commits/<label>/tree/ or remove the label",
        ));
    }
    source.confine.check(tree_dir)?;
    source.confine.check_if_present(commit_toml_path)?;
    source
        .confine
        .check_if_present(&tree_dir.join(".gitattributes"))?;
    let meta: CommitToml = if commit_toml_path.is_file() {
        read_toml(commit_toml_path)?
    } else {
        CommitToml::default()
    };
    if let Some(sha) = &meta.sha
        && !is_sha(sha)
    {
        return Err(MirrorError::entry(
            commit_toml_path,
            "sha",
            format!("is `{sha}`, not 40 lowercase hex digits"),
            "write a full commit sha such as \"1111111111111111111111111111111111111111\" or remove the key",
        ));
    }
    if let Some(date) = &meta.date
        && !is_hub_date(date)
    {
        return Err(MirrorError::entry(
            commit_toml_path,
            "date",
            format!("is `{date}`"),
            "use UTC with a Z suffix, e.g. \"2025-05-21T10:00:00Z\"",
        ));
    }
    Ok(meta)
}

/// The index in `commits` of the parent `meta` names: by default the previous
/// commit, none for `parent = ""`, else the earlier commit with that label.
fn parent_index(
    meta: &CommitToml,
    commits: &[Commit],
    commit_toml_path: &Path,
) -> Result<Option<usize>, MirrorError> {
    match meta.parent.as_deref() {
        None => Ok(commits.len().checked_sub(1)),
        Some("") => Ok(None),
        Some(label) => commits
            .iter()
            .position(|c| c.label == label)
            .map(Some)
            .ok_or_else(|| {
                MirrorError::entry(
                    commit_toml_path,
                    "parent",
                    format!("names `{label}`, which is not an earlier commit"),
                    "name the label of a commit listed before this one in `commits`, or \"\" for a root commit",
                )
            }),
    }
}

/// Entries unchanged since `prev` (same object id and kind) keep the commit
/// that last changed them.
fn keep_last_commits(tree: &mut BTreeMap<String, Node>, prev: &Commit) {
    for (path, node) in tree.iter_mut() {
        if let Some(old) = prev.tree.get(path)
            && old.oid() == node.oid()
            && matches!(old.kind, NodeKind::Dir { .. }) == matches!(node.kind, NodeKind::Dir { .. })
        {
            node.last_commit = old.last_commit;
        }
    }
}

/// The files of a commit's `tree/` folder (links resolved inside the mirror)
/// and its synthetic entries, described with their digests.
fn describe_tree(
    tree_dir: &Path,
    meta: &CommitToml,
    patterns: &[String],
    label: &str,
    source: &CommitSource<'_>,
) -> Result<BTreeMap<String, FileMeta>, MirrorError> {
    let mut jobs: Vec<(String, Content, bool)> = Vec::new();
    for entry in walkdir::WalkDir::new(tree_dir).follow_links(true) {
        let entry = entry.map_err(|err| match err.path() {
            Some(path) => MirrorError::BrokenLink {
                path: path.to_owned(),
                message: err.to_string(),
            },
            None => MirrorError::Io(std::io::Error::other(err.to_string())),
        })?;
        // A link (to a file or a folder) is served as what it points at,
        // and only when that lies inside the mirror. What is under a
        // followed folder link is checked as the walk reaches it.
        let real = if entry.path_is_symlink() {
            Some(source.confine.check(entry.path())?)
        } else {
            None
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(tree_dir).unwrap_or(entry.path());
        let Some(rel) = rel
            .to_str()
            .map(|s| s.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            return Err(MirrorError::entry(
                source.toml_path,
                format!("commits/{label}/tree"),
                format!(
                    "holds a file whose name is not UTF-8: {}",
                    entry.path().display()
                ),
                "rename the file",
            ));
        };
        let lfs = match &meta.lfs_files {
            Some(files) => files.contains(&rel),
            None => patterns.iter().any(|p| lfs_match(p, &rel)),
        };
        // The canonical path: what is served is re-checked against it at
        // every open (`content::open_confined`).
        let disk = match real {
            Some(real) => real,
            None => source.confine.check(entry.path())?,
        };
        jobs.push((rel, Content::Disk(disk), lfs));
    }
    for (path, spec) in source.synthetic.get(label).into_iter().flatten() {
        let content = Content::Synthetic {
            seed: spec.seed,
            size: spec.size,
        };
        jobs.retain(|(p, _, _)| p != path);
        jobs.push(((*path).to_owned(), content, spec.lfs));
    }
    Ok(source.digester.describe_all(jobs)?.into_iter().collect())
}

/// The ref tables of `repo.toml` resolved to commit indices, and the default
/// branch (which must exist).
struct Refs {
    branches: BTreeMap<String, usize>,
    tags: BTreeMap<String, usize>,
    converts: BTreeMap<String, usize>,
    pull_requests: BTreeMap<String, usize>,
    default_branch: String,
}

fn resolve_refs(
    parsed: &RepoToml,
    commits: &[Commit],
    toml_path: &Path,
) -> Result<Refs, MirrorError> {
    let target = |table: &str, name: &str, value: &str| -> Result<usize, MirrorError> {
        if let Some(i) = commits.iter().position(|c| c.label == value) {
            return Ok(i);
        }
        if let Some(i) = commits.iter().position(|c| c.sha.as_str() == value) {
            return Ok(i);
        }
        Err(MirrorError::entry(
            toml_path,
            format!("{table}.\"{name}\""),
            format!("points at `{value}`, which is neither a commit label nor the sha of a commit"),
            format!(
                "use one of the labels {:?} or a sha from their commit.toml",
                parsed.commits
            ),
        ))
    };
    let mut tables: [BTreeMap<String, usize>; 4] = Default::default();
    for (slot, (table, entries)) in tables.iter_mut().zip([
        ("branches", &parsed.branches),
        ("tags", &parsed.tags),
        ("converts", &parsed.converts),
        ("pull_requests", &parsed.pull_requests),
    ]) {
        for (name, value) in entries {
            slot.insert(name.clone(), target(table, name, value)?);
        }
    }
    let [branches, tags, converts, pull_requests] = tables;
    let default_branch = parsed
        .default_branch
        .clone()
        .unwrap_or_else(|| "main".to_owned());
    if !branches.contains_key(&default_branch) {
        return Err(MirrorError::entry(
            toml_path,
            "branches",
            format!("has no entry for the default branch `{default_branch}`"),
            format!("add `{default_branch} = \"<label>\"` under [branches] or set default_branch"),
        ));
    }
    Ok(Refs {
        branches,
        tags,
        converts,
        pull_requests,
        default_branch,
    })
}

/// An LFS pattern matches the full path or the basename.
fn lfs_match(pattern: &str, path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    fnmatch(pattern, path) || fnmatch(pattern, base)
}

/// Patterns of `.gitattributes` lines carrying `filter=lfs`.
fn gitattributes_lfs(path: &Path) -> Result<Vec<String>, MirrorError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = fs_err::read_to_string(path)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let pattern = parts.next()?;
            parts.any(|a| a == "filter=lfs").then(|| pattern.to_owned())
        })
        .collect())
}

/// Hashes files in parallel (one worker per core); synthetic files with the
/// same `(seed, size, lfs)` are hashed once per load.
#[derive(Default)]
struct Digester {
    synthetic: std::sync::Mutex<HashMap<(u64, u64, bool), FileMeta>>,
}

impl Digester {
    /// Describes every `(path, content, lfs)` job, keeping the input order.
    fn describe_all(
        &self,
        jobs: Vec<(String, Content, bool)>,
    ) -> Result<Vec<(String, FileMeta)>, MirrorError> {
        use rayon::prelude::*;

        jobs.into_par_iter()
            .map(|(path, content, lfs)| Ok((path, self.describe(content, lfs)?)))
            .collect()
    }

    fn describe(&self, content: Content, lfs: bool) -> std::io::Result<FileMeta> {
        let key = match content {
            Content::Synthetic { seed, size } => Some((seed, size, lfs)),
            Content::Disk(_) => None,
        };
        if let Some(key) = key
            && let Some(hit) = self
                .synthetic
                .lock()
                .ok()
                .and_then(|m| m.get(&key).cloned())
        {
            return Ok(hit);
        }
        let meta = if lfs {
            let (size, sha256) = content::digest(&content, DigestKind::Sha256)?;
            let pointer = content::lfs_pointer(&sha256, size);
            FileMeta {
                size,
                oid: Digest::GitSha1(git_blob_sha1(pointer.as_bytes())),
                lfs: Some(Lfs {
                    sha256,
                    pointer_size: pointer.len() as u64,
                }),
                content,
            }
        } else {
            let (size, oid) = content::digest(&content, DigestKind::GitBlobSha1)?;
            FileMeta {
                size,
                oid,
                lfs: None,
                content,
            }
        };
        if let Some(key) = key
            && let Ok(mut cache) = self.synthetic.lock()
        {
            cache.insert(key, meta.clone());
        }
        Ok(meta)
    }
}

/// `sha1("commit\0" + label + "\0" + parent_sha + "\0" + "<path>:<oid>\n"…)`
/// over the files in path order.
fn derived_commit_sha(
    label: &str,
    parent: Option<&CommitId>,
    files: &BTreeMap<String, FileMeta>,
) -> CommitId {
    let parent = parent.map_or("", CommitId::as_str);
    let mut h = Sha1::new();
    h.update(format!("commit\0{label}\0{parent}\0"));
    for (path, file) in files {
        h.update(format!("{path}:{}\n", file.oid));
    }
    hex::encode(h.finalize())
        .parse()
        .expect("40 hex digits are a commit id")
}

#[derive(Default)]
struct DirBuilder {
    files: BTreeMap<String, Digest>,
    dirs: BTreeMap<String, DirBuilder>,
}

/// Adds directory nodes with exact git tree ids to the flat file map.
fn build_tree(files: BTreeMap<String, FileMeta>, commit: usize) -> BTreeMap<String, Node> {
    let mut root = DirBuilder::default();
    for (path, file) in &files {
        let mut dir = &mut root;
        let mut parts: Vec<&str> = path.split('/').collect();
        let name = parts.pop().unwrap_or_default();
        for part in parts {
            dir = dir.dirs.entry(part.to_owned()).or_default();
        }
        dir.files.insert(name.to_owned(), file.oid);
    }
    let mut out: BTreeMap<String, Node> = files
        .into_iter()
        .map(|(p, f)| {
            (
                p,
                Node {
                    kind: NodeKind::File(f),
                    last_commit: commit,
                },
            )
        })
        .collect();
    fn walk(
        dir: &DirBuilder,
        prefix: &str,
        out: &mut BTreeMap<String, Node>,
        commit: usize,
    ) -> [u8; 20] {
        // Git sorts tree entries by name, comparing directories as `name/`.
        let mut entries: Vec<(String, &str, [u8; 20])> = Vec::new();
        for (name, oid) in &dir.files {
            let mut raw = [0u8; 20];
            let bytes = oid.as_bytes();
            raw[..bytes.len().min(20)].copy_from_slice(&bytes[..bytes.len().min(20)]);
            entries.push((name.clone(), "100644", raw));
        }
        for (name, sub) in &dir.dirs {
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let raw = walk(sub, &path, out, commit);
            out.insert(
                path,
                Node {
                    kind: NodeKind::Dir {
                        oid: Digest::GitSha1(raw),
                    },
                    last_commit: commit,
                },
            );
            entries.push((format!("{name}/"), "40000", raw));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut body = Vec::new();
        for (name, mode, raw) in &entries {
            body.extend_from_slice(mode.as_bytes());
            body.push(b' ');
            body.extend_from_slice(name.trim_end_matches('/').as_bytes());
            body.push(0);
            body.extend_from_slice(raw);
        }
        let mut h = Sha1::new();
        h.update(format!("tree {}\0", body.len()));
        h.update(&body);
        h.finalize().into()
    }
    walk(&root, "", &mut out, commit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert!(is_hub_date("2025-05-21T10:00:00Z"));
        assert!(is_hub_date("2025-05-21T10:00:00.123Z"));
        assert!(!is_hub_date("2025-05-21 10:00:00Z"));
        assert!(!is_hub_date("2025-05-21T10:00:00+00:00"));
    }

    #[test]
    fn tree_oid_matches_git() {
        // `mkdir d; printf 'hello\n' > d/b; git add d; git write-tree`:
        // `git cat-file -p` of the root shows d as this tree.
        let meta = FileMeta {
            size: 6,
            oid: Digest::GitSha1(git_blob_sha1(b"hello\n")),
            lfs: None,
            content: Content::Synthetic { seed: 0, size: 6 },
        };
        let files = BTreeMap::from([("a".to_owned(), meta.clone()), ("d/b".to_owned(), meta)]);
        let tree = build_tree(files, 0);
        assert_eq!(
            tree["d"].oid().to_string(),
            "f09792be40f18f537c28b624b7bc7771f25082e1",
            "git tree id of a single `b` blob holding hello"
        );
    }
}
