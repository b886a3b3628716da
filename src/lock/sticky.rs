//! Sticky resolution: which entries of an existing `kernels.lock` are kept, and
//! what changed between two locks.
//!
//! `kernels lock` keeps a locked entry while its requirement is unchanged and
//! still satisfied, as cargo and uv do; only new, changed or unsatisfied entries
//! are resolved again (and everything named by `--upgrade` / `--upgrade-package`).
//!
//! * `KernelLocks` files (0.17) record the requirement of every entry
//!   (`version` or `revision`), so an entry is kept exactly when the manifest (or
//!   a `kernel-depends` entry) asks for the same thing. No request is needed to
//!   decide; this is cargo's rule for git branches.
//! * Variant-hash files (≤0.16) record only the commit. Whether the commit is
//!   still a possible resolution of the current requirement is decided from the
//!   Hub's refs and the commit history of branches ([`keep_hashed`]); the rule is
//!   documented in `docs/lockfile.md`.
//!
//! [`changes`] compares the old and new locks entry by entry, for the
//! `Updated …` / `Added …` / `Removed …` lines and their JSON form.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

use crate::lock::format::{KernelVersion, Lockfile};
use crate::lock::label::commit_label;
use crate::lock::requirement::{Requirement, branch_version, select_tag};
use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, GitRefs, RepoType};

/// Which locked entries may move to a newer version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Upgrade {
    /// Keep every entry that is still satisfied (the default).
    #[default]
    None,
    /// Resolve every entry again (`--upgrade`).
    All,
    /// Resolve these repositories again (`--upgrade-package`), keep the rest.
    Packages(Vec<RepoId>),
}

impl Upgrade {
    /// Whether the locked entry of `repo_id` must be resolved again.
    pub fn covers(&self, repo_id: &str) -> bool {
        match self {
            Upgrade::None => false,
            Upgrade::All => true,
            Upgrade::Packages(repos) => repos.iter().any(|r| r.as_str() == repo_id),
        }
    }
}

/// The decision for one variant-hash entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The locked commit is still a resolution of the requirement; `label` is the
    /// ref that proves it (`v1`, `v0.1.1`, the revision).
    Keep {
        /// The ref name.
        label: String,
        /// Whether that ref points at the locked commit itself (a branch's
        /// head, a tag), not only has it in its history.
        at: bool,
    },
    /// No ref proves the locked commit any more (no tag points at it: its tag
    /// was deleted or moved), but nothing says the requirement changed either.
    /// `--upgrade-package` of other entries keeps it as locked (as cargo keeps
    /// a yanked locked version); any other lock resolves it again.
    Unproven,
    /// The entry must be resolved again; `old_label` names what the locked
    /// commit was, when a ref says so.
    Resolve {
        /// A ref at (or containing) the locked commit, when one is known.
        old_label: Option<String>,
    },
}

fn is_hex_commit(s: &str) -> bool {
    s.len() <= 40 && CommitId::is_abbreviation(s)
}

/// Decides whether the variant-hash entry of `repo_id` locked at `commit` is kept
/// for `requirement`:
///
/// * a version specifier: a `v<version>` tag that satisfies it points at the
///   commit (a deleted or moved tag no longer proves anything: with no tag at
///   the commit the verdict is [`Verdict::Unproven`]);
/// * an integer `N`: the commit is the head of branch `vN`, or it is in `vN`'s
///   history and in the history of no lower version branch `vM` (`M < N`), to
///   which a shared commit is attributed (so a `v2` that descends from `v1` does
///   not keep a commit locked from `v1`, and a requirement changed from `1` to
///   `2` moves to `v2`'s head; a branch force-moved to history without the
///   commit does not keep it either);
/// * a revision: the commit itself, the commit a tag of that name points at,
///   or a commit in the history of the branch of that name.
///
/// The label of a commit that is resolved again is what a ref at it calls it
/// ([`commit_label`]), or none when no ref points at it any more; for an
/// integer requirement only a release tag or a lower version branch names it.
pub async fn keep_hashed(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    requirement: &Requirement,
    commit: &CommitId,
) -> Result<Verdict, HubError> {
    if let Requirement::Revision(rev) = requirement
        && is_hex_commit(rev)
    {
        let rev = rev.to_ascii_lowercase();
        return Ok(if commit.as_str().starts_with(&rev) {
            Verdict::Keep {
                label: rev,
                at: false,
            }
        } else {
            Verdict::Resolve { old_label: None }
        });
    }
    let refs = client.list_refs(repo_type, repo_id).await?;
    let history = History {
        client,
        repo_type,
        repo_id,
        commit,
        refs: &refs,
    };
    match requirement {
        Requirement::Pep440(_) | Requirement::Semver(_) => Ok(history.keep_tagged(requirement)),
        Requirement::Branch(n) => history.keep_on_branch(i128::from(*n)).await,
        Requirement::Revision(rev) => history.keep_revision(rev).await,
    }
}

