//! Resolves manifest dependencies to locked commits and per-variant hashes using
//! the Hub API (no file downloads).
//!
//! For each dependency: list the repository's refs and pick a tag or branch
//! ([`crate::lock::requirement`]), or resolve a revision through the repo info
//! endpoint; then list the commit's files recursively and compute the
//! `git_lfs_concat` hash of every build variant ([`variant_hashes`]).

use indexmap::IndexMap;
use kernels_types::CommitId;

use crate::lock::cooldown::{Cooldown, HeldBack};
use crate::lock::manifest::Dependency;
use crate::lock::requirement::{NoMatch, Requirement, select_branch, select_tag};
use crate::lock::short_commit::{self, ShortCommitError};
use kernels_hub::{HubClient, HubError};
use kernels_types::file_set::{self, FileSet};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, RepoType, TreeEntry};

/// How many dependencies are resolved at the same time (each one a chain of
/// dependent requests: refs, then the listing). Wide, so that a lock of up to
/// 128 dependencies costs about the round trips of one chain, not of
/// `dependencies / 8` chains (issue 26); bounded, so that a very large
/// manifest does not open a socket per dependency (well under the usual limit
/// of 1024 open files). Every request goes through
/// the one connection pool of the [`HubClient`], which keeps the connections
/// for the next stage.
pub const MAX_IN_FLIGHT: usize = 128;

/// Resolution settings.
#[derive(Debug, Clone)]
pub struct Resolver {
    client: HubClient,
    repo_type: RepoType,
    exclude_bytecode: bool,
    cooldown: Option<Cooldown>,
    reads_specifiers: bool,
    tag_pins: bool,
}

/// A dependency resolved to a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedKernel {
    /// Hub repository id.
    pub repo_id: RepoId,
    /// What the manifest asked for.
    pub requirement: Requirement,
    /// The tag or branch chosen (`v0.1.1`, `v1`), or the revision as written.
    pub chosen: String,
    /// Locked commit (SHA-1).
    pub commit: CommitId,
    /// Variant name → `sha256-…` hash, sorted by name bytes.
    pub variants: IndexMap<String, String>,
    /// Non-fatal remarks, for example that a newer version exists.
    pub warnings: Vec<String>,
    /// What the release cooldown held back, when it changed the commit.
    pub held_back: Option<HeldBack>,
}

/// A requirement resolved to a commit, before any file listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedCommit {
    /// The tag or branch chosen (`v0.1.1`, `v1`), or the revision as written.
    pub chosen: String,
    /// The commit (SHA-1).
    pub commit: CommitId,
    /// Non-fatal remarks, for example that a newer version exists.
    pub warnings: Vec<String>,
    /// What the release cooldown held back, when it changed the commit.
    pub held_back: Option<HeldBack>,
}

