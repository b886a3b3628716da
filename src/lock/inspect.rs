//! Looking at a locked project and at a kernel's versions, for `kernels tree`,
//! `kernels outdated` and `kernels versions`. Nothing here writes.
//!
//! * The *newest compatible* version of an entry is what its requirement
//!   selects today: the current commit of branch `vN`, the best tag matching a
//!   specifier, or what a revision names now.
//! * The *newest* version is the highest `vN` branch (else the highest release
//!   tag) whatever the requirement; for a tag specifier, the highest release tag.
//! * An entry whose refs could not be read is [`Freshness::Unknown`], never up
//!   to date.
//! * The *label* of a locked commit is the version it was locked from: `vN`
//!   for an integer requirement (or a 0.17 `version`), the revision's name, or
//!   for a specifier the release tag at the commit (from the Hub's refs, else
//!   from the cache's `refs/`); a commit nothing names is its short form.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures_util::future::join_all;
use serde::Serialize;

use crate::lock::cooldown::{Cooldown, HeldBack};
use crate::lock::format::{KernelDependency, KernelVersion, Lockfile};
use crate::lock::label::commit_label;
use crate::lock::manifest::Manifest;
use crate::lock::project::{LockError, kernel_depends, lock_dependency};
use crate::lock::requirement::{Requirement, branch_version, select_tag, tag_version};
use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefs, RepoType};

/// A version named by a ref, with its commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefAt {
    /// `v1`, `v0.1.2`, a revision, or a short commit when no ref names it.
    pub label: String,
    /// The commit.
    pub commit: CommitId,
}

impl RefAt {
    /// Whether a ref names the commit (the label is not just the short commit).
    pub fn is_named(&self) -> bool {
        self.label != self.commit.short()
    }
}

impl std::fmt::Display for RefAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_named() {
            write!(f, "{} ({})", self.label, self.commit.short())
        } else {
            write!(f, "{}", self.label)
        }
    }
}

/// Whether a lock entry is behind the Hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Freshness {
    /// What is locked is what the requirement selects and the newest version.
    UpToDate,
    /// A newer compatible or newest version exists.
    Outdated,
    /// The refs could not be read: nothing is known.
    Unknown,
}

/// Why an entry could not be checked: the diagnostic code and message of
/// the failed refs request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckError {
    /// The diagnostic code, e.g. `kernels::hub::transport`.
    pub code: Option<String>,
    /// The error's message, for people.
    pub message: String,
}

impl CheckError {
    /// The code and message of `error`.
    pub fn of(error: &HubError) -> CheckError {
        use miette::Diagnostic;
        CheckError {
            code: error.code().map(|c| c.to_string()),
            message: error.to_string(),
        }
    }
}

/// One lock entry compared with the Hub.
#[derive(Debug, Clone, Serialize)]
pub struct EntryStatus {
    /// The repository.
    pub repo_id: String,
    /// The requirement, plain ([`requirement_plain`]).
    pub requirement: String,
    /// `version`, `specifier` or `revision` ([`requirement_kind`]).
    pub requirement_kind: &'static str,
    /// What is locked.
    pub locked: RefAt,
    /// What the requirement selects today (`None`: nothing matches any more,
    /// or the refs could not be read).
    pub compatible: Option<RefAt>,
    /// The newest version whatever the requirement.
    pub newest: Option<RefAt>,
    /// Whether `compatible` or `newest` differs from what is locked; `None`
    /// when the refs could not be read.
    pub outdated: Option<bool>,
    /// Up to date, outdated, or unknown.
    pub status: Freshness,
    /// Why the refs could not be read (`status` is `unknown`).
    pub error: Option<CheckError>,
    /// What the release cooldown holds back of `compatible`, and until when
    /// ([`held_back`]); `None` without a cooldown, or when it holds nothing.
    pub held_back: Option<HeldBack>,
}

/// A requirement of a lock entry: from the manifest (variant-hash locks) or
/// from the entry itself (0.17 locks).
fn kernel_requirement(version: &KernelVersion) -> Requirement {
    match version {
        KernelVersion::Version(n) => Requirement::Branch(*n),
        KernelVersion::Revision(r) => Requirement::Revision(r.clone()),
    }
}