/// A locked commit and the refs of its repository, for [`keep_hashed`].
struct History<'a> {
    client: &'a HubClient,
    repo_type: RepoType,
    repo_id: &'a RepoId,
    commit: &'a CommitId,
    refs: &'a GitRefs,
}

impl History<'_> {
    /// Whether `r` points at the locked commit.
    fn at(&self, r: &GitRefInfo) -> bool {
        r.target_commit == *self.commit
    }

    /// The name of the locked commit when it is resolved again: what a ref
    /// that still points at it calls it ([`commit_label`]: its highest release
    /// tag, else its highest version branch), else nothing (docs/lockfile.md:
    /// the old version is shown only when a ref still names the old commit).
    fn old_label(&self) -> Option<String> {
        commit_label(
            self.refs
                .tags
                .iter()
                .filter(|t| self.at(t))
                .map(|t| t.name.as_str()),
            self.refs
                .branches
                .iter()
                .filter(|b| self.at(b))
                .map(|b| b.name.as_str()),
        )
        .map(str::to_owned)
    }

    /// The verdict for a commit that must be resolved again.
    fn resolve(&self) -> Verdict {
        Verdict::Resolve {
            old_label: self.old_label(),
        }
    }

    /// The verdict for a commit that an integer requirement `wanted` must
    /// resolve again. It is named by a release tag at it, else by a lower
    /// version branch at it (the branch it is attributed to: the requirement
    /// changed), else by nothing, so that the line names the commit by the
    /// branch asked for (a `vN` force-pushed away from it), never by another
    /// version the project did not ask for.
    fn resolve_branch(&self, wanted: i128) -> Verdict {
        let tags = self.refs.tags.iter().filter(|t| self.at(t));
        let lower = self
            .refs
            .branches
            .iter()
            .filter(|b| self.at(b) && branch_version(&b.name).is_some_and(|v| v < wanted));
        Verdict::Resolve {
            old_label: commit_label(
                tags.map(|t| t.name.as_str()),
                lower.map(|b| b.name.as_str()),
            )
            .map(str::to_owned),
        }
    }

    /// Whether branch `b` has the locked commit (at its head or in its history).
    async fn contains(&self, b: &GitRefInfo) -> Result<bool, HubError> {
        if self.at(b) {
            return Ok(true);
        }
        self.client
            .is_ancestor(self.repo_type, self.repo_id, &b.name, self.commit)
            .await
    }

    /// A specifier: kept when a matching tag points at the commit.
    fn keep_tagged(&self, requirement: &Requirement) -> Verdict {
        let at: Vec<GitRefInfo> = self
            .refs
            .tags
            .iter()
            .filter(|t| self.at(t))
            .cloned()
            .collect();
        if at.is_empty() {
            return Verdict::Unproven;
        }
        match select_tag(requirement, &at) {
            Ok(selected) => Verdict::Keep {
                label: selected.git_ref.name,
                at: true,
            },
            Err(_) => self.resolve(),
        }
    }

    /// An integer requirement `wanted`: kept when the commit is the head of
    /// branch `v<wanted>`, or in its history and in the history of no lower
    /// version branch. A commit that a lower branch has (a `v2` made from
    /// `v1` and moved on since) is that branch's: the file does not record
    /// what the entry was locked for, and a requirement changed from `1` to
    /// `2` must move to `v2`'s head (issue 42), so such an entry is resolved
    /// again.
    async fn keep_on_branch(&self, wanted: i128) -> Result<Verdict, HubError> {
        let Some(branch) = self
            .refs
            .branches
            .iter()
            .find(|b| branch_version(&b.name) == Some(wanted))
        else {
            return Ok(self.resolve_branch(wanted));
        };
        if self.at(branch) {
            return Ok(Verdict::Keep {
                label: branch.name.clone(),
                at: true,
            });
        }
        if !self.contains(branch).await? {
            // Force-pushed away from `vN`, or never on it.
            return Ok(self.resolve_branch(wanted));
        }
        for lower in self
            .refs
            .branches
            .iter()
            .filter(|b| branch_version(&b.name).is_some_and(|v| v < wanted))
        {
            if self.contains(lower).await? {
                return Ok(self.resolve_branch(wanted));
            }
        }
        Ok(Verdict::Keep {
            label: branch.name.clone(),
            at: false,
        })
    }

    /// A revision: kept when the tag of that name points at the commit, or the
    /// branch of that name has it.
    async fn keep_revision(&self, rev: &str) -> Result<Verdict, HubError> {
        if let Some(tag) = self.refs.tags.iter().find(|t| t.name == rev) {
            return Ok(if self.at(tag) {
                Verdict::Keep {
                    label: rev.to_owned(),
                    at: true,
                }
            } else {
                self.resolve()
            });
        }
        let branch = rev.strip_prefix("refs/heads/").unwrap_or(rev);
        if let Some(b) = self.refs.branches.iter().find(|b| b.name == branch) {
            let at = self.at(b);
            if at
                || self
                    .client
                    .is_ancestor(self.repo_type, self.repo_id, branch, self.commit)
                    .await?
            {
                return Ok(Verdict::Keep {
                    label: rev.to_owned(),
                    at,
                });
            }
        }
        Ok(self.resolve())
    }
}