/// Why a dependency cannot be resolved.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ResolveError {
    /// No `v<version>` tag satisfies a version specifier.
    #[error("no version of `{repo_id}` satisfies {requirement}")]
    #[diagnostic(code(kernels::resolve::no_matching_version))]
    NoMatchingTag {
        /// The repository.
        repo_id: RepoId,
        /// The requirement, as text.
        requirement: String,
        /// Available versions and what to do.
        #[help]
        help: String,
    },

    /// Branch `vN` does not exist.
    #[error("version {version} of `{repo_id}` not found (no branch `v{version}`)")]
    #[diagnostic(code(kernels::resolve::no_such_version))]
    NoBranch {
        /// The repository.
        repo_id: RepoId,
        /// The requested version.
        version: u64,
        /// Available versions and what to do.
        #[help]
        help: String,
    },

    /// Every commit the requirement allows is newer than the cooldown's cut-off.
    #[error(
        "every commit of `{repo_id}` that {requirement} allows is newer than the cut-off {cutoff} ({setting})"
    )]
    #[diagnostic(
        code(kernels::resolve::cooldown),
        help(
            "wait until a commit is older than the cut-off, exempt the repository with `exclude-newer-package = {{ \"{repo_id}\" = false }}` under [tool.kernels] of pyproject.toml, or shorten `exclude-newer`"
        )
    )]
    HeldBack {
        /// The repository.
        repo_id: RepoId,
        /// The requirement, as text.
        requirement: String,
        /// The cut-off.
        cutoff: jiff::Timestamp,
        /// The setting it came from (`exclude-newer = "7 days"`).
        setting: String,
    },

    /// The Hub request failed (repository or revision unknown, network, ...).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),

    /// An abbreviated commit `revision` names no commit, or several.
    #[error(transparent)]
    #[diagnostic(transparent)]
    ShortCommit(#[from] ShortCommitError),

    /// The Hub answered with a commit id that is not 40 hex digits (a
    /// SHA-256 commit, which the lock formats of ≤0.16 cannot hold).
    #[error(
        "the Hub returned `{commit}` as the commit of `{repo_id}` at `{chosen}`, which is not a 40-hex commit id"
    )]
    #[diagnostic(code(kernels::resolve::bad_commit))]
    BadCommit {
        /// The repository.
        repo_id: RepoId,
        /// The ref that was resolved.
        chosen: String,
        /// What the Hub sent.
        commit: CommitId,
    },

    /// A file listing entry carries an unusable digest.
    #[error("file `{path}` of `{repo_id}` at {commit} has an invalid digest `{digest}`")]
    #[diagnostic(code(kernels::resolve::bad_digest))]
    BadDigest {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// Repo-relative path.
        path: String,
        /// The digest text.
        digest: String,
    },

    /// A listing names a path that could leave a snapshot ([`kernels_types::repo_path`]).
    #[error(
        "the Hub listing of `{repo_id}` at {commit} has an unsafe path `{}`: {reason}",
        kernels_types::text::escape(path)
    )]
    #[diagnostic(
        code(kernels::resolve::unsafe_path),
        help("the server's listing is malformed or hostile; report it to the mirror's operator")
    )]
    UnsafePath {
        /// The repository.
        repo_id: RepoId,
        /// The commit.
        commit: CommitId,
        /// The refused path, as listed.
        path: String,
        /// What is wrong with it.
        reason: kernels_types::repo_path::RepoPathError,
    },
}

impl Resolver {
    /// A resolver for repositories of `repo_type`. Bytecode (`*.pyc`,
    /// `__pycache__/`) is hashed like any file unless
    /// [`Resolver::exclude_bytecode`] is set (reference 0.16 behaviour).
    pub fn new(client: HubClient, repo_type: RepoType) -> Self {
        Resolver {
            client,
            repo_type,
            exclude_bytecode: false,
            cooldown: None,
            reads_specifiers: true,
            tag_pins: true,
        }
    }

    /// Whether the target runtime reads version specifier strings (false for
    /// kernels 0.14+): hints suggest a specifier only to runtimes that read it.
    /// `tag_pins` says whether a `{ revision = "<tag>" }` pin is suggested
    /// without looking at the tag (not for runtimes that follow kernel
    /// dependencies, which need a metadata.json in every variant of it).
    pub fn reads_specifiers(mut self, reads: bool, tag_pins: bool) -> Self {
        self.reads_specifiers = reads;
        self.tag_pins = tag_pins;
        self
    }

    /// Applies the release cooldown to branch and tag requirements of the
    /// repositories it covers ([`crate::lock::cooldown`]).
    pub fn cooldown(mut self, cooldown: Option<Cooldown>) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Leaves `.pyc` files and `__pycache__` directories out of variant hashes.
    pub fn exclude_bytecode(mut self, exclude: bool) -> Self {
        self.exclude_bytecode = exclude;
        self
    }

    /// The repository type this resolver queries.
    pub fn repo_type(&self) -> RepoType {
        self.repo_type
    }

    /// Resolves one dependency: the commit, then its variant hashes.
    pub async fn resolve(&self, dependency: &Dependency) -> Result<ResolvedKernel, ResolveError> {
        let repo_id = &dependency.repo_id;
        let ResolvedCommit {
            chosen,
            commit,
            warnings,
            held_back,
        } = self
            .resolve_commit(repo_id, &dependency.requirement)
            .await?;
        let entries = self
            .client
            .list_tree(self.repo_type, repo_id, commit.as_str(), "", true)
            .await?;
        kernels_types::repo_path::check_entries(&entries).map_err(|(path, reason)| {
            ResolveError::UnsafePath {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
                path,
                reason,
            }
        })?;
        let variants =
            variant_hashes(&entries, self.exclude_bytecode).map_err(|(path, digest)| {
                ResolveError::BadDigest {
                    repo_id: repo_id.clone(),
                    commit: commit.clone(),
                    path,
                    digest,
                }
            })?;
        Ok(ResolvedKernel {
            repo_id: repo_id.clone(),
            requirement: dependency.requirement.clone(),
            chosen,
            commit,
            variants,
            warnings,
            held_back,
        })
    }