/// The text of a requirement as a user writes it in TOML.
pub fn requirement_text(requirement: &Requirement) -> String {
    match requirement {
        Requirement::Branch(n) => n.to_string(),
        Requirement::Pep440(spec) => format!("\"{spec}\""),
        Requirement::Semver(req) => format!("\"{req}\""),
        Requirement::Revision(r) => format!("{{ revision = \"{r}\" }}"),
    }
}

/// The requirement without TOML syntax, for JSON: `1`, `>=0.1,<0.2`, or
/// the revision's name.
pub fn requirement_plain(requirement: &Requirement) -> String {
    match requirement {
        Requirement::Branch(n) => n.to_string(),
        Requirement::Pep440(spec) => spec.to_string(),
        Requirement::Semver(req) => req.to_string(),
        Requirement::Revision(r) => r.clone(),
    }
}

/// What kind of requirement it is, for JSON: `version` (an integer, branch
/// `vN`), `specifier` (a version specifier over `v<version>` tags) or
/// `revision` (a branch, tag or commit).
pub fn requirement_kind(requirement: &Requirement) -> &'static str {
    match requirement {
        Requirement::Branch(_) => "version",
        Requirement::Pep440(_) | Requirement::Semver(_) => "specifier",
        Requirement::Revision(_) => "revision",
    }
}

/// The newest version of the kind `requirement` names: the highest release
/// tag for a specifier (the runtimes that read specifiers know no branches),
/// else the highest `vN` branch, else the highest release tag.
pub fn newest_for(requirement: &Requirement, refs: &GitRefs) -> Option<RefAt> {
    match requirement {
        Requirement::Pep440(_) | Requirement::Semver(_) => {
            newest_tag(refs).or_else(|| newest(refs))
        }
        _ => newest(refs),
    }
}

/// The highest release tag.
fn newest_tag(refs: &GitRefs) -> Option<RefAt> {
    refs.tags
        .iter()
        .filter_map(|t| tag_version(&t.name).map(|v| (v, t)))
        .filter(|(v, _)| !v.any_prerelease())
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, t)| RefAt {
            label: t.name.clone(),
            commit: t.target_commit.clone(),
        })
}

/// The highest `vN` branch, else the highest release tag.
pub fn newest(refs: &GitRefs) -> Option<RefAt> {
    let branch = refs
        .branches
        .iter()
        .filter_map(|b| branch_version(&b.name).map(|n| (n, b)))
        .max_by_key(|(n, _)| *n);
    if let Some((_, b)) = branch {
        return Some(RefAt {
            label: b.name.clone(),
            commit: b.target_commit.clone(),
        });
    }
    newest_tag(refs)
}

/// What `requirement` selects among `refs` today: for a revision, the
/// branch or tag of that name, or the commit a full commit id names (an
/// abbreviated one names nothing the refs can tell).
pub fn compatible(requirement: &Requirement, refs: &GitRefs) -> Option<RefAt> {
    let at = |r: &kernels_types::wire::GitRefInfo| RefAt {
        label: r.name.clone(),
        commit: r.target_commit.clone(),
    };
    match requirement {
        Requirement::Branch(n) => refs
            .branches
            .iter()
            .find(|b| branch_version(&b.name) == Some(i128::from(*n)))
            .map(at),
        Requirement::Pep440(_) | Requirement::Semver(_) => select_tag(requirement, &refs.tags)
            .ok()
            .map(|s| at(&s.git_ref)),
        Requirement::Revision(r) => refs
            .branches
            .iter()
            .chain(&refs.tags)
            .find(|b| b.name == *r)
            .map(at)
            .or_else(|| {
                let commit: CommitId = r.parse().ok()?;
                Some(RefAt {
                    label: commit.short().to_owned(),
                    commit,
                })
            }),
    }
}

/// The name of `commit` locked from a specifier: the tag the requirement
/// selects among `refs` when it points there, else the commit's version label
/// ([`commit_label`]).
fn tag_label(commit: &CommitId, requirement: &Requirement, refs: &GitRefs) -> Option<String> {
    if let Some(c) = compatible(requirement, refs)
        && c.commit == *commit
    {
        return Some(c.label);
    }
    label_in(refs, commit).map(str::to_owned)
}

/// The version label ([`commit_label`]) of `commit` among `refs`.
pub fn label_in<'a>(refs: &'a GitRefs, commit: &CommitId) -> Option<&'a str> {
    let at = |r: &&'a kernels_types::wire::GitRefInfo| r.target_commit == *commit;
    commit_label(
        refs.tags.iter().filter(at).map(|t| t.name.as_str()),
        refs.branches.iter().filter(at).map(|b| b.name.as_str()),
    )
}

