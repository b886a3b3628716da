//! `kernels to-wheel --locked` / `--frozen`: wheels for every kernel and variant of a
//! project's `kernels.lock`.
//!
//! Each locked commit is downloaded (or verified in the cache) through
//! [`crate::install::download`]; the wheels then come from the cache
//! snapshot. The wheel version of a kernel is chosen by [`LockedVersion`]:
//!
//! 1. a `KernelLocks` entry (reference 0.17) with `version = N` gives `N`; one
//!    whose `revision` is a release tag (`v1.2.0` or `1.2.0`) gives that version;
//! 2. otherwise (variant-hash locks, 0.17 branch or commit revisions) the
//!    highest release tag `v<PEP 440>` pointing at the locked commit, taken
//!    from the Hub's ref listing and recorded in the cache's `refs/` (offline,
//!    or when the listing fails: from the cache's `refs/` files);
//! 3. otherwise `0+g<first 7 hex digits of the commit>`.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use pep440_rs::Version;

use crate::install::{DownloadOptions, LockedKernel, Reporter, download};
use crate::lock::format::{KernelVersion, Lockfile};
use crate::lock::label::release_tag;
use crate::variant::VariantSelection;
use crate::wheel::error::WheelError;
use crate::wheel::plan::plan_wheels;
use crate::wheel::report::Plan;
pub use crate::wheel::report::{LockedBuild, LockedVersion};
use crate::wheel::source::Snapshot;
use crate::wheel::spec::{Kernel, WheelOptions};
use kernels_cache::HubCache;
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::variant_name::BuildVariant;
use kernels_types::wire::RepoType;

/// The release version a tag or revision name spells: `v1.2.0` or `1.2.0`,
/// PEP 440 without a local part.
pub fn release_version(name: &str) -> Option<Version> {
    let text = name.strip_prefix('v').unwrap_or(name);
    let version = Version::from_str(text).ok()?;
    (!version.is_local() && text.starts_with(|c: char| c.is_ascii_digit())).then_some(version)
}

/// The highest release tag ([`release_tag`]) among `refs` (name, commit)
/// pointing at `commit`.
fn best_tag<'a>(
    refs: impl IntoIterator<Item = (&'a str, &'a CommitId)>,
    commit: &CommitId,
) -> Option<String> {
    release_tag(
        refs.into_iter()
            .filter(|(_, target)| *target == commit)
            .map(|(name, _)| name),
    )
    .map(|(_, name)| name.to_owned())
}

/// The highest release tag at the locked commit among the cache's refs
/// ([`kernels_cache::RepoCache::refs`]).
fn cached_tag(cache: &HubCache, locked: &LockedKernel, repo_type: RepoType) -> Option<String> {
    let refs: Vec<(String, CommitId)> = cache
        .repo(&locked.repo_id, repo_type)
        .refs()
        .into_iter()
        .map(|r| (r.name, r.commit))
        .collect();
    best_tag(refs.iter().map(|(n, t)| (n.as_str(), t)), &locked.commit)
}

/// Version hints of a `KernelLocks` file: `(repo id, commit)` → the first
/// entry's version (`N`) or release-tag revision, in the file's sorted order.
fn lock_hints(lock: &Lockfile) -> BTreeMap<(String, CommitId), String> {
    let mut hints = BTreeMap::new();
    if let Lockfile::KernelLocks(locks) = lock {
        for (dep, commit) in locks.iter() {
            let hint = match &dep.version {
                KernelVersion::Version(n) => Some(n.to_string()),
                KernelVersion::Revision(r) => release_version(r).map(|v| v.to_string()),
            };
            if let Some(hint) = hint {
                hints
                    .entry((dep.repo_id.clone(), commit.clone()))
                    .or_insert(hint);
            }
        }
    }
    hints
}

