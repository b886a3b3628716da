//! `kernels download --explain` and `kernels env`: the variants each locked
//! kernel has (from the Hub listing, or offline from the cached snapshot), why
//! each one was or was not chosen for the environment, and which newer
//! versions of the kernel have a build the environment takes (the hint the
//! reference runtime 0.17 gives when no variant suits, extended to every newer
//! version rather than the highest one only).

use std::collections::BTreeSet;

use futures_util::future::join_all;

use super::error::DownloadError;
use super::options::DownloadOptions;
use super::plan;
use super::variant_fit::{FitSource, VariantFit, kernel_fits};
use crate::lock::format::LockedKernel;
use crate::lock::inspect::build_variants;
use crate::lock::requirement::{branch_version, tag_version};
use crate::variant::ranking::VariantVerdict;
use crate::variant::{FitPolicy, VariantSelection};
use kernels_cache::HubCache;
use kernels_hub::{HubClient, HubError};
use kernels_types::CommitId;
use kernels_types::wire::{GitRefs, TreeEntry};

/// At most this many newer refs are listed per kernel (newest first), so that
/// a repository with hundreds of tags costs a bounded number of requests.
pub const NEWER_LOOKUPS: usize = 8;

/// The explanation of one kernel.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelExplanation {
    /// Hub repository.
    pub repo_id: String,
    /// Locked commit.
    pub commit: CommitId,
    /// The chosen variants (empty when none suits).
    pub chosen: Vec<String>,
    /// Every variant the commit has, in name order.
    pub variants: Vec<VariantVerdict>,
    /// Newer versions (refs) with a build the selection takes, newest first:
    /// `vN` branches above the locked one, then release tags above the locked
    /// one (every branch and release tag when the locked commit is on no
    /// ref). `None` when not looked up: offline, with `--all-variants`, or
    /// when the lookup failed (`newer_error` says why).
    pub newer: Option<Vec<NewerVersion>>,
    /// Why the newer versions could not be looked up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub newer_error: Option<String>,
    /// The fit of every variant for the targets ([`super::fit`]), chosen
    /// ones first, then the others in name order; `None` when not asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<Vec<VariantFit>>,
}

/// What [`explain`] says about the fit of each variant: the policy, and
/// whether metadata missing from the cache is fetched (`kernels download
/// --explain`, online) or reported as not in the cache (`kernels env`).
#[derive(Clone, Copy)]
pub struct FitRequest<'a> {
    /// The targets and rules.
    pub policy: &'a FitPolicy,
    /// Fetch what the cache lacks.
    pub fetch: bool,
}

/// A newer version of a kernel with a build the selection takes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewerVersion {
    /// `branch` (`vN`) or `tag` (`vX.Y.Z`).
    pub kind: &'static str,
    /// The ref name.
    pub name: String,
    /// The commit the ref points at (40 hex, lowercase).
    pub commit: CommitId,
    /// The variants the selection would take at that commit.
    pub variants: Vec<String>,
}

/// Which refs name a kernel's versions: what its requirement selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionRefs {
    /// `vN` branches (an integer requirement; every 0.17 lock entry).
    Branches,
    /// `vX.Y.Z` release tags (a version specifier).
    Tags,
    /// Both (a revision requirement of a variant-hash lock).
    Any,
}

/// The refs of `refs` of the `kinds` that name a newer version than `commit`,
/// newest first, as `(kind, name, commit)`: branches `vN` with N above the
/// highest branch at `commit`, then release tags above the highest release tag
/// at `commit`. When no ref of a kind points at `commit`, every ref of that
/// kind that points elsewhere.
fn newer_refs(
    refs: &GitRefs,
    commit: &CommitId,
    kinds: VersionRefs,
) -> Vec<(&'static str, String, CommitId)> {
    let at_lock = |c: &CommitId| c == commit;
    let mut branches: Vec<_> = refs
        .branches
        .iter()
        .filter_map(|b| Some((branch_version(&b.name)?, b)))
        .collect();
    let mut tags: Vec<_> = refs
        .tags
        .iter()
        .filter_map(|t| Some((tag_version(&t.name)?, t)))
        .filter(|(v, _)| !v.any_prerelease())
        .collect();
    let locked_branch = branches
        .iter()
        .filter(|(_, b)| at_lock(&b.target_commit))
        .map(|(n, _)| *n)
        .max();
    let locked_tag = tags
        .iter()
        .filter(|(_, t)| at_lock(&t.target_commit))
        .map(|(v, _)| v.clone())
        .max();
    branches.retain(|(n, b)| {
        kinds != VersionRefs::Tags
            && !at_lock(&b.target_commit)
            && locked_branch.is_none_or(|l| *n > l)
    });
    tags.retain(|(v, t)| {
        kinds != VersionRefs::Branches
            && !at_lock(&t.target_commit)
            && locked_tag.as_ref().is_none_or(|l| v > l)
    });
    branches.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    tags.sort_by(|a, b| b.0.cmp(&a.0));
    let entry =
        |kind, r: &kernels_types::wire::GitRefInfo| (kind, r.name.clone(), r.target_commit.clone());
    branches
        .into_iter()
        .map(|(_, b)| entry("branch", b))
        .chain(tags.into_iter().map(|(_, t)| entry("tag", t)))
        .collect()
}

