//! What locking hands back: the options of a run ([`LockOptions`]), the lock
//! with its status lines ([`LockOutcome`]) and each resolved entry ([`Locked`]).

use std::collections::HashMap;

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use serde::Serialize;

use crate::lock::format::{KernelDependency, KernelVersion, Lockfile};
use crate::lock::sticky::Upgrade;

/// Options of [`lock_project`](super::lock_project) beyond the profile.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Repositories locked whatever their publisher's trust status.
    pub trust: Vec<RepoId>,
    /// Lock repositories that only exist as `model` repositories through the
    /// `model` API when the `kernel` API does not know them.
    pub allow_model_repos: bool,
    /// The existing lock: its entries are kept while still satisfied
    /// ([`crate::lock::sticky`]). `None` resolves everything afresh.
    pub previous: Option<Lockfile>,
    /// Which kept entries are resolved again anyway.
    pub upgrade: Upgrade,
    /// The Hub cache: `metadata.json` blobs found there (by the git blob id of
    /// the tree listing) are read instead of fetched, and fetched ones are
    /// stored there, as the 0.17 reference stores them. `None`: no cache.
    pub cache: Option<kernels_cache::HubCache>,
    /// The declared target GPUs (`--cuda-capability`, `[tool.kernels]
    /// cuda-capabilities`, …): each locked kernel is checked for a variant
    /// that fits each ([`crate::lock::fit`]); empty: not checked.
    pub targets: Vec<kernels_types::fit::Target>,
    /// The release cooldown applied to what is resolved anew
    /// ([`crate::lock::cooldown`]); kept entries stay as locked.
    pub cooldown: Option<crate::lock::cooldown::Cooldown>,
}

/// A written-to-be lock with its status lines.
#[derive(Debug, Clone)]
pub struct LockOutcome {
    /// The lock, in the profile's format.
    pub lockfile: Lockfile,
    /// The entries resolved in this run (not kept from the previous lock), in
    /// lock order; each displays as its `Locked …` status line.
    pub locked: Vec<Locked>,
    /// Non-fatal remarks.
    pub warnings: Vec<String>,
    /// The ref each entry is locked from (repo id → `v1`, `v0.1.1`, revision),
    /// for variant-hash locks, whose file does not record it.
    pub labels: HashMap<String, String>,
    /// What the locked commits of the previous lock were known as, for
    /// variant-hash entries that were resolved again.
    pub previous_labels: HashMap<String, String>,
    /// Entries kept from the previous lock without being resolved again.
    pub kept: usize,
    /// Each locked kernel with its variants' metadata, when it was read: every
    /// entry of a 0.17 profile (`kernel-depends` reads it), every entry of a
    /// variant-hash profile when targets are declared; else empty.
    pub variants: Vec<crate::lock::fit::LockedVariants>,
    /// The declared targets a locked kernel has no variant for, or cannot be
    /// checked for, in lock then target order.
    pub fit: Vec<crate::lock::fit::FitFinding>,
    /// The entries resolved in this run whose commit the cooldown changed.
    pub held_back: Vec<crate::lock::cooldown::HeldBack>,
}

/// One entry resolved by a lock run: what its `Locked …` status line says,
/// typed (the JSON of `kernels lock`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Locked {
    /// The repository.
    pub repo_id: String,
    /// The tag, branch or revision it was locked from (`v0.1.1`, `v1`, `main`).
    pub version: String,
    /// The locked commit.
    pub commit: CommitId,
    /// How many build variants were hashed (variant-hash format); `None` in
    /// the `KernelLocks` format, which records no variants.
    pub variant_count: Option<usize>,
    /// The entry whose `kernel-depends` asked for it (0.17 format); `None`
    /// for a dependency of the project itself.
    pub required_by: Option<RequiredBy>,
}

/// The lock entry that required another (a `kernel-depends` entry's parent),
/// as the lock file names it: `repo_id` with `version` or `revision`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequiredBy {
    /// The repository.
    pub repo_id: String,
    /// Its integer version (branch `vN`), if locked from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// Its revision, if locked from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

impl From<&KernelDependency> for RequiredBy {
    fn from(dep: &KernelDependency) -> Self {
        let (version, revision) = match &dep.version {
            KernelVersion::Version(n) => (Some(*n), None),
            KernelVersion::Revision(r) => (None, Some(r.clone())),
        };
        RequiredBy {
            repo_id: dep.repo_id.clone(),
            version,
            revision,
        }
    }
}

