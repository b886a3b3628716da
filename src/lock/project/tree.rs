//! Locking for `KernelLocks` profiles (0.17+): the `kernel-depends` walk.
//! Every node reachable from the project's dependencies is resolved first, as
//! concurrently as the graph allows ([`Locker::discover`]); then [`Tree`] walks
//! the answers depth first, as the reference does, so that the lock, the status
//! lines, the warnings and the first error are the same as when one kernel is
//! visited at a time. A dependency reached again while it is being locked is a
//! cycle, reported with its path.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;
use futures_util::stream::FuturesUnordered;
use kernels_hub::HubError;
use kernels_types::CommitId;
use kernels_types::metadata;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::fit::{LockedVariants, VariantState};
use crate::lock::format::{KernelDependency, KernelLocks, KernelVersion, Lockfile};
use crate::lock::manifest::Manifest;
use crate::lock::profile::RuntimeVersion;
use crate::lock::project::depends::{commit_depends, lock_dependency};
use crate::lock::project::error::{Failure, LockError, check_errors};
use crate::lock::project::locker::Locker;
use crate::lock::project::outcome::{LockOutcome, Locked, RequiredBy};
use crate::lock::requirement::Requirement;
use crate::lock::resolver::ResolvedCommit;
use crate::lock::support::unsupported;

