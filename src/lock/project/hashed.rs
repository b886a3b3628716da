//! Locking for variant-hash profiles (runtimes ≤0.16): every dependency is
//! kept from the previous lock while still satisfied, or resolved to a commit
//! and the `git_lfs_concat` hash of each build variant.

use std::collections::HashMap;

use futures_util::StreamExt;
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::metadata::KernelsVersion;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::fit::{LockedVariants, VariantState};
use crate::lock::format::Lockfile;
use crate::lock::format::variant_hash::{KernelHashLock, VariantHash};
use crate::lock::manifest::{Dependency, Manifest};
use crate::lock::project::depends::variant_metadata;
use crate::lock::project::error::{Failure, LockError, check_errors};
use crate::lock::project::locker::Locker;
use crate::lock::project::outcome::{LockOutcome, Locked};
use crate::lock::resolver::{MAX_IN_FLIGHT, ResolvedKernel, Resolver};
use crate::lock::sticky::{Upgrade, Verdict, keep_hashed};

/// Kernels whose `metadata.json` files are read at the same time for the fit
/// of declared targets: each reads up to 8 blobs at once, so 128 requests in
/// flight at most, as for [`MAX_IN_FLIGHT`] dependencies.
const METADATA_KERNELS: usize = 16;

/// Each variant's metadata of one commit, or why it could not be read.
type VariantAnswers = Vec<(String, Result<kernels_types::metadata::Metadata, LockError>)>;

/// One variant-hash entry: kept from the previous lock, or resolved (with the
/// resolution's remarks and what the previous commit was known as).
enum Hashed {
    Kept { lock: KernelHashLock, label: String },
    Resolved(Box<ResolvedKernel>, Vec<String>, Option<String>),
}