/// The version an entry was locked from, known without the Hub: `vN` for an
/// integer requirement, the name of a revision that is not a commit id, and
/// for a specifier the tag `cached` (the cache's `refs/`) names at the commit.
fn offline_label(
    commit: &CommitId,
    requirement: &Requirement,
    cached: Option<&GitRefs>,
) -> Option<String> {
    match requirement {
        Requirement::Branch(n) => Some(format!("v{n}")),
        Requirement::Revision(r) if CommitId::is_abbreviation(r) => None,
        Requirement::Revision(r) => Some(r.clone()),
        Requirement::Pep440(_) | Requirement::Semver(_) => {
            cached.and_then(|refs| tag_label(commit, requirement, refs))
        }
    }
}

/// The refs the cache holds for `repo_id` ([`kernels_cache::RepoCache::refs`],
/// as `huggingface_hub` and `kernels` write them for branches and tags): `vN`
/// names as branches, every other name as a tag; `None` without any.
fn cached_refs(
    cache: &kernels_cache::HubCache,
    repo_type: RepoType,
    repo_id: &RepoId,
) -> Option<GitRefs> {
    let cached = cache.repo(repo_id, repo_type).refs();
    if cached.is_empty() {
        return None;
    }
    let mut refs = GitRefs {
        branches: Vec::new(),
        converts: Vec::new(),
        tags: Vec::new(),
        pull_requests: None,
    };
    for kernels_cache::CachedRef { name, commit } in cached {
        let is_branch = branch_version(&name).is_some();
        let info = kernels_types::wire::GitRefInfo {
            git_ref: format!("refs/{}/{name}", if is_branch { "heads" } else { "tags" }),
            name,
            target_commit: commit,
        };
        if is_branch {
            refs.branches.push(info);
        } else {
            refs.tags.push(info);
        }
    }
    Some(refs)
}

/// One entry of the lock with the requirement it was locked from.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The repository.
    pub repo_id: RepoId,
    /// The requirement.
    pub requirement: Requirement,
    /// The locked commit.
    pub commit: CommitId,
    /// The version it was locked from when known without the Hub (see the
    /// module docs); `None` when only the Hub's refs can tell.
    pub label: Option<String>,
    /// The 0.17 dependency, for the graph.
    pub dependency: Option<KernelDependency>,
}

impl Entry {
    /// The locked commit with the version it was locked from: for a
    /// specifier, the tag `refs` (the Hub's) names there, else the cache's.
    pub fn locked(&self, refs: Option<&GitRefs>) -> RefAt {
        let online = match &self.requirement {
            Requirement::Pep440(_) | Requirement::Semver(_) => {
                refs.and_then(|r| tag_label(&self.commit, &self.requirement, r))
            }
            _ => None,
        };
        RefAt {
            label: online
                .or_else(|| self.label.clone())
                .unwrap_or_else(|| self.commit.short().to_owned()),
            commit: self.commit.clone(),
        }
    }
}

/// The entries of `lock`: in file order for variant-hash locks (requirements from
/// `manifest`; entries the manifest no longer has are skipped), in sorted order
/// for 0.17 locks. Labels of specifier entries come from `cache`'s `refs/`
/// for `repo_type` (read only).
pub fn entries(
    lock: &Lockfile,
    manifest: &Manifest,
    cache: Option<&kernels_cache::HubCache>,
    repo_type: RepoType,
) -> Vec<Entry> {
    let mut entries = raw_entries(lock, manifest);
    let mut cached: HashMap<RepoId, Option<GitRefs>> = HashMap::new();
    for e in &mut entries {
        let refs = match (&e.requirement, cache) {
            (Requirement::Pep440(_) | Requirement::Semver(_), Some(cache)) => cached
                .entry(e.repo_id.clone())
                .or_insert_with(|| cached_refs(cache, repo_type, &e.repo_id))
                .as_ref(),
            _ => None,
        };
        e.label = offline_label(&e.commit, &e.requirement, refs);
    }
    entries
}