impl Locker<'_> {
    pub(super) async fn kernel_locks(&self, manifest: &Manifest) -> Result<LockOutcome, LockError> {
        let mut roots = Vec::new();
        for dep in &manifest.dependencies {
            let version = match &dep.requirement {
                Requirement::Branch(n) => KernelVersion::Version(*n),
                Requirement::Revision(r) => KernelVersion::Revision(r.clone()),
                // Rejected by the requirement check of the profile.
                _ => {
                    let runtime = self
                        .profile
                        .runtime
                        .unwrap_or(RuntimeVersion::new(0, 17, 0));
                    return Err(LockError::UnsupportedRequirement(Box::new(unsupported(
                        manifest, dep, runtime,
                    ))));
                }
            };
            let node = KernelDependency {
                repo_id: dep.repo_id.to_string(),
                version,
            };
            roots.push((node, dep.repo_id.clone()));
        }
        // Every request first, as concurrently as the graph allows; then the
        // reference's depth-first walk over the answers, so that the lock, the
        // status lines, the warnings and the first error are the same as when
        // one kernel is visited at a time.
        let (nodes, trust) = self.discover(&roots).await;
        let mut tree = Tree {
            nodes,
            trust,
            locks: KernelLocks::new(),
            done: HashSet::new(),
            locked: Vec::new(),
            warnings: Vec::new(),
            kept: 0,
            variants: Vec::new(),
            held_back: Vec::new(),
            first_lock: match self.profile.source {
                crate::lock::profile::ProfileSource::FirstLock(_) => self.profile.runtime,
                _ => None,
            },
        };
        // The first failure is the reference's (depth first, root by root);
        // the roots after it that failed themselves are reported with it, so
        // that one cause (the Hub unreachable) names every kernel it stops.
        let mut failures = Vec::new();
        for (node, repo_id) in roots {
            if failures.is_empty() {
                if let Err(error) = tree.visit(node, repo_id.clone(), Vec::new()) {
                    failures.push(Failure { repo_id, error });
                }
            } else if let Some(Err(error)) = tree.nodes.remove(&node) {
                failures.push(Failure { repo_id, error });
            }
        }
        check_errors(failures, manifest)?;
        Ok(LockOutcome {
            lockfile: Lockfile::KernelLocks(tree.locks),
            locked: tree.locked,
            warnings: tree.warnings,
            labels: HashMap::new(),
            previous_labels: HashMap::new(),
            kept: tree.kept,
            variants: tree.variants,
            fit: Vec::new(),
            held_back: tree.held_back,
        })
    }

    /// Resolves every node reachable from `roots` (and the trust status of
    /// every organization that needs one), each request as soon as what it
    /// depends on is known. A node's children are scheduled when it is done.
    async fn discover(
        &self,
        roots: &[(KernelDependency, RepoId)],
    ) -> (
        HashMap<KernelDependency, Result<Node, LockError>>,
        HashMap<String, Result<bool, HubError>>,
    ) {
        enum Done {
            Node(KernelDependency, Box<Result<Node, LockError>>),
            Trust(String, Result<bool, HubError>),
        }
        let mut nodes = HashMap::new();
        let mut trust = HashMap::new();
        let mut seen: HashSet<KernelDependency> = HashSet::new();
        let mut orgs: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<(KernelDependency, RepoId)> = roots.iter().cloned().collect();
        queue.extend(self.kept_entries());
        let mut running: FuturesUnordered<LocalBoxFuture<'_, Done>> = FuturesUnordered::new();
        loop {
            while running.len() < DISCOVERY_CONCURRENCY
                && let Some((node, repo_id)) = queue.pop_front()
            {
                if !seen.insert(node.clone()) {
                    continue;
                }
                let previous = self.previous_commit(&node);
                if previous.is_none()
                    && self.needs_trust(&repo_id)
                    && !self.client.is_offline()
                    && orgs.insert(repo_id.owner().to_owned())
                {
                    let org = repo_id.owner().to_owned();
                    running.push(Box::pin(async move {
                        let result = self
                            .client
                            .org_overview(&org)
                            .await
                            .map(|o| o.trusted_kernel_publisher);
                        Done::Trust(org, result)
                    }));
                }
                running.push(Box::pin(async move {
                    let result = self.resolve_node(&node, &repo_id, previous).await;
                    Done::Node(node, Box::new(result))
                }));
            }
            let Some(done) = running.next().await else {
                break;
            };
            match done {
                Done::Trust(org, result) => {
                    trust.insert(org, result);
                }
                Done::Node(node, result) => {
                    if let Ok(resolved) = &*result {
                        for child in &resolved.children {
                            let node = lock_dependency(child);
                            if !seen.contains(&node) {
                                queue.push_back((node, child.repo_id.clone()));
                            }
                        }
                    }
                    nodes.insert(node, *result);
                }
            }
        }
        (nodes, trust)
    }

    /// The entries of the previous lock that are kept (not upgraded). They
    /// are most likely still reached: [`Locker::discover`] learns their
    /// `kernel-depends` at once instead of level by level. One that is no
    /// longer reached is never visited, so it costs requests but changes
    /// nothing.
    fn kept_entries(&self) -> Vec<(KernelDependency, RepoId)> {
        let Some(Lockfile::KernelLocks(old)) = &self.options.previous else {
            return Vec::new();
        };
        old.iter()
            .filter(|(dep, _)| !self.options.upgrade.covers(&dep.repo_id))
            .filter_map(|(dep, _)| Some((dep.clone(), dep.repo_id.parse::<RepoId>().ok()?)))
            .collect()
    }

    /// The commit the previous lock has for `node`, unless it is upgraded.
    fn previous_commit(&self, node: &KernelDependency) -> Option<CommitId> {
        match &self.options.previous {
            Some(Lockfile::KernelLocks(old)) if !self.options.upgrade.covers(&node.repo_id) => {
                old.iter().find(|(d, _)| *d == node).map(|(_, c)| c.clone())
            }
            _ => None,
        }
    }

    /// One node: its commit (kept from the previous lock, or resolved, through
    /// the model API when allowed) and its `kernel-depends`.
    async fn resolve_node(
        &self,
        node: &KernelDependency,
        repo_id: &RepoId,
        previous: Option<CommitId>,
    ) -> Result<Node, LockError> {
        let mut warnings = Vec::new();
        let requirement = match &node.version {
            KernelVersion::Version(n) => Requirement::Branch(*n),
            KernelVersion::Revision(r) => Requirement::Revision(r.clone()),
        };
        let mut repo_type = self.profile.repo_type;
        let previous = match previous {
            Some(commit)
                if !self
                    .cooldown_keeps(repo_type, repo_id, &requirement, &commit)
                    .await =>
            {
                None
            }
            previous => previous,
        };
        let kept = previous.is_some();
        let resolved = if let Some(commit) = previous {
            // The requirement is recorded and unchanged: keep the commit.
            ResolvedCommit {
                chosen: match &node.version {
                    KernelVersion::Version(n) => format!("v{n}"),
                    KernelVersion::Revision(r) => r.clone(),
                },
                commit,
                warnings: Vec::new(),
                held_back: None,
            }
        } else {
            if self.needs_trust(repo_id) && self.client.is_offline() {
                warnings.push(format!(
                    "Skipping publisher trust check for '{repo_id}' because Hugging Face Hub is in offline mode."
                ));
            }
            match self
                .resolver(repo_type)
                .resolve_commit(repo_id, &requirement)
                .await
            {
                Ok(resolved) => resolved,
                Err(err) => {
                    self.model_fallback(repo_id, err, &mut warnings).await?;
                    repo_type = RepoType::Model;
                    self.resolver(repo_type)
                        .resolve_commit(repo_id, &requirement)
                        .await?
                }
            }
        };
        warnings.extend(resolved.warnings);
        let (children, metadata) = commit_depends(
            self.client,
            self.metadata.as_ref(),
            repo_type,
            repo_id,
            &resolved.commit,
            self.profile.generation.reads_dotted_names(),
            &mut warnings,
        )
        .await?;
        Ok(Node {
            chosen: resolved.chosen,
            commit: resolved.commit,
            held_back: resolved.held_back,
            kept,
            warnings,
            children,
            metadata,
        })
    }
}