    /// Resolves a requirement to a SHA-1 commit without listing
    /// files: the branch `vN`, the best matching tag, or the revision as the Hub
    /// resolves it. Under a cooldown, a branch resolves to the newest commit
    /// of its history at or before the cut-off, a tag requirement to the
    /// highest matching tag whose commit is.
    pub async fn resolve_commit(
        &self,
        repo_id: &RepoId,
        requirement: &Requirement,
    ) -> Result<ResolvedCommit, ResolveError> {
        let mut warnings = Vec::new();
        let cooldown = self.cooldown.as_ref().filter(|c| c.applies_to(repo_id));
        let (chosen, commit, held_back) = match requirement {
            Requirement::Revision(revision) => (
                revision.clone(),
                self.revision(repo_id, revision).await?,
                None,
            ),
            Requirement::Branch(n) => {
                let (chosen, head) = self.branch(repo_id, *n, &mut warnings).await?;
                match cooldown {
                    None => (chosen, head, None),
                    Some(cooldown) => {
                        let (commit, held_back) = self
                            .admitted_on_branch(cooldown, repo_id, requirement, &chosen, &head)
                            .await?;
                        (chosen, commit, held_back)
                    }
                }
            }
            requirement @ (Requirement::Pep440(_) | Requirement::Semver(_)) => {
                self.tag(repo_id, requirement, cooldown).await?
            }
        };
        if !commit.is_sha1() {
            return Err(ResolveError::BadCommit {
                repo_id: repo_id.clone(),
                chosen,
                commit,
            });
        }
        Ok(ResolvedCommit {
            chosen,
            commit,
            warnings,
            held_back,
        })
    }

    /// The commit `revision` names: what the Hub resolves it to, else, for an
    /// abbreviated commit the Hub does not know, the one commit it abbreviates
    /// ([`short_commit::expand`]).
    async fn revision(&self, repo_id: &RepoId, revision: &str) -> Result<CommitId, ResolveError> {
        match self
            .client
            .repo_info(self.repo_type, repo_id, revision)
            .await
        {
            Ok(info) => Ok(info.sha),
            Err(HubError::RevisionNotFound { .. }) if short_commit::is_short_commit(revision) => {
                Ok(short_commit::expand(&self.client, self.repo_type, repo_id, revision).await?)
            }
            Err(err) => Err(err.into()),
        }
    }

    /// Branch `v<n>` and its head, warning when a higher version exists.
    async fn branch(
        &self,
        repo_id: &RepoId,
        n: u64,
        warnings: &mut Vec<String>,
    ) -> Result<(String, CommitId), ResolveError> {
        let refs = self.client.list_refs(self.repo_type, repo_id).await?;
        let selected =
            select_branch(n, &refs.branches).map_err(|no_match| ResolveError::NoBranch {
                repo_id: repo_id.clone(),
                version: n,
                help: branch_help(&no_match, &refs.tags, self.reads_specifiers, self.tag_pins),
            })?;
        if let Some(latest) = selected.latest.as_deref()
            && latest.parse::<i128>().is_ok_and(|l| l > i128::from(n))
        {
            warnings.push(format!(
                "`{repo_id}` is locked to version {n}, but version {latest} is available"
            ));
        }
        Ok((selected.git_ref.name, selected.git_ref.target_commit))
    }

    /// The newest commit of branch `chosen` (at `head`) the cooldown admits.
    async fn admitted_on_branch(
        &self,
        cooldown: &Cooldown,
        repo_id: &RepoId,
        requirement: &Requirement,
        chosen: &str,
        head: &CommitId,
    ) -> Result<(CommitId, Option<HeldBack>), ResolveError> {
        let found = cooldown
            .newest_admitted(&self.client, self.repo_type, repo_id, head.as_str())
            .await?;
        let Some((locked, skipped)) = found else {
            return Err(held_back_error(cooldown, repo_id, requirement));
        };
        let held_back = cooldown.held_back(repo_id, chosen, locked.clone(), &skipped);
        Ok((locked.id, held_back))
    }

