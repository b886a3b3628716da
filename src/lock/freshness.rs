//! Freshness of `kernels.lock` against `pyproject.toml` (`kernels lock --check`).
//!
//! Two checks share one report type, [`CheckReport`]:
//!
//! * [`check_offline`] makes no request. It compares the manifest with the lock
//!   structurally: every dependency is locked, no entry is extra, integer
//!   requirements match the versions a `KernelLocks` (0.17) file records, and
//!   otherwise requirements are compared with what the local Hub cache knows about
//!   the locked commit (its `refs/<name>` files, written when a kernel was
//!   downloaded by branch or tag). Entries the cache knows nothing about are
//!   [`FindingKind::Unverified`]: not stale, but not proven fresh either.
//! * [`diff_locks`] compares the current lock with the one a fresh resolution
//!   would write (the online check), entry by entry.
//!
//! A report is stale ([`CheckReport::is_stale`]) when any finding proves the lock
//! would change; `kernels lock --check` then exits 1.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::lock::conflict;
use crate::lock::format::{KernelVersion, LockFormat, LockedKernel, Lockfile, LockfileError};
use crate::lock::manifest::{Dependency, Manifest};
use crate::lock::project::NoVariants;
use crate::lock::requirement::{Requirement, branch_version, select_tag, tag_version};
use kernels_cache::HubCache;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, RepoType};

/// What a finding says about one entry (or the whole file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// The entry is fresh.
    UpToDate,
    /// The manifest has a dependency the lock does not.
    Added,
    /// The lock has an entry no dependency asks for.
    Removed,
    /// The locked commit no longer satisfies the requirement.
    Unsatisfied,
    /// A fresh resolution locks another commit or other variants (online check).
    Changed,
    /// The file is in the format of another target runtime.
    Format,
    /// `kernels.lock` does not exist.
    Missing,
    /// `kernels.lock` cannot be parsed.
    Malformed,
    /// `kernels.lock` contains git merge conflict markers.
    Conflict,
    /// Nothing known offline proves or disproves the entry (offline check only).
    Unverified,
    /// The locked commit has no build variant, so nothing can be downloaded
    /// for it (online check): the lock would not change, but the check fails.
    NoVariants,
}

impl FindingKind {
    /// Whether this finding means the lock would change.
    pub fn is_stale(self) -> bool {
        !matches!(
            self,
            FindingKind::UpToDate | FindingKind::Unverified | FindingKind::NoVariants
        )
    }

    /// The short word shown before a finding's detail.
    pub fn label(self) -> &'static str {
        match self {
            FindingKind::UpToDate => "up to date",
            FindingKind::Added => "added",
            FindingKind::Removed => "removed",
            FindingKind::Unsatisfied => "not satisfied",
            FindingKind::Changed => "would change",
            FindingKind::Format => "other format",
            FindingKind::Missing => "missing",
            FindingKind::Malformed => "malformed",
            FindingKind::Conflict => "conflict",
            FindingKind::Unverified => "not checkable offline",
            FindingKind::NoVariants => "no build variants",
        }
    }
}

/// One explanation: an entry (or the file, when `repo_id` is `None`) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The kernel, or `None` for findings about the whole file.
    pub repo_id: Option<String>,
    /// What kind of difference.
    pub kind: FindingKind,
    /// A sentence naming the entry and the fix.
    pub detail: String,
    /// Commit in the current lock, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_commit: Option<CommitId>,
    /// Commit a fresh resolution would lock (online check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_commit: Option<CommitId>,
}

impl Finding {
    fn new(repo_id: Option<&str>, kind: FindingKind, detail: impl Into<String>) -> Self {
        Finding {
            repo_id: repo_id.map(str::to_owned),
            kind,
            detail: detail.into(),
            locked_commit: None,
            resolved_commit: None,
        }
    }

    fn locked(mut self, commit: &CommitId) -> Self {
        self.locked_commit = Some(commit.clone());
        self
    }
}