/// Downloads (or verifies in the cache) every kernel of `lock` and plans
/// its wheels; see the module docs for the version rule. Kernels are handled
/// one after the other; the first failure stops the run before any wheel is
/// written. Two kernels whose wheels would share a file name are an error
/// ([`WheelError::DuplicateWheel`]).
pub async fn plan_locked(
    client: &HubClient,
    cache: &HubCache,
    lock: &Lockfile,
    lock_path: &Path,
    download_options: &DownloadOptions,
    options: &WheelOptions,
    progress: impl Fn() -> Box<dyn Reporter>,
) -> Result<Vec<LockedBuild>, WheelError> {
    let kernels = lock
        .locked_kernels(lock_path)
        .map_err(|err| WheelError::Lockfile(Box::new(err)))?;
    let hints = lock_hints(lock);
    let mut builds = Vec::new();
    let mut by_file: BTreeMap<String, String> = BTreeMap::new();
    for locked in kernels {
        let (selection, names, skipped_locked) = locked_selection(&locked);
        if matches!(&selection, VariantSelection::Named(n) if n.is_empty()) {
            builds.push(LockedBuild {
                locked,
                version: String::new(),
                version_source: LockedVersion::Commit,
                plan: Plan {
                    wheels: Vec::new(),
                    skipped: Vec::new(),
                    notes: Vec::new(),
                },
                skipped_locked,
            });
            continue;
        }
        let options_here = DownloadOptions {
            selection,
            ..download_options.clone()
        };
        let mut summary = download(
            client,
            cache,
            std::slice::from_ref(&locked),
            &options_here,
            &*progress(),
        )
        .await;
        if let Some(failure) = summary.failed.pop() {
            return Err(failure.error.into());
        }
        let repo_type = download_options.repo_type;
        let hint = hints.get(&(locked.repo_id.to_string(), locked.commit.clone()));
        let version_source = match hint {
            Some(hint) => LockedVersion::Lock(hint.clone()),
            None => version_from_tags(client, cache, &locked, repo_type).await?,
        };
        let kernel = kernel_for(&locked, &version_source)?;
        let snapshot = Snapshot::from_dir(
            &cache
                .repo(&locked.repo_id, repo_type)
                .snapshot_dir(locked.commit.as_str()),
        )?;
        let plan = plan_wheels(&kernel, &snapshot, &names, options)?;
        check_file_names(&mut by_file, &locked, &plan)?;
        builds.push(LockedBuild {
            locked,
            version: kernel.display_version(),
            version_source,
            plan,
            skipped_locked,
        });
    }
    Ok(builds)
}

/// What to download and build of `locked`: the selection, the variant names
/// to build, and the locked variants that cannot become wheels. Variant-hash
/// locks name their variants: the ones that can become wheels are built.
/// KernelLocks files do not: every variant is built.
fn locked_selection(locked: &LockedKernel) -> (VariantSelection, Vec<String>, Vec<String>) {
    match &locked.variants {
        Some(hashes) => {
            let (known, unknown): (Vec<String>, Vec<String>) = hashes
                .keys()
                .cloned()
                .partition(|name| BuildVariant::parse(name).is_known());
            (VariantSelection::Named(known.clone()), known, unknown)
        }
        None => (VariantSelection::All, Vec::new(), Vec::new()),
    }
}

/// Without a hint from the lock: the highest release tag at the locked
/// commit from the Hub's ref listing (recorded in the cache's `refs/`), or
/// offline or when the listing fails, from the cache's `refs/`.
async fn version_from_tags(
    client: &HubClient,
    cache: &HubCache,
    locked: &LockedKernel,
    repo_type: RepoType,
) -> Result<LockedVersion, WheelError> {
    let from_hub = if client.is_offline() {
        None
    } else {
        client
            .list_refs(repo_type, &locked.repo_id)
            .await
            .ok()
            .map(|refs| {
                best_tag(
                    refs.tags
                        .iter()
                        .map(|t| (t.name.as_str(), &t.target_commit)),
                    &locked.commit,
                )
            })
    };
    Ok(match from_hub {
        Some(Some(tag)) => {
            // As `huggingface_hub` does for resolved revisions, so that an
            // offline run finds the same version.
            cache
                .repo(&locked.repo_id, repo_type)
                .write_ref(&tag, locked.commit.as_str())
                .map_err(crate::install::DownloadError::from)?;
            LockedVersion::HubTag(tag)
        }
        // The Hub answered: no release tag at this commit.
        Some(None) => LockedVersion::Commit,
        None => cached_tag(cache, locked, repo_type)
            .map_or(LockedVersion::Commit, LockedVersion::CachedRef),
    })
}