    /// The highest tag matching `requirement`; under `cooldown`, the highest
    /// whose commit it admits (one commits request per tag tried).
    async fn tag(
        &self,
        repo_id: &RepoId,
        requirement: &Requirement,
        cooldown: Option<&Cooldown>,
    ) -> Result<(String, CommitId, Option<HeldBack>), ResolveError> {
        let refs = self.client.list_refs(self.repo_type, repo_id).await?;
        let mut tags = refs.tags.clone();
        let mut skipped = Vec::new();
        loop {
            let selected = match select_tag(requirement, &tags) {
                Ok(selected) => selected,
                Err(_) if !skipped.is_empty() => {
                    let cooldown = cooldown.expect("tags are only skipped under a cooldown");
                    return Err(held_back_error(cooldown, repo_id, requirement));
                }
                Err(no_match) => {
                    return Err(no_matching_tag(repo_id, requirement, &refs, &no_match));
                }
            };
            let name = selected.git_ref.name;
            let Some(cooldown) = cooldown else {
                return Ok((name, selected.git_ref.target_commit, None));
            };
            let sha = selected.git_ref.target_commit;
            let info = self
                .client
                .list_commits_until(self.repo_type, repo_id, sha.as_str(), |_| true)
                .await?
                .into_iter()
                .next()
                .unwrap_or(kernels_types::wire::CommitInfo {
                    id: sha.clone(),
                    title: String::new(),
                    date: String::new(),
                });
            if cooldown.admits(&info.date) {
                let held_back = cooldown.held_back(repo_id, &name, info, &skipped);
                return Ok((name, sha, held_back));
            }
            tags.retain(|t| t.name != name);
            skipped.push(info);
        }
    }
}

/// No commit a requirement allows is old enough for `cooldown`.
fn held_back_error(
    cooldown: &Cooldown,
    repo_id: &RepoId,
    requirement: &Requirement,
) -> ResolveError {
    ResolveError::HeldBack {
        repo_id: repo_id.clone(),
        requirement: requirement.to_string(),
        cutoff: cooldown.cutoff,
        setting: cooldown.describe(),
    }
}

/// No tag matches a version requirement: the versions there are, or the
/// version branches to use instead.
fn no_matching_tag(
    repo_id: &RepoId,
    requirement: &Requirement,
    refs: &kernels_types::wire::GitRefs,
    no_match: &NoMatch,
) -> ResolveError {
    let version_branches: Vec<String> = refs
        .branches
        .iter()
        .filter(|b| crate::lock::requirement::branch_version(&b.name).is_some())
        .map(|b| b.name.clone())
        .collect();
    ResolveError::NoMatchingTag {
        repo_id: repo_id.clone(),
        requirement: requirement.to_string(),
        help: tag_help(no_match, &version_branches),
    }
}

fn tag_help(no_match: &NoMatch, version_branches: &[String]) -> String {
    if no_match.available.is_empty() {
        let mut help = "the repository has no `v<version>` tags".to_owned();
        if !version_branches.is_empty() {
            help.push_str(&format!(
                "; it publishes version branches ({}): write an integer such as `{}` instead of a specifier",
                version_branches.join(", "),
                version_branches[0].trim_start_matches('v')
            ));
        }
        return help;
    }
    let mut help = format!("available versions: {}", no_match.available.join(", "));
    if let Some(closest) = &no_match.closest {
        help.push_str(&format!("; closest: {closest}"));
    }
    help
}

/// The help of [`ResolveError::NoBranch`]: the versions there are, or, without
/// version branches, the newest tag to pin (`tag_pins`), with a specifier only
/// for a runtime that reads one (`reads_specifiers`).
fn branch_help(
    no_match: &NoMatch,
    tags: &[GitRefInfo],
    reads_specifiers: bool,
    tag_pins: bool,
) -> String {
    if no_match.available.is_empty() {
        let mut help = "the repository has no `v<N>` version branches".to_owned();
        let newest = tags
            .iter()
            .filter_map(|t| crate::lock::requirement::tag_version(&t.name).map(|v| (v, &t.name)))
            .max();
        match newest {
            Some((_, tag)) if reads_specifiers => help.push_str(&format!(
                "; it has tags: write a version specifier string such as `\">=0.1.0\"`, or `{{ revision = \"{tag}\" }}`"
            )),
            Some((_, tag)) if tag_pins => help.push_str(&format!(
                ", so the target runtime, which reads integer versions only, cannot lock it by version: pin its newest tag with `{{ revision = \"{tag}\" }}`, or lock for a runtime that reads version specifiers with `--target-runtime 0.13.0`"
            )),
            Some(_) => help.push_str(
                ", so the target runtime, which reads integer versions only, cannot lock it by version; it has release tags: lock for a runtime that reads version specifiers with `--target-runtime 0.13.0`",
            ),
            None if !tags.is_empty() => {
                let names: Vec<&str> = tags.iter().map(|t| t.name.as_str()).collect();
                help.push_str(&format!(
                    "; pin one of its tags ({}) with `{{ revision = \"<tag>\" }}`",
                    names.join(", ")
                ));
            }
            None => {}
        }
        return help;
    }
    let mut help = format!("available versions: {}", no_match.available.join(", "));
    if let Some(closest) = &no_match.closest {
        help.push_str(&format!("; closest: {closest}"));
    }
    help
}