impl std::fmt::Display for RequiredBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.version, &self.revision) {
            (Some(n), _) => write!(f, "{} version {n}", self.repo_id),
            (None, Some(r)) => write!(f, "{} revision {r}", self.repo_id),
            (None, None) => write!(f, "{}", self.repo_id),
        }
    }
}

/// A locked entry whose commit has no build variant (no `build/`, or no
/// variant directory in it): nothing can be downloaded or loaded for it, so
/// `kernels lock` warns and `kernels lock --check` fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoVariants {
    /// The repository.
    pub repo_id: String,
    /// What the commit is locked from (`v1`, `v0.1.1`, a revision).
    pub label: String,
    /// The locked commit.
    pub commit: CommitId,
}

impl NoVariants {
    /// Why the entry is of no use and what to do, without the repository:
    /// `locked at v1 (<commit>), which has no variant directory under `build/` …`.
    pub fn reason(&self) -> String {
        format!(
            "locked at {} ({}), which has no variant directory under `build/`: {}",
            self.label,
            self.commit,
            self.fix()
        )
    }

    fn fix(&self) -> String {
        format!(
            "there is nothing to download or load; lock a version that has builds (`kernels variants {} --all-versions` lists them)",
            self.repo_id
        )
    }
}

impl std::fmt::Display for NoVariants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({}) has no build variants (no variant directory under `build/`): {}",
            self.repo_id,
            self.label,
            self.commit,
            self.fix()
        )
    }
}

impl LockOutcome {
    /// The locked entries without any build variant, in lock order: a
    /// variant-hash entry with no variant hash, a `KernelLocks` entry whose
    /// commit's `build/` listing gave no variant.
    pub fn without_variants(&self) -> Vec<NoVariants> {
        match &self.lockfile {
            Lockfile::VariantHash(locks) => locks
                .iter()
                .filter(|lock| lock.variants.is_empty())
                .map(|lock| NoVariants {
                    repo_id: lock.repo_id.clone(),
                    label: self
                        .labels
                        .get(&lock.repo_id)
                        .cloned()
                        .unwrap_or_else(|| lock.sha.short().to_owned()),
                    commit: lock.sha.clone(),
                })
                .collect(),
            Lockfile::KernelLocks(locks) => locks
                .iter()
                .filter_map(|(dep, commit)| {
                    let label = match &dep.version {
                        KernelVersion::Version(n) => format!("v{n}"),
                        KernelVersion::Revision(r) => r.clone(),
                    };
                    self.variants
                        .iter()
                        .any(|v| {
                            v.repo_id == dep.repo_id && v.label == label && v.variants.is_empty()
                        })
                        .then(|| NoVariants {
                            repo_id: dep.repo_id.clone(),
                            label,
                            commit: commit.clone(),
                        })
                })
                .collect(),
        }
    }
}

impl std::fmt::Display for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Locked {} {} ({})",
            self.repo_id,
            self.version,
            self.commit.short()
        )?;
        if let Some(n) = self.variant_count {
            write!(f, " with {n} variant{}", if n == 1 { "" } else { "s" })?;
        }
        if let Some(via) = &self.required_by {
            write!(f, ", required by {via}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let parent = KernelDependency {
            repo_id: "kernels-test/parent".to_owned(),
            version: KernelVersion::Revision("main".to_owned()),
        };
        let mut locked = Locked {
            repo_id: "kernels-community/relu".to_owned(),
            version: "v1".to_owned(),
            commit: "d649efb5b7a5e1f1a5d3f1c1a1b1c1d1e1f10203".parse().unwrap(),
            variant_count: Some(1),
            required_by: None,
        };
        assert_eq!(
            locked.to_string(),
            "Locked kernels-community/relu v1 (d649efb) with 1 variant"
        );
        locked.variant_count = Some(3);
        assert!(locked.to_string().ends_with("with 3 variants"));
        locked.variant_count = None;
        locked.required_by = Some(RequiredBy::from(&parent));
        assert_eq!(
            locked.to_string(),
            "Locked kernels-community/relu v1 (d649efb), required by kernels-test/parent revision main"
        );
        let json = serde_json::to_value(locked.required_by.as_ref().unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"repo_id": "kernels-test/parent", "revision": "main"})
        );
    }
}