/// Which check produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckMode {
    /// No request was made.
    Offline,
    /// The manifest was resolved again against the Hub.
    Online,
}

/// The outcome of a freshness check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The lock file checked.
    pub lock_file: PathBuf,
    /// Offline or online.
    pub mode: CheckMode,
    /// One finding per entry (fresh entries included), then file-level findings.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether any finding proves that the lock would change.
    pub fn is_stale(&self) -> bool {
        self.findings.iter().any(|f| f.kind.is_stale())
    }

    /// Adds a [`FindingKind::NoVariants`] finding for each entry.
    pub fn add_without_variants(&mut self, entries: &[NoVariants]) {
        for entry in entries {
            self.findings.push(
                Finding::new(
                    Some(entry.repo_id.as_str()),
                    FindingKind::NoVariants,
                    entry.reason(),
                )
                .locked(&entry.commit),
            );
        }
    }

    /// Entries whose locked commit has no build variant.
    pub fn without_variants(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.kind == FindingKind::NoVariants)
            .count()
    }

    /// Findings that could not be decided offline.
    pub fn unverified(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.kind == FindingKind::Unverified)
    }
}

/// How a lock file looked on disk.
enum LockState {
    Missing,
    Conflict(String),
    Malformed(String),
    Parsed(Lockfile),
}

/// A lock file read once per command: its path, its text when readable, and
/// what the text parsed to. Every check of a command works on this value.
pub struct LockOnDisk {
    path: PathBuf,
    text: Option<String>,
    state: LockState,
}