fn raw_entries(lock: &Lockfile, manifest: &Manifest) -> Vec<Entry> {
    match lock {
        Lockfile::VariantHash(locks) => locks
            .iter()
            .filter_map(|l| {
                let dep = manifest
                    .dependencies
                    .iter()
                    .find(|d| d.repo_id.as_str() == l.repo_id)?;
                Some(Entry {
                    repo_id: dep.repo_id.clone(),
                    requirement: dep.requirement.clone(),
                    commit: l.sha.clone(),
                    label: None,
                    dependency: None,
                })
            })
            .collect(),
        Lockfile::KernelLocks(locks) => locks
            .iter()
            .filter_map(|(dep, commit)| {
                Some(Entry {
                    repo_id: dep.repo_id.parse().ok()?,
                    requirement: kernel_requirement(&dep.version),
                    commit: commit.clone(),
                    label: None,
                    dependency: Some(dep.clone()),
                })
            })
            .collect(),
    }
}

/// The refs of every repository of `entries`, one request per repository, all
/// at once, each with its answer (a repository whose refs cannot be read has
/// its error).
pub async fn refs_of(
    client: &HubClient,
    repo_type: RepoType,
    repos: impl IntoIterator<Item = RepoId>,
) -> BTreeMap<RepoId, Result<GitRefs, HubError>> {
    let repos: BTreeSet<RepoId> = repos.into_iter().collect();
    let answers = join_all(repos.iter().map(|r| client.list_refs(repo_type, r))).await;
    repos.into_iter().zip(answers).collect()
}

/// Every entry of `entries` compared with the Hub's refs; an entry whose
/// repository has no answer or an error is [`Freshness::Unknown`].
pub fn statuses(
    entries: &[Entry],
    refs: &BTreeMap<RepoId, Result<GitRefs, HubError>>,
) -> Vec<EntryStatus> {
    entries
        .iter()
        .map(|e| {
            let answer = refs.get(&e.repo_id);
            let refs = answer.and_then(|r| r.as_ref().ok());
            let compatible = refs.and_then(|r| compatible(&e.requirement, r));
            let newest = refs.and_then(|r| newest_for(&e.requirement, r));
            let differs = |r: &Option<RefAt>| r.as_ref().is_some_and(|r| r.commit != e.commit);
            let outdated = refs.map(|_| differs(&compatible) || differs(&newest));
            let error = match answer {
                Some(Err(err)) => Some(CheckError::of(err)),
                Some(Ok(_)) => None,
                None => Some(CheckError {
                    code: None,
                    message: format!("the refs of {} were not asked for", e.repo_id),
                }),
            };
            EntryStatus {
                repo_id: e.repo_id.to_string(),
                requirement: requirement_plain(&e.requirement),
                requirement_kind: requirement_kind(&e.requirement),
                locked: e.locked(refs),
                compatible,
                newest,
                outdated,
                status: match outdated {
                    None => Freshness::Unknown,
                    Some(true) => Freshness::Outdated,
                    Some(false) => Freshness::UpToDate,
                },
                error,
                held_back: None,
            }
        })
        .collect()
}

/// Fills [`EntryStatus::held_back`] of each status whose compatible version is
/// newer than what is locked and dated after `cooldown`'s cut-off: the
/// compatible commit's history (the commits API) down to the newest commit the
/// cut-off admits, all repositories at once. A history that cannot be read
/// leaves the entry without a note.
pub async fn held_back(
    client: &HubClient,
    repo_type: RepoType,
    cooldown: &Cooldown,
    statuses: &mut [EntryStatus],
) {
    let asks = statuses.iter().map(|s| async move {
        let compatible = s.compatible.as_ref()?;
        let repo_id: RepoId = s.repo_id.parse().ok()?;
        if compatible.commit == s.locked.commit || !cooldown.applies_to(&repo_id) {
            return None;
        }
        let found = cooldown
            .newest_admitted(client, repo_type, &repo_id, compatible.commit.as_str())
            .await
            .ok()??;
        let (admitted, skipped) = found;
        cooldown.held_back(&repo_id, &compatible.label, admitted, &skipped)
    });
    let answers = join_all(asks).await;
    for (status, answer) in statuses.iter_mut().zip(answers) {
        status.held_back = answer;
    }
}