/// One difference between the old and the new lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    /// A new entry.
    Added {
        /// The repository.
        repo_id: String,
        /// The version, branch, tag or revision it was locked from.
        version: String,
        /// The locked commit.
        commit: CommitId,
    },
    /// An entry that left the lock.
    Removed {
        /// The repository.
        repo_id: String,
        /// What it was locked from, when known.
        version: Option<String>,
        /// The commit it was locked at.
        commit: CommitId,
    },
    /// An entry locked at another commit or from another version.
    Updated {
        /// The repository.
        repo_id: String,
        /// What it was locked from, when known.
        from_version: Option<String>,
        /// What it is locked from now.
        to_version: String,
        /// The old commit.
        from_commit: CommitId,
        /// The new commit.
        to_commit: CommitId,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Added {
                repo_id,
                version,
                commit,
            } => write!(f, "Added {repo_id} {version} ({})", commit.short()),
            Change::Removed {
                repo_id,
                version,
                commit,
            } => match version {
                Some(version) => write!(f, "Removed {repo_id} {version} ({})", commit.short()),
                None => write!(f, "Removed {repo_id} ({})", commit.short()),
            },
            Change::Updated {
                repo_id,
                from_version,
                to_version,
                from_commit,
                to_commit,
            } => {
                write!(f, "Updated {repo_id} ")?;
                match from_version {
                    Some(from) if from != to_version => write!(f, "{from} -> {to_version}")?,
                    _ => write!(f, "{to_version}")?,
                }
                if from_commit == to_commit {
                    // Same commit: only the variant hashes differ (another
                    // runtime's hashing rule, or the files' listing changed).
                    write!(f, " ({}, new variant hashes)", to_commit.short())
                } else {
                    write!(f, " ({} -> {})", from_commit.short(), to_commit.short())
                }
            }
        }
    }
}

