//! Writing a mirror directory (`kernels mirror`): the other half of
//! [`crate::mirror`], using the same `repo.toml`, `commit.toml` and org file
//! definitions, so the format has one definition.
//!
//! What the writer guarantees (see `docs/mirror-format.md`):
//!
//! * **Atomic per commit**: a commit's folder is built under
//!   `.kernels-mirror/staging/` and renamed into `commits/<sha>` only when
//!   complete; `repo.toml` is rewritten last, by [`kernels_fs::write_atomic`]
//!   (temporary file, fsync, rename, directory fsync). A new repository is
//!   staged whole and renamed into `repos/` in one step. An interrupted run
//!   leaves the mirror as it was (at most a commit folder not yet listed,
//!   which the next run removes before writing that repository again).
//! * **Files stay files**: every file of a commit tree is a hard link to a
//!   verified blob of the writer's content store (`.kernels-mirror/store/`,
//!   Hugging Face cache layout), so content shared by several commits is on
//!   disk once; where hard links are not possible it is copied.
//! * **Commits are immutable**: existing commit folders are never changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_types::CommitId;
use kernels_types::wire::RepoType;

use crate::mirror::{CommitToml, OrgToml, RepoToml, is_hub_date, is_sha, read_toml};

/// The writer's own folder at the mirror root (ignored by `kernels serve`).
pub const WORK_DIR: &str = ".kernels-mirror";

/// Why a mirror cannot be written.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WriteError {
    /// The output folder holds something other than a mirror.
    #[error("{} is not empty and is not a mirror directory (it has no `repos/` folder)", .0.display())]
    #[diagnostic(
        code(kernels::mirror::not_a_mirror),
        help(
            "pass an empty or new folder, or a mirror written earlier (it holds `repos/`); nothing was written"
        )
    )]
    NotAMirror(PathBuf),

    /// A file or folder could not be read or written (includes a full disk).
    #[error("cannot write {}: {source}", path.display())]
    #[diagnostic(
        code(kernels::mirror::io),
        help(
            "the mirror is unchanged for the commit being written; free space or fix permissions and run `kernels mirror` again (verified files are kept and not fetched again)"
        )
    )]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },

    /// An existing metadata file of the mirror does not parse.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Existing(#[from] crate::mirror::MirrorError),

    /// A value given to the writer cannot be stored.
    #[error("cannot store {what}: {problem}")]
    #[diagnostic(code(kernels::mirror::invalid))]
    Invalid {
        /// What.
        what: String,
        /// Why.
        problem: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One file of a new commit.
#[derive(Debug, Clone)]
pub struct NewFile {
    /// Repo-relative path with `/` separators.
    pub path: String,
    /// A verified file holding the content (hard-linked, else copied).
    pub source: PathBuf,
    /// Whether the file is stored with Git LFS upstream.
    pub lfs: bool,
}

/// A commit to add to a repository.
#[derive(Debug, Clone)]
pub struct NewCommit {
    /// The commit id (SHA-1); also the commit's folder name (label).
    pub sha: CommitId,
    /// Commit title, if known.
    pub title: Option<String>,
    /// Commit date (`YYYY-MM-DDTHH:MM:SS[.fff]Z`), if known.
    pub date: Option<String>,
    /// The nearest earlier commit of the mirror in this commit's history
    /// (`None`: a root commit in the mirror).
    pub parent: Option<CommitId>,
    /// Every file of the commit.
    pub files: Vec<NewFile>,
}

/// What to write for one repository.
#[derive(Debug, Clone)]
pub struct RepoUpdate {
    /// Primary type (the folder `repos/kernels` or `repos/models`).
    pub kind: RepoType,
    /// `owner/name`.
    pub id: String,
    /// Other types it answers as.
    pub also_serve_as: Vec<RepoType>,
    /// Commits not yet in the mirror, oldest first.
    pub commits: Vec<NewCommit>,
    /// Branch name → commit sha (in the mirror after this update).
    pub branches: BTreeMap<String, String>,
    /// Tag name → commit sha.
    pub tags: BTreeMap<String, String>,
    /// The default branch (must be in `branches` or already in the mirror).
    pub default_branch: String,
}

/// A repository already in the mirror.
#[derive(Debug, Clone, Default)]
pub struct ExistingRepo {
    /// Commit shas, in `repo.toml` order.
    pub commits: Vec<String>,
}

/// A mirror directory opened for writing.
#[derive(Debug)]
pub struct MirrorWriter {
    root: PathBuf,
    work: PathBuf,
    staged: std::sync::atomic::AtomicU64,
}

fn type_folder(kind: RepoType) -> &'static str {
    match kind {
        RepoType::Model => "models",
        _ => "kernels",
    }
}