/// How many nodes [`Locker::discover`] resolves at the same time.
const DISCOVERY_CONCURRENCY: usize = 32;

/// A resolved node of the 0.17 dependency graph.
struct Node {
    chosen: String,
    commit: CommitId,
    /// What the cooldown held back, when it changed the commit.
    held_back: Option<crate::lock::cooldown::HeldBack>,
    /// Kept from the previous lock.
    kept: bool,
    /// Remarks, in the order the reference makes them.
    warnings: Vec<String>,
    /// Its `kernel-depends`.
    children: Vec<metadata::KernelDependency>,
    /// Every variant's metadata.
    metadata: BTreeMap<String, metadata::Metadata>,
}

/// Depth-first locking of `kernel-depends` (0.17 profile) over the nodes
/// [`Locker::discover`] resolved.
struct Tree {
    nodes: HashMap<KernelDependency, Result<Node, LockError>>,
    /// Trust status per organization.
    trust: HashMap<String, Result<bool, HubError>>,
    locks: KernelLocks,
    done: HashSet<KernelDependency>,
    locked: Vec<Locked>,
    warnings: Vec<String>,
    /// Entries kept from the previous lock.
    kept: usize,
    /// Each visited node with its variants, in visiting order.
    variants: Vec<LockedVariants>,
    /// What the cooldown held back, in visiting order.
    held_back: Vec<crate::lock::cooldown::HeldBack>,
    /// The runtime of a first lock's profile (none was named or installed).
    first_lock: Option<RuntimeVersion>,
}

impl Tree {
    fn visit(
        &mut self,
        node: KernelDependency,
        repo_id: RepoId,
        mut path: Vec<KernelDependency>,
    ) -> Result<(), LockError> {
        if let Some(start) = path.iter().position(|d| d == &node) {
            let cycle: Vec<String> = path[start..]
                .iter()
                .chain(std::iter::once(&node))
                .map(describe)
                .collect();
            return Err(LockError::Cycle {
                cycle: cycle.join(" → "),
            });
        }
        if self.done.contains(&node) {
            return Ok(());
        }
        let resolved = self
            .nodes
            .remove(&node)
            .expect("every reachable node was discovered")?;
        if resolved.kept {
            self.kept += 1;
        } else {
            self.check_trust(&repo_id)?;
        }
        let Node {
            chosen,
            commit,
            held_back,
            kept,
            warnings,
            children,
            metadata,
        } = resolved;
        self.warnings.extend(warnings);
        self.held_back.extend(held_back);
        self.variants.push(LockedVariants {
            repo_id: repo_id.to_string(),
            label: chosen.clone(),
            variants: metadata
                .into_iter()
                .map(|(name, m)| (name, VariantState::Read(Box::new(m))))
                .collect(),
        });
        path.push(node.clone());
        for child in children {
            self.visit(lock_dependency(&child), child.repo_id, path.clone())?;
        }
        if !kept {
            self.locked.push(Locked {
                repo_id: repo_id.to_string(),
                version: chosen,
                commit: commit.clone(),
                variant_count: None,
                required_by: path
                    .len()
                    .checked_sub(2)
                    .map(|i| RequiredBy::from(&path[i])),
            });
        }
        // `done` guards against a second insert of the same dependency.
        let _ = self.locks.insert(node.clone(), commit);
        self.done.insert(node);
        Ok(())
    }

    /// The trust status [`Locker::discover`] fetched for the node's
    /// organization; no entry means none was needed (allowed, offline, or the
    /// profile does not check).
    fn check_trust(&mut self, repo_id: &RepoId) -> Result<(), LockError> {
        let org = repo_id.owner();
        match self.trust.get(org) {
            None | Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(LockError::Untrusted {
                repo_id: repo_id.clone(),
                org: org.to_owned(),
                why_checked: LockError::why_publishers_checked(self.first_lock),
            }),
            Some(Err(_)) => match self.trust.remove(org) {
                Some(Err(source)) => Err(LockError::TrustUnknown {
                    repo_id: repo_id.clone(),
                    source,
                }),
                _ => unreachable!("checked above"),
            },
        }
    }
}