/// One entry of a lock as the change report sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    repo_id: String,
    version: Option<String>,
    commit: CommitId,
    variants: Option<Vec<(String, String)>>,
}

fn entries(lock: &Lockfile, labels: &HashMap<String, String>) -> Vec<Entry> {
    match lock {
        Lockfile::VariantHash(locks) => locks
            .iter()
            .map(|l| Entry {
                repo_id: l.repo_id.clone(),
                version: labels.get(&l.repo_id).cloned(),
                commit: l.sha.clone(),
                variants: Some(
                    l.variants
                        .iter()
                        .map(|(k, v)| (k.clone(), v.hash.clone()))
                        .collect(),
                ),
            })
            .collect(),
        Lockfile::KernelLocks(locks) => locks
            .iter()
            .map(|(dep, commit)| Entry {
                repo_id: dep.repo_id.clone(),
                version: Some(match &dep.version {
                    KernelVersion::Version(n) => format!("v{n}"),
                    KernelVersion::Revision(r) => r.clone(),
                }),
                commit: commit.clone(),
                variants: None,
            })
            .collect(),
    }
}

/// The changes from `old` to `new`, in the new lock's order, then removals.
/// `old_labels` / `new_labels` name the ref each variant-hash entry was locked
/// from (repo id → label); `KernelLocks` entries carry theirs. A repository with
/// one entry on each side that differ is `Updated`; other entries are `Added`
/// or `Removed`.
pub fn changes(
    old: Option<&Lockfile>,
    new: &Lockfile,
    old_labels: &HashMap<String, String>,
    new_labels: &HashMap<String, String>,
) -> Vec<Change> {
    // Across formats (a variant-hash lock rewritten as a 0.17 one, or back)
    // the variant hashes are not comparable, since the 0.17 format records
    // none: an entry at the same commit is not a change of that entry (the
    // rewrite itself is reported once, for the whole file).
    let same_format = old.is_none_or(|o| o.format() == new.format());
    let comparable = |mut list: Vec<Entry>| {
        if !same_format {
            list.iter_mut().for_each(|e| e.variants = None);
        }
        list
    };
    let old = comparable(old.map(|o| entries(o, old_labels)).unwrap_or_default());
    let new = comparable(entries(new, new_labels));
    let mut out = Vec::new();
    let count = |list: &[Entry], repo: &str| list.iter().filter(|e| e.repo_id == repo).count();
    for entry in &new {
        if old.contains(entry)
            || old.iter().any(|o| {
                o.repo_id == entry.repo_id
                    && o.commit == entry.commit
                    && o.variants == entry.variants
                    && (o.version == entry.version
                        || o.version.is_none()
                        || entry.version.is_none())
            })
        {
            continue;
        }
        let single = count(&old, &entry.repo_id) == 1 && count(&new, &entry.repo_id) == 1;
        match old.iter().find(|o| o.repo_id == entry.repo_id) {
            Some(o) if single => out.push(Change::Updated {
                repo_id: entry.repo_id.clone(),
                from_version: o.version.clone(),
                to_version: entry.version.clone().unwrap_or_default(),
                from_commit: o.commit.clone(),
                to_commit: entry.commit.clone(),
            }),
            _ => out.push(Change::Added {
                repo_id: entry.repo_id.clone(),
                version: entry.version.clone().unwrap_or_default(),
                commit: entry.commit.clone(),
            }),
        }
    }
    for entry in &old {
        let in_new = new.iter().any(|n| {
            n.repo_id == entry.repo_id
                && (n.version == entry.version
                    || (count(&old, &entry.repo_id) == 1 && count(&new, &entry.repo_id) == 1))
        });
        if !in_new {
            out.push(Change::Removed {
                repo_id: entry.repo_id.clone(),
                version: entry.version.clone(),
                commit: entry.commit.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit id starting with `prefix`.
    fn commit(prefix: &str) -> CommitId {
        format!("{prefix:0<40}").parse().unwrap()
    }

    #[test]
    fn change_lines_read_like_uv() {
        let updated = Change::Updated {
            repo_id: "kernels-community/moe".into(),
            from_version: Some("v0.1.1".into()),
            to_version: "v0.1.2".into(),
            from_commit: commit("abc1234"),
            to_commit: commit("def5678"),
        };
        assert_eq!(
            updated.to_string(),
            "Updated kernels-community/moe v0.1.1 -> v0.1.2 (abc1234 -> def5678)"
        );
        let same = Change::Updated {
            repo_id: "kernels-community/moe".into(),
            from_version: Some("v1".into()),
            to_version: "v1".into(),
            from_commit: commit("abc1234"),
            to_commit: commit("def5678"),
        };
        assert_eq!(
            same.to_string(),
            "Updated kernels-community/moe v1 (abc1234 -> def5678)"
        );
        let rehashed = Change::Updated {
            repo_id: "kernels-community/moe".into(),
            from_version: None,
            to_version: "v1".into(),
            from_commit: commit("abc1234"),
            to_commit: commit("abc1234"),
        };
        assert_eq!(
            rehashed.to_string(),
            "Updated kernels-community/moe v1 (abc1234, new variant hashes)"
        );
    }

    #[test]
    fn a_format_rewrite_at_the_same_commit_is_no_entry_change() {
        let commit = "d".repeat(40);
        let hashed = Lockfile::parse(
            &format!(
                r#"[{{"repo_id": "a/x", "sha": "{commit}", "variants": {{"torch-cpu": {{"hash": "sha256-00", "hash_type": "git_lfs_concat"}}}}}}]"#
            ),
            std::path::Path::new("k.lock"),
        )
        .unwrap();
        let kernel_locks = Lockfile::parse(
            &format!(
                r#"[{{"dependency": {{"repo-id": "a/x", "version": 1}}, "lock": {{"commit": "{commit}"}}}}]"#
            ),
            std::path::Path::new("k.lock"),
        )
        .unwrap();
        let none = HashMap::new();
        assert!(changes(Some(&hashed), &kernel_locks, &none, &none).is_empty());
        assert!(changes(Some(&kernel_locks), &hashed, &none, &none).is_empty());
        // Another commit is still an update.
        let moved = Lockfile::parse(
            &format!(
                r#"[{{"dependency": {{"repo-id": "a/x", "version": 1}}, "lock": {{"commit": "{}"}}}}]"#,
                "e".repeat(40)
            ),
            std::path::Path::new("k.lock"),
        )
        .unwrap();
        let lines: Vec<String> = changes(Some(&hashed), &moved, &none, &none)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(lines, ["Updated a/x v1 (ddddddd -> eeeeeee)"]);
    }

    #[test]
    fn kernel_locks_changes_pair_entries_by_repo() {
        let parse = |text: &str| Lockfile::parse(text, std::path::Path::new("k.lock")).unwrap();
        let entry = |repo: &str, v: u64, c: char| {
            format!(
                r#"{{"dependency": {{"repo-id": "{repo}", "version": {v}}}, "lock": {{"commit": "{}"}}}}"#,
                c.to_string().repeat(40)
            )
        };
        let old = parse(&format!(
            "[{}, {}]",
            entry("a/x", 1, 'a'),
            entry("b/y", 1, 'b')
        ));
        let new = parse(&format!(
            "[{}, {}]",
            entry("a/x", 2, 'c'),
            entry("c/z", 1, 'd')
        ));
        let lines: Vec<String> = changes(Some(&old), &new, &HashMap::new(), &HashMap::new())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "Updated a/x v1 -> v2 (aaaaaaa -> ccccccc)",
                "Added c/z v1 (ddddddd)",
                "Removed b/y v1 (bbbbbbb)"
            ]
        );
        assert!(changes(Some(&old), &old, &HashMap::new(), &HashMap::new()).is_empty());
    }
}