impl LockOnDisk {
    /// Reads and parses the file at `path` (a missing, unreadable, conflicted
    /// or malformed file is a state, not an error).
    pub fn read(path: &Path) -> LockOnDisk {
        // Bytes that are not UTF-8 are shown as U+FFFD: such a file is no lock,
        // and its text only serves to say what it looks like.
        let text = fs_err::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        let state = match &text {
            Ok(text) => parse_state(text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => LockState::Missing,
            Err(err) => LockState::Malformed(format!("cannot read it: {err}")),
        };
        LockOnDisk {
            path: path.to_owned(),
            text: text.ok(),
            state,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's text, when it could be read.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The parsed lock, when the file is a valid lock of either format.
    pub fn lockfile(&self) -> Option<&Lockfile> {
        match &self.state {
            LockState::Parsed(lock) => Some(lock),
            _ => None,
        }
    }
}

fn parse_state(text: &str, lock_path: &Path) -> LockState {
    match Lockfile::parse(text, lock_path) {
        Ok(lock) => LockState::Parsed(lock),
        Err(LockfileError::ConflictMarkers { line, .. }) => {
            let entries = conflict::conflicting_repos(text);
            let detail = if entries.is_empty() {
                format!("unresolved merge conflict markers (first at line {line})")
            } else {
                format!(
                    "unresolved merge conflict markers (first at line {line}) in the entries of {}",
                    entries
                        .iter()
                        .map(|r| format!("`{r}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            LockState::Conflict(detail)
        }
        Err(err) => LockState::Malformed(err.to_string()),
    }
}

fn file_level(lock_path: &Path, mode: CheckMode, state: &LockState) -> Option<CheckReport> {
    let finding = match state {
        LockState::Parsed(_) => return None,
        LockState::Missing => Finding::new(
            None,
            FindingKind::Missing,
            format!(
                "{} does not exist; create it with `kernels lock`",
                lock_path.display()
            ),
        ),
        LockState::Conflict(detail) => Finding::new(
            None,
            FindingKind::Conflict,
            format!(
                "{detail}; run `kernels lock` to re-resolve the conflicting entries and write a clean lock"
            ),
        ),
        LockState::Malformed(detail) => Finding::new(
            None,
            FindingKind::Malformed,
            format!("{detail}; run `kernels lock` to write a new lock"),
        ),
    };
    Some(CheckReport {
        lock_file: lock_path.to_owned(),
        mode,
        findings: vec![finding],
    })
}

/// Checks `lock_path` against `manifest` without any request.
///
/// `expected_format` is the format `kernels lock` would write for this project
/// (`None`: any format is accepted). `cache` and `repo_type` locate the Hub cache
/// folders whose `refs/` tell which branches and tags point at a locked commit.
pub fn check_offline(
    manifest: &Manifest,
    lock: &LockOnDisk,
    expected_format: Option<LockFormat>,
    cache: &HubCache,
    repo_type: RepoType,
) -> CheckReport {
    let lock_path = lock.path();
    let LockState::Parsed(lock) = &lock.state else {
        return file_level(lock_path, CheckMode::Offline, &lock.state).unwrap_or(CheckReport {
            lock_file: lock_path.to_owned(),
            mode: CheckMode::Offline,
            findings: Vec::new(),
        });
    };
    let mut findings = Vec::new();
    if let Some(expected) = expected_format.filter(|f| *f != lock.format()) {
        findings.push(Finding::new(
            None,
            FindingKind::Format,
            format!(
                "the file is in the {}, but this project locks in the {}; run `kernels lock` to rewrite it",
                lock.format().finding_name(),
                expected.finding_name()
            ),
        ));
    }
    match &lock {
        Lockfile::VariantHash(_) => {
            check_by_commit(manifest, lock, lock_path, cache, repo_type, &mut findings)
        }
        Lockfile::KernelLocks(locks) => check_kernel_locks(manifest, locks, &mut findings),
    }
    CheckReport {
        lock_file: lock_path.to_owned(),
        mode: CheckMode::Offline,
        findings,
    }
}

/// Offline check of a KernelLocks file (0.17), which records the requested
/// version or revision of every entry: each manifest dependency must have its
/// entry; entries the manifest does not list may be transitive dependencies.
fn check_kernel_locks(
    manifest: &Manifest,
    locks: &crate::lock::format::KernelLocks,
    findings: &mut Vec<Finding>,
) {
    let mut used = BTreeSet::new();
    for dep in &manifest.dependencies {
        findings.push(kernel_locks_entry(dep, locks, &mut used));
    }
    for (dep, commit) in locks.iter() {
        let already_reported = manifest
            .dependencies
            .iter()
            .any(|d| d.repo_id.as_str() == dep.repo_id);
        if !used.contains(dep) && !already_reported {
            // A KernelLocks file also holds the transitive `kernel-depends`
            // of the listed kernels, which only their `metadata.json` on
            // the Hub tells apart from a removed dependency.
            findings.push(
                Finding::new(
                    Some(&dep.repo_id),
                    FindingKind::Unverified,
                    format!(
                        "kernels.lock has {dep}, which pyproject.toml does not list: a transitive kernel dependency or a removed one (the online `kernels lock --check` tells)"
                    ),
                )
                .locked(commit),
            );
        }
    }
}

/// The finding for manifest dependency `dep` in a KernelLocks file; the
/// entries it accounts for are added to `used`.
fn kernel_locks_entry(
    dep: &Dependency,
    locks: &crate::lock::format::KernelLocks,
    used: &mut BTreeSet<crate::lock::format::KernelDependency>,
) -> Finding {
    let repo = dep.repo_id.to_string();
    let of_repo = || locks.iter().filter(|(d, _)| d.repo_id == repo);
    let wanted = match &dep.requirement {
        Requirement::Branch(n) => KernelVersion::Version(*n),
        Requirement::Revision(r) => KernelVersion::Revision(r.clone()),
        other => {
            used.extend(of_repo().map(|(d, _)| d.clone()));
            return Finding::new(
                Some(&repo),
                FindingKind::Format,
                format!(
                    "{other} is a version specifier, which the KernelLocks format (kernels 0.17) cannot record; use an integer version or a revision"
                ),
            );
        }
    };
    if let Some((d, commit)) = of_repo().find(|(d, _)| d.version == wanted) {
        used.insert(d.clone());
        return Finding::new(
            Some(&repo),
            FindingKind::UpToDate,
            format!("{} locked at {commit}", dep.requirement),
        )
        .locked(commit);
    }
    let other: Vec<String> = of_repo().map(|(d, _)| d.to_string()).collect();
    if other.is_empty() {
        Finding::new(
            Some(&repo),
            FindingKind::Added,
            format!(
                "pyproject.toml asks for {}, kernels.lock has no entry; run `kernels lock`",
                dep.requirement
            ),
        )
    } else {
        Finding::new(
            Some(&repo),
            FindingKind::Unsatisfied,
            format!(
                "pyproject.toml asks for {}, kernels.lock records {}; run `kernels lock`",
                dep.requirement,
                other.join(", ")
            ),
        )
    }
}

/// Offline check of a lock that records commits only (variant-hash format).
fn check_by_commit(
    manifest: &Manifest,
    lock: &Lockfile,
    lock_path: &Path,
    cache: &HubCache,
    repo_type: RepoType,
    findings: &mut Vec<Finding>,
) {
    let kernels = match lock.locked_kernels(lock_path) {
        Ok(kernels) => kernels,
        Err(err) => {
            findings.push(Finding::new(
                None,
                FindingKind::Malformed,
                format!("{err}; run `kernels lock` to write a new lock"),
            ));
            return;
        }
    };
    let mut by_repo: BTreeMap<&RepoId, Vec<&LockedKernel>> = BTreeMap::new();
    for kernel in &kernels {
        by_repo.entry(&kernel.repo_id).or_default().push(kernel);
    }
    for dep in &manifest.dependencies {
        let repo = dep.repo_id.to_string();
        match by_repo.get(&dep.repo_id).map(Vec::as_slice) {
            None | Some([]) => findings.push(Finding::new(
                Some(&repo),
                FindingKind::Added,
                format!(
                    "pyproject.toml asks for {}, kernels.lock has no entry; run `kernels lock`",
                    dep.requirement
                ),
            )),
            Some([kernel]) => findings.push(
                CachedCommit::read(dep, &kernel.commit, cache, repo_type).check(&dep.requirement),
            ),
            Some(several) => findings.push(Finding::new(
                Some(&repo),
                FindingKind::Malformed,
                format!(
                    "kernels.lock has {} entries for this kernel; run `kernels lock` to write one",
                    several.len()
                ),
            )),
        }
    }
    for kernel in &kernels {
        if !manifest
            .dependencies
            .iter()
            .any(|d| d.repo_id == kernel.repo_id)
        {
            findings.push(
                Finding::new(
                    Some(kernel.repo_id.as_str()),
                    FindingKind::Removed,
                    format!(
                        "kernels.lock locks it at {}, but pyproject.toml no longer lists it; run `kernels lock`",
                        kernel.commit.short()
                    ),
                )
                .locked(&kernel.commit),
            );
        }
    }
}

/// One variant-hash entry with what the cache's `refs/` know about its
/// commit, decided offline by [`CachedCommit::check`].
struct CachedCommit<'a> {
    /// The manifest dependency's repository, as text.
    repo: String,
    /// The locked commit.
    commit: &'a CommitId,
    /// The cache's ref names at the commit (`RepoCache::refs_at`).
    refs: Vec<String>,
}

impl<'a> CachedCommit<'a> {
    fn read(dep: &Dependency, commit: &'a CommitId, cache: &HubCache, repo_type: RepoType) -> Self {
        CachedCommit {
            repo: dep.repo_id.to_string(),
            commit,
            refs: cache.repo(&dep.repo_id, repo_type).refs_at(commit),
        }
    }

    fn finding(&self, kind: FindingKind, why: String) -> Finding {
        Finding::new(Some(&self.repo), kind, why).locked(self.commit)
    }

    fn ok(&self, why: String) -> Finding {
        self.finding(FindingKind::UpToDate, why)
    }

    fn unverified(&self, why: String) -> Finding {
        let why = format!("{why}; `kernels lock --check` without --offline decides");
        self.finding(FindingKind::Unverified, why)
    }

    fn unsatisfied(&self, why: String) -> Finding {
        self.finding(
            FindingKind::Unsatisfied,
            format!("{why}; run `kernels lock`"),
        )
    }

    /// What the cache knows the commit as, for unverified findings.
    fn known(&self) -> String {
        if self.refs.is_empty() {
            format!(
                "the cache does not know which version the locked commit {} is",
                self.commit.short()
            )
        } else {
            format!(
                "the cache knows the locked commit {} only as {}",
                self.commit.short(),
                self.refs.join(", ")
            )
        }
    }

    /// Decides the entry for `requirement` from the requirement and the refs.
    fn check(&self, requirement: &Requirement) -> Finding {
        match requirement {
            Requirement::Revision(rev) => self.check_revision(rev),
            Requirement::Branch(n) => self.check_branch(requirement, *n),
            Requirement::Pep440(_) | Requirement::Semver(_) => self.check_tagged(requirement),
        }
    }

    fn check_revision(&self, rev: &str) -> Finding {
        let short = self.commit.short();
        if rev.parse::<CommitId>().is_ok_and(|c| c == *self.commit) {
            self.ok(format!("pinned to commit {short}"))
        } else if self.refs.iter().any(|r| r == rev) {
            self.ok(format!("revision `{rev}` is at {short}"))
        } else if CommitId::is_canonical(rev) {
            self.unsatisfied(format!(
                "pyproject.toml pins commit {rev}, kernels.lock has {}",
                self.commit
            ))
        } else {
            self.unverified(format!("revision `{rev}`: {}", self.known()))
        }
    }

    /// An integer requirement `n`, decided as `kernels lock` decides it
    /// (`keep_hashed` in `lock/sticky.rs`) from what the cache's refs say:
    ///
    /// * `v<n>` was at the commit: up to date;
    /// * a lower version branch was at it, so the commit is that branch's
    ///   (a requirement changed from `1` to `2`): `kernels lock` resolves it
    ///   again to `v<n>`'s head, unless `v<n>` points at it now, and then
    ///   `kernels lock` records that in the cache: not up to date either way;
    /// * only higher version branches were at it: whether `v<n>`'s history has
    ///   it, and no lower branch's, only the Hub knows (unverified).
    fn check_branch(&self, requirement: &Requirement, n: u64) -> Finding {
        let wanted = i128::from(n);
        let branches: Vec<(i128, &String)> = self
            .refs
            .iter()
            .filter_map(|r| Some((branch_version(r)?, r)))
            .collect();
        let named = |list: &[&(i128, &String)]| {
            list.iter()
                .map(|(_, b)| format!("branch `{b}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if branches.iter().any(|(v, _)| *v == wanted) {
            return self.ok(format!("branch `v{n}` is at {}", self.commit.short()));
        }
        let lower: Vec<&(i128, &String)> = branches.iter().filter(|(v, _)| *v < wanted).collect();
        if !lower.is_empty() {
            return self.unsatisfied(format!(
                "pyproject.toml asks for {requirement}, but the locked commit {} is {} in the cache: a commit of a lower version branch is resolved again to `v{n}`'s head",
                self.commit.short(),
                named(&lower)
            ));
        }
        self.unverified(format!("{requirement}: {}", self.known()))
    }

    fn check_tagged(&self, requirement: &Requirement) -> Finding {
        let tags: Vec<GitRefInfo> = self
            .refs
            .iter()
            .filter(|r| tag_version(r).is_some())
            .map(|r| GitRefInfo {
                name: r.clone(),
                git_ref: format!("refs/tags/{r}"),
                target_commit: self.commit.clone(),
            })
            .collect();
        if tags.is_empty() {
            return self.unverified(format!("{requirement}: {}", self.known()));
        }
        match select_tag(requirement, &tags) {
            Ok(selected) => self.ok(format!(
                "tag `{}` at {} satisfies {requirement}",
                selected.git_ref.name,
                self.commit.short(),
            )),
            Err(_) => self.unsatisfied(format!(
                "the locked commit {} is {} in the cache, which does not satisfy {requirement}",
                self.commit.short(),
                tags.iter()
                    .map(|t| format!("tag `{}`", t.name))
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }
}

/// Compares the lock on disk (`old`) with the lock a fresh resolution would
/// write (`new`, whose serialized text is `new_text`): one finding per entry, in
/// the new lock's order, then removed entries.
pub fn diff_locks(old: &LockOnDisk, new: &Lockfile, new_text: &str) -> CheckReport {
    let lock_path = old.path();
    let state = &old.state;
    let mut findings = Vec::new();
    let old_kernels = old_entries(old, new.format(), &mut findings);
    let new_kernels = new.locked_kernels(lock_path).unwrap_or_default();
    let had_file = matches!(state, LockState::Parsed(_));
    for kernel in &new_kernels {
        let before = old_kernels.iter().find(|k| k.repo_id == kernel.repo_id);
        if before.is_none() && !had_file {
            continue;
        }
        findings.push(entry_change(before, kernel));
    }
    for old in &old_kernels {
        if !new_kernels.iter().any(|k| k.repo_id == old.repo_id) {
            findings.push(
                Finding::new(
                    Some(old.repo_id.as_str()),
                    FindingKind::Removed,
                    format!(
                        "locked at {}, no longer in pyproject.toml",
                        old.commit.short()
                    ),
                )
                .locked(&old.commit),
            );
        }
    }
    if old.text().is_some_and(|o| o != new_text) && !findings.iter().any(|f| f.kind.is_stale()) {
        findings.push(Finding::new(
            None,
            FindingKind::Changed,
            "the entries agree but `kernels lock` would rewrite the file (formatting or order)",
        ));
    }
    CheckReport {
        lock_file: lock_path.to_owned(),
        mode: CheckMode::Online,
        findings,
    }
}

/// The kernels of the lock on disk, for [`diff_locks`]; file-level findings
/// (a format rewrite to `new_format`, a missing or unreadable file) go to
/// `findings`.
fn old_entries(
    old: &LockOnDisk,
    new_format: LockFormat,
    findings: &mut Vec<Finding>,
) -> Vec<LockedKernel> {
    match &old.state {
        LockState::Parsed(lock) => {
            if new_format != lock.format() {
                findings.push(Finding::new(
                    None,
                    FindingKind::Format,
                    format!(
                        "the file is in the {}; `kernels lock` would rewrite it in the {}",
                        lock.format().finding_name(),
                        new_format.finding_name()
                    ),
                ));
            }
            lock.locked_kernels(old.path()).unwrap_or_default()
        }
        state => {
            if let Some(report) = file_level(old.path(), CheckMode::Online, state) {
                findings.extend(report.findings);
            }
            Vec::new()
        }
    }
}

/// The finding for `kernel` of the fresh lock against its entry `before` in
/// the lock on disk (`None`: a new entry).
fn entry_change(before: Option<&LockedKernel>, kernel: &LockedKernel) -> Finding {
    let repo = Some(kernel.repo_id.as_str());
    let mut finding = match before {
        None => Finding::new(
            repo,
            FindingKind::Added,
            format!("would be locked at {}", kernel.commit),
        ),
        Some(old) if old.commit != kernel.commit => Finding::new(
            repo,
            FindingKind::Changed,
            format!("{} → {}", old.commit, kernel.commit),
        )
        .locked(&old.commit),
        // A 0.17 lock records no variants: across formats only the
        // commit is compared (the rewrite is the `format` finding).
        Some(old)
            if old.variants.is_some()
                && kernel.variants.is_some()
                && old.variants != kernel.variants =>
        {
            Finding::new(
                repo,
                FindingKind::Changed,
                format!(
                    "commit {} unchanged, variant hashes differ ({})",
                    kernel.commit.short(),
                    variant_changes(old, kernel)
                ),
            )
            .locked(&old.commit)
        }
        Some(old) => Finding::new(
            repo,
            FindingKind::UpToDate,
            format!("locked at {}", old.commit.short()),
        )
        .locked(&old.commit),
    };
    finding.resolved_commit = Some(kernel.commit.clone());
    finding
}

fn variant_changes(old: &LockedKernel, new: &LockedKernel) -> String {
    let empty = Default::default();
    let before = old.variants.as_ref().unwrap_or(&empty);
    let after = new.variants.as_ref().unwrap_or(&empty);
    let mut parts = Vec::new();
    for (name, hash) in after {
        match before.get(name) {
            None => parts.push(format!("+{name}")),
            Some(h) if h != hash => parts.push(format!("~{name}")),
            Some(_) => {}
        }
    }
    for name in before.keys() {
        if !after.contains_key(name) {
            parts.push(format!("-{name}"));
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const C1: &str = "1111111111111111111111111111111111111111";
    const C2: &str = "2222222222222222222222222222222222222222";

    fn manifest(deps: &str) -> Manifest {
        Manifest::parse(
            &format!("[tool.kernels.dependencies]\n{deps}"),
            Path::new("pyproject.toml"),
        )
        .unwrap()
    }

    fn variant_hash_lock(entries: &[(&str, &str)]) -> String {
        let items: Vec<String> = entries
            .iter()
            .map(|(repo, sha)| {
                format!(
                    r#"{{"repo_id": "{repo}", "sha": "{sha}", "variants": {{"torch-universal": {{"hash": "sha256-00", "hash_type": "git_lfs_concat"}}}}}}"#
                )
            })
            .collect();
        format!("[{}]", items.join(","))
    }

    fn check(manifest_deps: &str, lock: &str, refs: &[(&str, &str, &str)]) -> CheckReport {
        let dir = tempfile::tempdir().unwrap();
        let lock_path = dir.path().join("kernels.lock");
        fs_err::write(&lock_path, lock).unwrap();
        let cache = HubCache::new(dir.path().join("cache"));
        for (repo, name, commit) in refs {
            let repo: RepoId = repo.parse().unwrap();
            cache
                .repo(&repo, RepoType::Kernel)
                .write_ref(name, commit)
                .unwrap();
        }
        check_offline(
            &manifest(manifest_deps),
            &LockOnDisk::read(&lock_path),
            None,
            &cache,
            RepoType::Kernel,
        )
    }

    fn kinds(report: &CheckReport) -> Vec<(String, FindingKind)> {
        report
            .findings
            .iter()
            .map(|f| (f.repo_id.clone().unwrap_or_default(), f.kind))
            .collect()
    }

    #[test]
    fn cold_cache_is_unverified_not_stale() {
        let report = check(
            "\"a/x\" = \">=0.1\"\n",
            &variant_hash_lock(&[("a/x", C1)]),
            &[],
        );
        assert_eq!(kinds(&report), [("a/x".into(), FindingKind::Unverified)]);
        assert!(!report.is_stale());
    }

    #[test]
    fn added_and_removed_entries_are_stale() {
        let report = check(
            "\"a/x\" = 1\n\"a/new\" = 1\n",
            &variant_hash_lock(&[("a/x", C1), ("a/old", C2)]),
            &[],
        );
        assert_eq!(
            kinds(&report),
            [
                ("a/x".into(), FindingKind::Unverified),
                ("a/new".into(), FindingKind::Added),
                ("a/old".into(), FindingKind::Removed),
            ]
        );
        assert!(report.is_stale());
    }

    #[test]
    fn cache_refs_decide_requirements() {
        let lock = variant_hash_lock(&[("a/x", C1)]);
        let fresh = check("\"a/x\" = \">=0.2\"\n", &lock, &[("a/x", "v0.2.0", C1)]);
        assert_eq!(kinds(&fresh), [("a/x".into(), FindingKind::UpToDate)]);
        let stale = check("\"a/x\" = \">=0.3\"\n", &lock, &[("a/x", "v0.2.0", C1)]);
        assert_eq!(kinds(&stale), [("a/x".into(), FindingKind::Unsatisfied)]);
        assert!(stale.findings[0].detail.contains("tag `v0.2.0`"));
        let branch = check("\"a/x\" = 2\n", &lock, &[("a/x", "v1", C1)]);
        assert_eq!(kinds(&branch), [("a/x".into(), FindingKind::Unsatisfied)]);
        let same = check("\"a/x\" = 1\n", &lock, &[("a/x", "v1", C1)]);
        assert_eq!(kinds(&same), [("a/x".into(), FindingKind::UpToDate)]);
        let pinned = check(
            &format!("\"a/x\" = {{ revision = \"{C2}\" }}\n"),
            &lock,
            &[],
        );
        assert_eq!(kinds(&pinned), [("a/x".into(), FindingKind::Unsatisfied)]);
    }

    #[test]
    fn kernel_locks_record_versions() {
        let lock = format!(
            r#"[{{"dependency": {{"repo-id": "a/x", "version": 1}}, "lock": {{"commit": "{C1}"}}}}]"#
        );
        assert!(!check("\"a/x\" = 1\n", &lock, &[]).is_stale());
        let changed = check("\"a/x\" = 2\n", &lock, &[]);
        assert_eq!(kinds(&changed), [("a/x".into(), FindingKind::Unsatisfied)]);
        let spec = check("\"a/x\" = \">=1\"\n", &lock, &[]);
        assert_eq!(kinds(&spec), [("a/x".into(), FindingKind::Format)]);
    }

    #[test]
    fn file_level_problems() {
        let conflict = format!(
            "[\n<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> other\n]",
            variant_hash_lock(&[("a/x", C1)]),
            variant_hash_lock(&[("a/x", C2)])
        );
        let report = check("\"a/x\" = 1\n", &conflict, &[]);
        assert_eq!(kinds(&report), [(String::new(), FindingKind::Conflict)]);
        let report = check("\"a/x\" = 1\n", "{", &[]);
        assert_eq!(kinds(&report), [(String::new(), FindingKind::Malformed)]);
    }

    #[test]
    fn online_diff_names_each_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kernels.lock");
        let old = variant_hash_lock(&[("a/x", C1), ("a/gone", C1)]);
        fs_err::write(&path, &old).unwrap();
        let new = variant_hash_lock(&[("a/x", C2), ("a/new", C1)]);
        let parse = |text: &str| Lockfile::parse(text, &path).unwrap();
        let on_disk = LockOnDisk::read(&path);
        let report = diff_locks(&on_disk, &parse(&new), &new);
        assert_eq!(
            kinds(&report),
            [
                ("a/x".into(), FindingKind::Changed),
                ("a/new".into(), FindingKind::Added),
                ("a/gone".into(), FindingKind::Removed),
            ]
        );
        let same = diff_locks(&on_disk, &parse(&old), &old);
        assert!(!same.is_stale());
        let missing = diff_locks(
            &LockOnDisk::read(&dir.path().join("absent.lock")),
            &parse(&new),
            &new,
        );
        assert_eq!(kinds(&missing), [(String::new(), FindingKind::Missing)]);
    }
}