/// The newer versions of `kernel` with a build `selection` takes: one refs
/// request, then one `build/` listing per distinct commit of the
/// [`NEWER_LOOKUPS`] newest candidates.
async fn newer_versions(
    client: &HubClient,
    kernel: &LockedKernel,
    options: &DownloadOptions,
    kinds: VersionRefs,
) -> Result<Vec<NewerVersion>, HubError> {
    let refs = client.list_refs(options.repo_type, &kernel.repo_id).await?;
    let mut candidates = newer_refs(&refs, &kernel.commit, kinds);
    candidates.truncate(NEWER_LOOKUPS);
    let commits: BTreeSet<&CommitId> = candidates.iter().map(|(_, _, c)| c).collect();
    let listings = join_all(
        commits
            .iter()
            .map(|c| build_variants(client, options.repo_type, &kernel.repo_id, c)),
    )
    .await;
    let mut by_commit = std::collections::HashMap::new();
    for (commit, listing) in commits.into_iter().zip(listings) {
        by_commit.insert(commit, listing?.into_iter().collect::<BTreeSet<_>>());
    }
    Ok(candidates
        .iter()
        .filter_map(|(kind, name, commit)| {
            let names = by_commit.get(commit)?;
            let choice = options
                .selection
                .select(&kernel.repo_id, commit, names)
                .ok()?;
            (!choice.variants.is_empty()).then(|| NewerVersion {
                kind,
                name: name.clone(),
                commit: commit.clone(),
                variants: choice.variants,
            })
        })
        .collect())
}

/// The variant directories of `kernel` with the listing they come from:
/// listed by the Hub, or, offline, read from the cached snapshot's `build/`
/// (no listing).
async fn available(
    client: &HubClient,
    cache: &HubCache,
    kernel: &LockedKernel,
    options: &DownloadOptions,
) -> Result<(BTreeSet<String>, Option<Vec<TreeEntry>>), DownloadError> {
    if client.is_offline() {
        let dir = cache
            .repo(&kernel.repo_id, options.repo_type)
            .snapshot_dir(kernel.commit.as_str())
            .join("build");
        let names = fs_err::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        return Ok((names, None));
    }
    let entries = client
        .list_tree(
            options.repo_type,
            &kernel.repo_id,
            kernel.commit.as_str(),
            "",
            true,
        )
        .await?;
    Ok((plan::available_variants(&entries), Some(entries)))
}

/// The fit of every variant of `kernel`, chosen ones first.
async fn fits(
    source: FitSource<'_>,
    kernel: &LockedKernel,
    variants: &[VariantVerdict],
    request: FitRequest<'_>,
) -> Vec<VariantFit> {
    let mut order: Vec<(String, bool)> = variants
        .iter()
        .map(|v| (v.name.clone(), v.chosen))
        .collect();
    order.sort_by_key(|(_, chosen)| !chosen);
    let source = FitSource {
        fetch: request.fetch,
        ..source
    };
    kernel_fits(&source, kernel, &order, request.policy).await
}

/// Moves the choice to what `kernels download` takes: the first of
/// `alternatives` (best first) of which no variant is refused (a variant
/// whose metadata was not read counts as fitting, as in the download). The
/// variant it replaces says why.
fn choose_fitting(
    variants: &mut [VariantVerdict],
    fit: &mut [VariantFit],
    alternatives: &[Vec<String>],
) {
    let refused = |name: &String| {
        fit.iter()
            .any(|f| &f.variant == name && f.fits == Some(false))
    };
    let Some(taken) = alternatives
        .iter()
        .find(|alternative| !alternative.iter().any(refused))
    else {
        return;
    };
    let Some(first) = alternatives.first() else {
        return;
    };
    if first == taken {
        return;
    }
    for verdict in variants.iter_mut() {
        if taken.contains(&verdict.name) {
            verdict.chosen = true;
            verdict.reason = None;
        } else if verdict.chosen {
            verdict.chosen = false;
            verdict.reason =
                Some("ranks first, but the target runtime would refuse it (fit below)".to_owned());
        }
    }
    for entry in fit.iter_mut() {
        entry.chosen = taken.contains(&entry.variant);
    }
    fit.sort_by_key(|entry| !entry.chosen);
}