/// A dependency as the cycle message names it: `a/b version 1`.
fn describe(dep: &KernelDependency) -> String {
    match &dep.version {
        KernelVersion::Version(n) => format!("{} version {n}", dep.repo_id),
        KernelVersion::Revision(r) => format!("{} revision {r}", dep.repo_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMIT_A: &str = "0123456789abcdef0123456789abcdef01234567";
    const COMMIT_B: &str = "1123456789abcdef0123456789abcdef01234567";

    fn dep(repo_id: &str) -> KernelDependency {
        KernelDependency {
            repo_id: repo_id.to_owned(),
            version: KernelVersion::Version(1),
        }
    }

    fn node(commit: &str, kept: bool, children: &[&str]) -> Node {
        Node {
            chosen: "v1".to_owned(),
            commit: commit.parse().unwrap(),
            held_back: None,
            kept,
            warnings: vec![format!("remark of {commit}")],
            children: children
                .iter()
                .map(|c| metadata::KernelDependency {
                    repo_id: c.parse().unwrap(),
                    version: metadata::DependencyVersion::Version(1),
                })
                .collect(),
            metadata: BTreeMap::new(),
        }
    }

    fn tree(nodes: Vec<(&str, Node)>) -> Tree {
        Tree {
            nodes: nodes
                .into_iter()
                .map(|(repo, node)| (dep(repo), Ok(node)))
                .collect(),
            trust: HashMap::new(),
            locks: KernelLocks::new(),
            done: HashSet::new(),
            locked: Vec::new(),
            warnings: Vec::new(),
            kept: 0,
            variants: Vec::new(),
            held_back: Vec::new(),
            first_lock: None,
        }
    }

    fn visit(tree: &mut Tree, repo: &str) -> Result<(), LockError> {
        tree.visit(dep(repo), repo.parse().unwrap(), Vec::new())
    }

    #[test]
    fn dependencies_are_locked_depth_first_with_their_parent() {
        let mut tree = tree(vec![
            ("a/x", node(COMMIT_A, false, &["b/y"])),
            ("b/y", node(COMMIT_B, false, &[])),
        ]);
        visit(&mut tree, "a/x").unwrap();
        let lines: Vec<String> = tree.locked.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "Locked b/y v1 (1123456), required by a/x version 1",
                "Locked a/x v1 (0123456)",
            ]
        );
        assert_eq!(
            tree.warnings,
            [
                format!("remark of {COMMIT_A}"),
                format!("remark of {COMMIT_B}")
            ]
        );
        assert_eq!(tree.locks.iter().count(), 2);
        // A second root reaching a done node adds nothing.
        visit(&mut tree, "b/y").unwrap();
        assert_eq!(tree.locked.len(), 2);
    }

    #[test]
    fn a_node_reached_while_it_is_locked_is_a_cycle() {
        let mut tree = tree(vec![
            ("a/x", node(COMMIT_A, false, &["b/y"])),
            ("b/y", node(COMMIT_B, false, &["a/x"])),
        ]);
        let err = visit(&mut tree, "a/x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cyclic kernel dependency detected: a/x version 1 → b/y version 1 → a/x version 1"
        );
    }

    #[test]
    fn kept_nodes_skip_the_trust_check_and_resolved_ones_need_it() {
        let mut tree = tree(vec![
            ("a/x", node(COMMIT_A, true, &["b/y"])),
            ("b/y", node(COMMIT_B, false, &[])),
        ]);
        tree.trust.insert("a".to_owned(), Ok(false));
        tree.trust.insert("b".to_owned(), Ok(false));
        let err = visit(&mut tree, "a/x").unwrap_err();
        assert!(
            matches!(&err, LockError::Untrusted { repo_id, org, .. } if repo_id.as_str() == "b/y" && org == "b"),
            "{err}"
        );
        let mut tree = tree_with_trusted_b();
        visit(&mut tree, "a/x").unwrap();
        assert_eq!(tree.kept, 1);
        assert_eq!(tree.locked.len(), 1, "only the resolved entry gets a line");
    }

    fn tree_with_trusted_b() -> Tree {
        let mut tree = tree(vec![
            ("a/x", node(COMMIT_A, true, &["b/y"])),
            ("b/y", node(COMMIT_B, false, &[])),
        ]);
        tree.trust.insert("b".to_owned(), Ok(true));
        tree
    }

    #[test]
    fn cycle_paths_name_versions_and_revisions() {
        assert_eq!(describe(&dep("a/x")), "a/x version 1");
        let revision = KernelDependency {
            repo_id: "a/x".to_owned(),
            version: KernelVersion::Revision("main".to_owned()),
        };
        assert_eq!(describe(&revision), "a/x revision main");
    }
}