/// The `kernel-depends` of every 0.17 lock entry at its locked commit, all
/// fetched at once; `sdk_and_mlx` as for
/// [`crate::lock::project::kernel_depends`].
pub async fn depends_of(
    client: &HubClient,
    cache: Option<kernels_cache::HubCache>,
    repo_type: RepoType,
    entries: &[Entry],
    sdk_and_mlx: bool,
) -> Result<HashMap<KernelDependency, Vec<KernelDependency>>, LockError> {
    let with_dep: Vec<&Entry> = entries.iter().filter(|e| e.dependency.is_some()).collect();
    let cache = cache.map(crate::lock::project::MetadataCache::new);
    let cache = cache.as_ref();
    let answers = join_all(with_dep.iter().map(|e| async move {
        let mut warnings = Vec::new();
        kernel_depends(
            client,
            cache,
            repo_type,
            &e.repo_id,
            &e.commit,
            sdk_and_mlx,
            &mut warnings,
        )
        .await
    }))
    .await;
    if let Some(cache) = cache {
        cache.flush().await;
    }
    let mut out = HashMap::new();
    for (entry, answer) in with_dep.into_iter().zip(answers) {
        let depends = answer?.iter().map(lock_dependency).collect();
        out.insert(entry.dependency.clone().expect("filtered"), depends);
    }
    Ok(out)
}

/// One build variant set of a version, for `kernels versions`.
#[derive(Debug, Clone, Serialize)]
pub struct VersionInfo {
    /// `branch` or `tag`.
    pub kind: &'static str,
    /// The ref name (`v1`, `v0.1.2`).
    pub name: String,
    /// The integer of a `vN` branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The commit the ref points at.
    pub commit: CommitId,
    /// The directory names under `build/` at that commit.
    pub variants: Vec<String>,
}