/// The `git_lfs_concat` hash of every build variant of a recursive listing of a
/// commit, by the shared rule of [`file_set::variant_hashes`], with or without
/// bytecode. An unusable digest is returned as `Err((path, digest))`.
pub fn variant_hashes(
    entries: &[TreeEntry],
    exclude_bytecode: bool,
) -> Result<IndexMap<String, String>, (String, String)> {
    Ok(
        file_set::variant_hashes(entries, FileSet::excluding_bytecode(exclude_bytecode))?
            .into_iter()
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::wire::TreeLfs;

    fn file(path: &str, oid: &str, lfs: Option<&str>) -> TreeEntry {
        TreeEntry {
            kind: "file".into(),
            oid: oid.parse().unwrap(),
            size: 1,
            path: path.into(),
            lfs: lfs.map(|oid| TreeLfs {
                oid: oid.parse().unwrap(),
                size: 104,
                pointer_size: 130,
            }),
        }
    }

    #[test]
    fn hashes_variants_like_the_reference() {
        let dir = TreeEntry {
            kind: "directory".into(),
            oid: "0".repeat(40).parse().unwrap(),
            size: 0,
            path: "build/torch-universal".into(),
            ..file("", &"0".repeat(40), None)
        };
        let entries = vec![
            dir,
            file(
                "README.md",
                "1cec5723464b586acbda5ab039a6248d38255033",
                None,
            ),
            file(
                "build/torch28-cxx11-cu128-x86_64-linux/activation/_ops.py",
                "f50c130ea60d9ad99bd2dbe162726789440e096e",
                None,
            ),
            file(
                "build/torch28-cxx11-cu128-x86_64-linux/activation/_activation_abc.abi3.so",
                "0".repeat(40).as_str(),
                Some("f1b0a36cec27b90029c4cd36c1f9eb8cd40743ccbdf9e3d2a8773b92e86fdb4c"),
            ),
            file(
                "build/torch28-cxx11-cu128-x86_64-linux/activation/__init__.py",
                "1cec5723464b586acbda5ab039a6248d38255033",
                None,
            ),
            file(
                "build/torch-universal/activation/__init__.py",
                "7d4290a117a4ddcc11daae7ea675841033830c8f",
                None,
            ),
            file(
                "build/torch-universal/activation/__pycache__/x.cpython-311.pyc",
                "7d4290a117a4ddcc11daae7ea675841033830c8f",
                None,
            ),
            file(
                "build/tvm-ffi-cu128/x.py",
                "7d4290a117a4ddcc11daae7ea675841033830c8f",
                None,
            ),
        ];
        let variants = variant_hashes(&entries, true).unwrap();
        let names: Vec<&str> = variants.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["torch-universal", "torch28-cxx11-cu128-x86_64-linux"]
        );
        assert_eq!(
            variants["torch-universal"],
            "sha256-acd5beb6dc075df69631dbe4d0677f5b16633924d4ee900be343810f19fb55b1"
        );
        assert_eq!(
            variants["torch28-cxx11-cu128-x86_64-linux"],
            "sha256-8d1101bae14667a764e527c75e7a0fa1dbf6b4ab1ccd5e5fe973e655fba15715"
        );
        let with_bytecode = variant_hashes(&entries, false).unwrap();
        assert_ne!(
            with_bytecode["torch-universal"],
            variants["torch-universal"]
        );
    }

    #[test]
    fn bad_digest_is_reported() {
        // An LFS file listed with a 40-digit `lfs.oid`: not a SHA-256.
        let sha1 = "a".repeat(40);
        let entries = vec![file("build/torch-cpu/a.py", &sha1, Some(&sha1))];
        assert_eq!(
            variant_hashes(&entries, false).unwrap_err(),
            ("build/torch-cpu/a.py".to_owned(), sha1)
        );
    }
}