fn type_name(kind: RepoType) -> &'static str {
    match kind {
        RepoType::Model => "model",
        _ => "kernel",
    }
}

impl MirrorWriter {
    /// Checks, without writing, that `root` is missing, empty or a mirror.
    pub fn check(root: &Path) -> Result<(), WriteError> {
        if root.exists() {
            let is_mirror = root.join("repos").is_dir();
            let empty = fs_err::read_dir(root)
                .map_err(|e| WriteError::Io {
                    path: root.to_owned(),
                    source: std::io::Error::new(e.kind(), e.to_string()),
                })?
                .next()
                .is_none();
            if !is_mirror && !empty {
                return Err(WriteError::NotAMirror(root.to_owned()));
            }
        }
        Ok(())
    }

    /// Opens (creating it if needed) the mirror at `root`. Refuses a folder
    /// that is neither empty nor a mirror, before writing anything.
    pub fn open(root: &Path) -> Result<MirrorWriter, WriteError> {
        Self::check(root)?;
        let work = root.join(WORK_DIR);
        for dir in [root.join("repos"), work.join("store")] {
            fs_err::create_dir_all(&dir).map_err(io(&dir))?;
        }
        // Leftovers of an interrupted run: never part of the mirror.
        let staging = work.join("staging");
        if staging.exists() {
            fs_err::remove_dir_all(&staging).map_err(io(&staging))?;
        }
        fs_err::create_dir_all(&staging).map_err(io(&staging))?;
        Ok(MirrorWriter {
            root: root.to_owned(),
            work,
            staged: Default::default(),
        })
    }

    /// The mirror root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The content store (a Hugging Face cache layout) whose verified blobs
    /// the commit trees link to.
    pub fn store_dir(&self) -> PathBuf {
        self.work.join("store")
    }

    fn repo_dir(&self, kind: RepoType, id: &str) -> PathBuf {
        self.root.join("repos").join(type_folder(kind)).join(id)
    }