/// Explains the choice for every kernel, in lock order; the kernels are
/// looked at concurrently. `kinds` says which refs name each kernel's
/// versions; with `fit`, each variant's fit is added.
pub async fn explain(
    client: &HubClient,
    cache: &HubCache,
    kernels: &[LockedKernel],
    options: &DownloadOptions,
    kinds: &(dyn Fn(&LockedKernel) -> VersionRefs + Sync),
    fit: Option<FitRequest<'_>>,
) -> Vec<Result<KernelExplanation, (LockedKernel, DownloadError)>> {
    join_all(kernels.iter().map(|kernel| async move {
        let (names, listing) = available(client, cache, kernel, options)
            .await
            .map_err(|err| (kernel.clone(), err))?;
        let variants = match &options.selection {
            VariantSelection::Detected { env, rules } => env.explain(&names, *rules),
            other => {
                let chosen = other
                    .select(&kernel.repo_id, &kernel.commit, &names)
                    .map(|c| c.variants)
                    .unwrap_or_default();
                names
                    .iter()
                    .map(|name| VariantVerdict {
                        name: name.clone(),
                        chosen: chosen.contains(name),
                        rank: chosen.iter().position(|c| c == name),
                        reason: (!chosen.contains(name))
                            .then(|| "not named by --variant".to_owned()),
                    })
                    .collect()
            }
        };
        let (newer, newer_error) =
            if client.is_offline() || matches!(options.selection, VariantSelection::All) {
                (None, None)
            } else {
                match newer_versions(client, kernel, options, kinds(kernel)).await {
                    Ok(newer) => (Some(newer), None),
                    Err(err) => (None, Some(err.to_string())),
                }
            };
        let mut variants = variants;
        let fit = match fit {
            Some(request) => {
                let source = FitSource {
                    client,
                    cache,
                    repo_type: options.repo_type,
                    fetch: false,
                    cache_listing: listing.as_deref(),
                };
                let mut fit = fits(source, kernel, &variants, request).await;
                if let Ok(alternatives) =
                    options
                        .selection
                        .candidates(&kernel.repo_id, &kernel.commit, &names)
                {
                    choose_fitting(&mut variants, &mut fit, &alternatives);
                }
                Some(fit)
            }
            None => None,
        };
        Ok(KernelExplanation {
            repo_id: kernel.repo_id.to_string(),
            commit: kernel.commit.clone(),
            chosen: variants
                .iter()
                .filter(|v| v.chosen)
                .map(|v| v.name.clone())
                .collect(),
            variants,
            newer,
            newer_error,
            fit,
        })
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::wire::GitRefInfo;

    fn r(name: &str, commit: char) -> GitRefInfo {
        GitRefInfo {
            name: name.to_owned(),
            git_ref: format!("refs/x/{name}"),
            target_commit: commit.to_string().repeat(40).parse().unwrap(),
        }
    }

    fn names(refs: &GitRefs, commit: char, kinds: VersionRefs) -> Vec<String> {
        newer_refs(refs, &commit.to_string().repeat(40).parse().unwrap(), kinds)
            .into_iter()
            .map(|(_, name, _)| name)
            .collect()
    }

    #[test]
    fn newer_refs_are_above_the_locked_ones_newest_first() {
        let refs = GitRefs {
            branches: vec![r("main", 'c'), r("v1", 'a'), r("v2", 'b'), r("v10", 'c')],
            tags: vec![
                r("v0.1.0", 'a'),
                r("v0.2.0", 'b'),
                r("v0.3.0rc1", 'c'),
                r("v0.3.0", 'c'),
            ],
            converts: Vec::new(),
            pull_requests: None,
        };
        let any = VersionRefs::Any;
        assert_eq!(names(&refs, 'a', any), ["v10", "v2", "v0.3.0", "v0.2.0"]);
        assert_eq!(names(&refs, 'a', VersionRefs::Branches), ["v10", "v2"]);
        assert_eq!(names(&refs, 'a', VersionRefs::Tags), ["v0.3.0", "v0.2.0"]);
        assert_eq!(names(&refs, 'b', any), ["v10", "v0.3.0"]);
        assert!(names(&refs, 'c', any).is_empty());
        // A commit no ref names: every version is a candidate.
        assert_eq!(
            names(&refs, 'd', any),
            ["v10", "v2", "v1", "v0.3.0", "v0.2.0", "v0.1.0"]
        );
    }
}