/// The directory names under `build/` of `repo_id` at `commit` (one
/// non-recursive tree listing); empty when the commit has no `build/`.
///
/// # Errors
/// The listing's [`HubError`], except a missing `build/`.
pub async fn build_variants(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
) -> Result<Vec<String>, HubError> {
    match client
        .list_tree(repo_type, repo_id, commit.as_str(), "build", false)
        .await
    {
        Ok(entries) => Ok(entries
            .into_iter()
            .filter(|e| !e.is_file())
            .map(|e| e.path.trim_start_matches("build/").to_owned())
            .collect()),
        Err(HubError::EntryNotFound { .. }) => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

/// The `vN` branches (by N) and `v<version>` tags (by version) of a repository,
/// each with the build variants at its commit; one listing per distinct commit,
/// all at once.
pub async fn versions(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
) -> Result<Vec<VersionInfo>, HubError> {
    let refs = client.list_refs(repo_type, repo_id).await?;
    let mut branches: Vec<(u64, &kernels_types::wire::GitRefInfo)> = refs
        .branches
        .iter()
        .filter_map(|b| Some((u64::try_from(branch_version(&b.name)?).ok()?, b)))
        .collect();
    branches.sort_by_key(|(n, _)| *n);
    let mut tags: Vec<_> = refs
        .tags
        .iter()
        .filter_map(|t| Some((tag_version(&t.name)?, t)))
        .collect();
    tags.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<VersionInfo> = branches
        .into_iter()
        .map(|(n, b)| VersionInfo {
            kind: "branch",
            name: b.name.clone(),
            version: Some(n),
            commit: b.target_commit.clone(),
            variants: Vec::new(),
        })
        .chain(tags.into_iter().map(|(_, t)| VersionInfo {
            kind: "tag",
            name: t.name.clone(),
            version: None,
            commit: t.target_commit.clone(),
            variants: Vec::new(),
        }))
        .collect();
    let commits: BTreeSet<CommitId> = out.iter().map(|v| v.commit.clone()).collect();
    let listings = join_all(
        commits
            .iter()
            .map(|c| build_variants(client, repo_type, repo_id, c)),
    )
    .await;
    let mut by_commit = HashMap::new();
    for (commit, listing) in commits.into_iter().zip(listings) {
        by_commit.insert(commit, listing?);
    }
    for v in &mut out {
        v.variants = by_commit.get(&v.commit).cloned().unwrap_or_default();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::wire::GitRefInfo;

    fn r(name: &str, kind: &str, commit: char) -> GitRefInfo {
        GitRefInfo {
            name: name.to_owned(),
            git_ref: format!("refs/{kind}/{name}"),
            target_commit: commit.to_string().repeat(40).parse().unwrap(),
        }
    }

    fn refs() -> GitRefs {
        GitRefs {
            branches: vec![
                r("main", "heads", 'a'),
                r("v1", "heads", 'b'),
                r("v2", "heads", 'c'),
            ],
            converts: Vec::new(),
            tags: vec![
                r("v0.1.0", "tags", 'd'),
                r("v0.2.0", "tags", 'e'),
                r("v0.3.0rc1", "tags", 'f'),
            ],
            pull_requests: None,
        }
    }

    #[test]
    fn compatible_and_newest_follow_the_requirement_kind() {
        let refs = refs();
        let branch = Requirement::Branch(1);
        assert_eq!(compatible(&branch, &refs).unwrap().label, "v1");
        assert_eq!(newest_for(&branch, &refs).unwrap().label, "v2");
        let spec = Requirement::parse_str(">=0.1,<0.2").unwrap();
        assert_eq!(compatible(&spec, &refs).unwrap().label, "v0.1.0");
        // A specifier's newest is the highest release tag, not a branch.
        assert_eq!(newest_for(&spec, &refs).unwrap().label, "v0.2.0");
        let rev = Requirement::Revision("main".into());
        assert_eq!(
            compatible(&rev, &refs).unwrap().commit.as_str(),
            "a".repeat(40)
        );
        let abbreviated = Requirement::Revision("aaaaaaa".into());
        assert_eq!(compatible(&abbreviated, &refs), None);
        assert_eq!(compatible(&Requirement::Branch(3), &refs), None);
    }

    fn entry(requirement: Requirement, commit: char, cached: Option<&GitRefs>) -> Entry {
        let commit: CommitId = commit.to_string().repeat(40).parse().unwrap();
        Entry {
            repo_id: "acme/relu".parse().unwrap(),
            label: offline_label(&commit, &requirement, cached),
            requirement,
            commit,
            dependency: None,
        }
    }

    #[test]
    fn labels_name_the_version_locked_from_else_the_short_commit() {
        let spec = || Requirement::parse_str(">=0.1,<0.3").unwrap();
        // Known offline: the integer's branch, a revision's name.
        assert_eq!(
            entry(Requirement::Branch(1), 'b', None).label.as_deref(),
            Some("v1")
        );
        let main = Requirement::Revision("main".into());
        assert_eq!(entry(main, 'a', None).label.as_deref(), Some("main"));
        let commit = Requirement::Revision("a".repeat(40));
        assert_eq!(entry(commit, 'a', None).locked(None).label, "aaaaaaa");
        // A specifier: only refs can tell; without them the short commit.
        let e = entry(spec(), 'e', None);
        assert_eq!(e.label, None);
        assert!(!e.locked(None).is_named());
        assert_eq!(e.locked(None).label, "eeeeeee");
        assert_eq!(e.locked(Some(&refs())).label, "v0.2.0");
        // The cache's refs name it offline.
        let cached = GitRefs {
            branches: Vec::new(),
            converts: Vec::new(),
            tags: vec![r("v0.2.0", "tags", 'e')],
            pull_requests: None,
        };
        assert_eq!(
            entry(spec(), 'e', Some(&cached)).locked(None).label,
            "v0.2.0"
        );
        // A commit no tag points at stays unnamed.
        assert_eq!(entry(spec(), '9', Some(&cached)).label, None);
    }

    #[test]
    fn unreadable_refs_are_unknown() {
        let e = entry(Requirement::Branch(1), 'b', None);
        let mut answers = BTreeMap::new();
        answers.insert(
            e.repo_id.clone(),
            Err(HubError::Offline {
                url: "http://hub/api/kernels/acme/relu/refs".into(),
            }),
        );
        let status = &statuses(std::slice::from_ref(&e), &answers)[0];
        assert_eq!(status.status, Freshness::Unknown);
        assert_eq!(status.outdated, None);
        assert_eq!(status.locked.label, "v1");
        assert_eq!(
            status.error.as_ref().and_then(|e| e.code.as_deref()),
            Some("kernels::hub::offline")
        );
        answers.insert(e.repo_id.clone(), Ok(refs()));
        let status = &statuses(std::slice::from_ref(&e), &answers)[0];
        // v2 is newer.
        assert_eq!(status.status, Freshness::Outdated);
        assert_eq!(status.outdated, Some(true));
        assert_eq!(status.error, None);
        assert_eq!(status.requirement, "1");
        assert_eq!(status.requirement_kind, "version");
    }
}