    /// The repository `id` if the mirror holds it as `kind`.
    pub fn existing(&self, kind: RepoType, id: &str) -> Result<Option<ExistingRepo>, WriteError> {
        let path = self.repo_dir(kind, id).join("repo.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let parsed: RepoToml = read_toml(&path)?;
        let dir = self.repo_dir(kind, id).join("commits");
        let mut commits = Vec::with_capacity(parsed.commits.len());
        for label in &parsed.commits {
            let meta = dir.join(label).join("commit.toml");
            let sha = if meta.is_file() {
                read_toml::<CommitToml>(&meta)?.sha
            } else {
                None
            };
            commits.push(sha.unwrap_or_else(|| label.clone()));
        }
        Ok(Some(ExistingRepo { commits }))
    }

    /// Writes `orgs/<name>.toml` (atomically).
    pub fn write_org(
        &self,
        name: &str,
        fullname: &str,
        trusted_kernel_publisher: bool,
    ) -> Result<(), WriteError> {
        if name.is_empty() || name.contains(['/', '\\', '.']) {
            return Err(WriteError::Invalid {
                what: format!("organization `{name}`"),
                problem: "not a plain name".into(),
            });
        }
        let dir = self.root.join("orgs");
        fs_err::create_dir_all(&dir).map_err(io(&dir))?;
        let org = OrgToml {
            fullname: Some(fullname.to_owned()),
            trusted_kernel_publisher,
        };
        self.write_toml(&dir.join(format!("{name}.toml")), &org)
    }

    fn write_toml<T: serde::Serialize>(&self, path: &Path, value: &T) -> Result<(), WriteError> {
        let text = toml::to_string(value).map_err(|err| WriteError::Invalid {
            what: path.display().to_string(),
            problem: err.to_string(),
        })?;
        kernels_fs::write_atomic(path, text.as_bytes()).map_err(io(path))
    }

    fn stage_path(&self, what: &str) -> PathBuf {
        let n = self
            .staged
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.work
            .join("staging")
            .join(format!("{what}-{}-{n}", std::process::id()))
    }

    /// Builds one commit folder under the staging area.
    fn stage_commit(&self, commit: &NewCommit) -> Result<PathBuf, WriteError> {
        if !commit.sha.is_sha1() {
            return Err(WriteError::Invalid {
                what: format!("commit `{}`", commit.sha),
                problem: "not 40 lowercase hex digits".into(),
            });
        }
        let dir = self.stage_path("commit");
        let result = (|| {
            let tree = dir.join("tree");
            fs_err::create_dir_all(&tree).map_err(io(&tree))?;
            let mut lfs_files = Vec::new();
            for file in &commit.files {
                if kernels_types::repo_path::check(&file.path).is_err() {
                    return Err(WriteError::Invalid {
                        what: format!("file `{}` of commit {}", file.path, commit.sha),
                        problem: "not a plain relative path".into(),
                    });
                }
                let target = tree.join(&file.path);
                if let Some(parent) = target.parent() {
                    fs_err::create_dir_all(parent).map_err(io(parent))?;
                }
                if fs_err::hard_link(&file.source, &target).is_err() {
                    fs_err::copy(&file.source, &target).map_err(io(&target))?;
                }
                if file.lfs {
                    lfs_files.push(file.path.clone());
                }
            }
            lfs_files.sort();
            let meta = CommitToml {
                sha: Some(commit.sha.to_string()),
                parent: Some(
                    commit
                        .parent
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                ),
                title: commit.title.clone(),
                date: commit.date.clone().filter(|d| is_hub_date(d)),
                lfs: None,
                lfs_files: Some(lfs_files),
            };
            self.write_toml(&dir.join("commit.toml"), &meta)
        })();
        if result.is_err() {
            let _ = fs_err::remove_dir_all(&dir);
        }
        result.map(|()| dir)
    }

    /// Adds `update.commits` to the repository (creating it) and sets its
    /// refs; see the module docs for the order of writes.
    pub fn write_repo(&self, update: &RepoUpdate) -> Result<(), WriteError> {
        let repo_dir = self.repo_dir(update.kind, &update.id);
        let toml_path = repo_dir.join("repo.toml");
        let mut parsed: RepoToml = if toml_path.is_file() {
            read_toml(&toml_path)?
        } else {
            RepoToml::default()
        };
        let is_new = !toml_path.is_file();
        let mut staged = Vec::new();
        for commit in &update.commits {
            match self.stage_commit(commit) {
                Ok(dir) => staged.push((commit.sha.to_string(), dir)),
                Err(err) => {
                    for (_, dir) in staged {
                        let _ = fs_err::remove_dir_all(dir);
                    }
                    return Err(err);
                }
            }
        }
        for (sha, _) in &staged {
            if !parsed.commits.contains(sha) {
                parsed.commits.push(sha.clone());
            }
        }
        for kind in &update.also_serve_as {
            let name = type_name(*kind).to_owned();
            if *kind != update.kind && !parsed.also_serve_as.contains(&name) {
                parsed.also_serve_as.push(name);
            }
        }
        parsed.branches.extend(update.branches.clone());
        parsed.tags.extend(update.tags.clone());
        parsed.default_branch =
            (update.default_branch != "main").then(|| update.default_branch.clone());

        if is_new {
            let stage = self.stage_path("repo");
            let commits = stage.join("commits");
            fs_err::create_dir_all(&commits).map_err(io(&commits))?;
            for (sha, dir) in &staged {
                let target = commits.join(sha);
                fs_err::rename(dir, &target).map_err(io(&target))?;
            }
            self.write_toml(&stage.join("repo.toml"), &parsed)?;
            if let Some(owner) = repo_dir.parent() {
                fs_err::create_dir_all(owner).map_err(io(owner))?;
            }
            if repo_dir.exists() {
                // A folder without `repo.toml` is not a repository of the
                // mirror (the server refuses it); replace it.
                fs_err::remove_dir_all(&repo_dir).map_err(io(&repo_dir))?;
            }
            return fs_err::rename(&stage, &repo_dir).map_err(io(&repo_dir));
        }

        let commits = repo_dir.join("commits");
        fs_err::create_dir_all(&commits).map_err(io(&commits))?;
        // Commit folders that `repo.toml` does not list are leftovers of a run
        // stopped between renames: remove those this writer names (40 hex).
        for entry in fs_err::read_dir(&commits).map_err(io(&commits))? {
            let entry = entry.map_err(io(&commits))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let listed =
                parsed.commits.contains(&name) && !staged.iter().any(|(sha, _)| *sha == name);
            if !listed && is_sha(&name) {
                let path = entry.path();
                fs_err::remove_dir_all(&path).map_err(io(&path))?;
            }
        }
        for (sha, dir) in &staged {
            let target = commits.join(sha);
            fs_err::rename(dir, &target).map_err(io(&target))?;
        }
        self.write_toml(&toml_path, &parsed)
    }
}