/// The kernel the wheels of `locked` are built for, with the version
/// `source` gives (a leading `v` dropped), or named by its commit.
fn kernel_for(locked: &LockedKernel, source: &LockedVersion) -> Result<Kernel, WheelError> {
    match source {
        LockedVersion::Lock(v) | LockedVersion::HubTag(v) | LockedVersion::CachedRef(v) => {
            let text = v.strip_prefix('v').unwrap_or(v);
            Kernel::new(locked.repo_id.clone(), text)
        }
        LockedVersion::Commit => Kernel::at_commit(locked.repo_id.clone(), locked.commit.as_str()),
    }
}

/// Records the wheel file names of `plan` in `by_file` (file name → the
/// kernel and variant that makes it); a name already there is an error.
fn check_file_names(
    by_file: &mut BTreeMap<String, String>,
    locked: &LockedKernel,
    plan: &Plan,
) -> Result<(), WheelError> {
    let label = format!("{}@{}", locked.repo_id, locked.commit.short());
    for wheel in &plan.wheels {
        let here = format!("{label} {}", wheel.variant);
        if let Some(first) = by_file.insert(wheel.spec.file_name(), here.clone()) {
            return Err(WheelError::DuplicateWheel {
                file: wheel.spec.file_name(),
                first,
                second: here,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_versions_and_best_tags() {
        assert_eq!(release_version("v0.0.3").unwrap().to_string(), "0.0.3");
        assert_eq!(release_version("0.1.0rc1").unwrap().to_string(), "0.1.0rc1");
        assert_eq!(release_version("v1").unwrap().to_string(), "1");
        for not in ["main", "v1.0+local", "vv1", "v", "release-1"] {
            assert!(release_version(not).is_none(), "{not}");
        }
        let commit = |c: &str| -> CommitId { c.parse().unwrap() };
        let c = &commit("0123456789abcdef0123456789abcdef01234567");
        let other = &commit("1123456789abcdef0123456789abcdef01234567");
        let refs = [
            ("v0.0.2", c),
            ("v0.0.10", c),
            ("main", c),
            ("v0.0.11", other),
        ];
        assert_eq!(best_tag(refs, c).unwrap(), "v0.0.10");
        let none = commit("2123456789abcdef0123456789abcdef01234567");
        assert!(best_tag(refs, &none).is_none());
    }

    #[test]
    fn kernel_locks_hints() {
        let text = r#"[
  {"dependency": {"repo-id": "a/b", "version": 1}, "lock": {"commit": "0123456789abcdef0123456789abcdef01234567"}},
  {"dependency": {"repo-id": "a/c", "revision": "v0.2.0"}, "lock": {"commit": "1123456789abcdef0123456789abcdef01234567"}},
  {"dependency": {"repo-id": "a/d", "revision": "main"}, "lock": {"commit": "2123456789abcdef0123456789abcdef01234567"}}
]"#;
        let lock = Lockfile::parse(text, Path::new("kernels.lock")).unwrap();
        let hints = lock_hints(&lock);
        let get = |repo: &str, c: &str| {
            hints
                .get(&(repo.to_owned(), c.parse::<CommitId>().unwrap()))
                .cloned()
        };
        assert_eq!(
            get("a/b", "0123456789abcdef0123456789abcdef01234567").as_deref(),
            Some("1")
        );
        assert_eq!(
            get("a/c", "1123456789abcdef0123456789abcdef01234567").as_deref(),
            Some("0.2.0")
        );
        assert_eq!(get("a/d", "2123456789abcdef0123456789abcdef01234567"), None);
    }
}