impl Locker<'_> {
    pub(super) async fn variant_hash(&self, manifest: &Manifest) -> Result<LockOutcome, LockError> {
        let resolver = self.resolver(self.profile.repo_type);
        let results: Vec<_> = futures_util::stream::iter(&manifest.dependencies)
            .map(|dep| async {
                (
                    dep.repo_id.clone(),
                    self.sticky_hashed(&resolver, dep).await,
                )
            })
            .buffered(MAX_IN_FLIGHT)
            .collect()
            .await;
        let mut locks = Vec::new();
        let mut locked = Vec::new();
        let mut warnings = Vec::new();
        let mut errors = Vec::new();
        let mut labels = HashMap::new();
        let mut previous_labels = HashMap::new();
        let mut held_back = Vec::new();
        let mut kept = 0;
        for (repo_id, result) in results {
            match result {
                Ok(Hashed::Kept { lock, label }) => {
                    kept += 1;
                    labels.insert(lock.repo_id.clone(), label);
                    locks.push(lock);
                }
                Ok(Hashed::Resolved(kernel, mut notes, old_label)) => {
                    labels.insert(kernel.repo_id.to_string(), kernel.chosen.clone());
                    if let Some(old_label) = old_label {
                        previous_labels.insert(kernel.repo_id.to_string(), old_label);
                    }
                    warnings.append(&mut notes);
                    warnings.extend(kernel.warnings.iter().cloned());
                    held_back.extend(kernel.held_back.clone());
                    locked.push(Locked {
                        repo_id: kernel.repo_id.to_string(),
                        version: kernel.chosen.clone(),
                        commit: kernel.commit.clone(),
                        variant_count: Some(kernel.variants.len()),
                        required_by: None,
                    });
                    locks.push(KernelHashLock::new(
                        kernel.repo_id.to_string(),
                        kernel.commit,
                        kernel
                            .variants
                            .into_iter()
                            .map(|(name, hash)| (name, VariantHash::git_lfs_concat(hash)))
                            .collect(),
                    ));
                }
                Err(error) => errors.push(Failure { repo_id, error }),
            }
        }
        check_errors(errors, manifest)?;
        Ok(LockOutcome {
            lockfile: Lockfile::VariantHash(locks),
            locked,
            warnings,
            labels,
            previous_labels,
            kept,
            variants: Vec::new(),
            fit: Vec::new(),
            held_back,
        })
    }

    /// The locked variants of every entry of a variant-hash `outcome` with
    /// their `metadata.json` (one listing of `build/` per entry, then each
    /// distinct blob from the cache or the Hub), for the fit of declared
    /// targets. A variant whose metadata cannot be read is
    /// [`VariantState::Unread`] with the error.
    pub(super) async fn hashed_variants(&self, outcome: &LockOutcome) -> Vec<LockedVariants> {
        let Lockfile::VariantHash(locks) = &outcome.lockfile else {
            return Vec::new();
        };
        futures_util::stream::iter(locks)
            .map(|lock| async move {
                let label = outcome
                    .labels
                    .get(&lock.repo_id)
                    .cloned()
                    .unwrap_or_else(|| lock.sha.short().to_owned());
                let mut kernel = LockedVariants {
                    repo_id: lock.repo_id.clone(),
                    label,
                    variants: Default::default(),
                };
                let read = match lock.repo_id.parse::<RepoId>() {
                    Ok(repo_id) => self.read_variants(&repo_id, &lock.sha).await,
                    Err(err) => Err(err.to_string()),
                };
                for name in lock.variants.keys() {
                    let state = match &read {
                        Err(why) => VariantState::Unread(why.clone()),
                        Ok(found) => match found.iter().find(|(n, _)| n == name) {
                            Some((_, Ok(m))) => VariantState::Read(Box::new(m.clone())),
                            Some((_, Err(err))) => VariantState::Unread(err.to_string()),
                            None => VariantState::Unread("it has no metadata.json".to_owned()),
                        },
                    };
                    kernel.variants.insert(name.clone(), state);
                }
                kernel
            })
            .buffered(METADATA_KERNELS)
            .collect()
            .await
    }

    /// Every variant's `metadata.json` of `repo_id` at `commit` (variant →
    /// metadata or its error), through the cache.
    async fn read_variants(
        &self,
        repo_id: &RepoId,
        commit: &CommitId,
    ) -> Result<VariantAnswers, String> {
        let read = variant_metadata(
            self.client,
            self.metadata.as_ref(),
            self.profile.repo_type,
            repo_id,
            commit,
            self.profile.runtime.map(|v| KernelsVersion {
                major: v.major,
                minor: v.minor,
                patch: v.patch,
            }),
        )
        .await;
        if let Some(cache) = &self.metadata {
            cache.flush().await;
        }
        match read {
            Ok(found) => Ok(found.map(|f| f.variants).unwrap_or_default()),
            Err(err) => Err(err.to_string()),
        }
    }

    /// The previous variant-hash entry of `dep` when an upgrade covers it.
    fn previous_for_label(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        if !self.options.upgrade.covers(dep.repo_id.as_str()) {
            return None;
        }
        self.previous_entry(dep)
    }

    /// The previous variant-hash entry of `dep`, unless an upgrade covers it.
    fn previous_hashed(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        if self.options.upgrade.covers(dep.repo_id.as_str()) {
            return None;
        }
        self.previous_entry(dep)
    }

    fn previous_entry(&self, dep: &Dependency) -> Option<&KernelHashLock> {
        match &self.options.previous {
            Some(Lockfile::VariantHash(locks)) => {
                let mut found = locks.iter().filter(|l| l.repo_id == dep.repo_id.as_str());
                match (found.next(), found.next()) {
                    (Some(lock), None) => Some(lock),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Keeps the previous entry of `dep` when it is still satisfied, else
    /// resolves it.
    async fn sticky_hashed(
        &self,
        resolver: &Resolver,
        dep: &Dependency,
    ) -> Result<Hashed, LockError> {
        let mut old_label = None;
        if let Some(previous) = self.previous_for_label(dep) {
            old_label = self.upgraded_label(resolver, dep, previous).await;
        } else if let Some(previous) = self.previous_hashed(dep) {
            let verdict = keep_hashed(
                self.client,
                resolver.repo_type(),
                &dep.repo_id,
                &dep.requirement,
                &previous.sha,
            )
            .await;
            match verdict {
                Ok(Verdict::Keep { label, .. })
                    if !self
                        .cooldown_keeps(
                            resolver.repo_type(),
                            &dep.repo_id,
                            &dep.requirement,
                            &previous.sha,
                        )
                        .await =>
                {
                    // Locked before the cooldown held it back.
                    old_label = Some(label);
                }
                Ok(Verdict::Keep { label, at }) => {
                    if at {
                        self.record_ref(resolver.repo_type(), &dep.repo_id, &label, &previous.sha);
                    }
                    return Ok(Hashed::Kept {
                        lock: previous.clone(),
                        label,
                    });
                }
                // `-P` of other entries: what is locked stays.
                Ok(Verdict::Unproven) if matches!(self.options.upgrade, Upgrade::Packages(_)) => {
                    return Ok(Hashed::Kept {
                        lock: previous.clone(),
                        label: previous.sha.short().to_owned(),
                    });
                }
                Ok(Verdict::Unproven) => {}
                Ok(Verdict::Resolve { old_label: label }) => old_label = label,
                // Resolution reports the repository's problem (or falls back
                // to the model API).
                Err(_) => {}
            }
        }
        let (kernel, notes) = self.resolve_hashed(resolver, dep).await?;
        // Resolved again to exactly the locked entry (a cooldown holding `vN`
        // back at a commit a lower branch has too): no change, so no old name.
        if self.previous_entry(dep).is_some_and(|previous| {
            previous.sha == kernel.commit
                && previous.variants.len() == kernel.variants.len()
                && kernel.variants.iter().all(|(name, hash)| {
                    previous.variants.get(name).is_some_and(|v| v.hash == *hash)
                })
        }) {
            old_label = None;
        }
        Ok(Hashed::Resolved(Box::new(kernel), notes, old_label))
    }

    /// The name of `previous` (the locked entry of `dep`) when it is upgraded
    /// anyway (`--upgrade`): the ref at it that keeps it for the requirement,
    /// else a ref that still points at it, else the ref that has it in its
    /// history; `None` when nothing names it.
    async fn upgraded_label(
        &self,
        resolver: &Resolver,
        dep: &Dependency,
        previous: &KernelHashLock,
    ) -> Option<String> {
        let repo_type = resolver.repo_type();
        let kept = keep_hashed(
            self.client,
            repo_type,
            &dep.repo_id,
            &dep.requirement,
            &previous.sha,
        )
        .await;
        let at = label_at(self.client, repo_type, &dep.repo_id, &previous.sha);
        match kept {
            Ok(Verdict::Keep { label, at: true }) => Some(label),
            // In the history only: a ref that still points at the commit
            // names it, else the ref that keeps it.
            Ok(Verdict::Keep { label, at: false }) => at.await.or(Some(label)),
            _ => at.await,
        }
    }

    /// After keeping `commit` because the ref `name` points at it: when the
    /// Hub cache already knows the commit under other names only, records
    /// `refs/<name>` there too, so that the offline check (which reads those
    /// names, `lock/freshness.rs`) agrees with this lock instead of asking for
    /// a `kernels lock` that changes nothing. A cold cache stays untouched, and
    /// a cache that cannot be written keeps what it has.
    fn record_ref(&self, repo_type: RepoType, repo_id: &RepoId, name: &str, commit: &CommitId) {
        let Some(cache) = &self.options.cache else {
            return;
        };
        let repo = cache.repo(repo_id, repo_type);
        let known = repo.refs_at(commit);
        if known.is_empty() || known.iter().any(|r| r == name) {
            return;
        }
        if let Err(err) = repo.write_ref(name, commit.as_str()) {
            tracing::warn!("{repo_id}: cannot record refs/{name}: {err}");
        }
    }

    async fn resolve_hashed(
        &self,
        resolver: &Resolver,
        dep: &Dependency,
    ) -> Result<(ResolvedKernel, Vec<String>), LockError> {
        let mut warnings = Vec::new();
        match resolver.resolve(dep).await {
            Ok(kernel) => Ok((kernel, warnings)),
            Err(err) => {
                self.model_fallback(&dep.repo_id, err, &mut warnings)
                    .await?;
                let kernel = self.resolver(RepoType::Model).resolve(dep).await?;
                Ok((kernel, warnings))
            }
        }
    }
}

/// The version label of `commit` ([`crate::lock::label`]), for change lines.
async fn label_at(
    client: &HubClient,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
) -> Option<String> {
    let refs = client.list_refs(repo_type, repo_id).await.ok()?;
    crate::lock::inspect::label_in(&refs, commit).map(str::to_owned)
}
