//! The variants of locked kernels that the cache holds, verified offline
//! (`kernels verify --signatures`, `kernels audit`): each directory
//! `snapshots/<commit>/build/<variant>/` of the kernel's cache folder.

use std::collections::BTreeSet;
use std::path::PathBuf;

use kernels_cache::RepoCache;
use kernels_trust::{Outcome, TrustRoot, verify_variant};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use super::Verdict;
use crate::lock::trust_settings::TrustSettings;

/// One cached variant and its verdict.
#[derive(Debug, Clone)]
pub struct VariantCheck {
    /// The variant's directory name under `build/`.
    pub variant: String,
    /// The variant directory in the cache.
    pub dir: PathBuf,
    /// What `verify_variant` found.
    pub outcome: Outcome,
    /// What the trust settings make of it.
    pub verdict: Verdict,
}

/// The names of the variant directories under `snapshots/<commit>/build/`
/// of `repo`, sorted; empty when the commit is not cached.
pub fn cached_variants(repo: &RepoCache, commit: &CommitId) -> BTreeSet<String> {
    let build = repo.snapshot_dir(commit.as_str()).join("build");
    let Ok(entries) = fs_err::read_dir(&build) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect()
}

/// Verifies the cached variants `variants` of `repo_id` at `commit` with the
/// policy `settings` gives the repository and `root`.
pub fn check_variants(
    repo: &RepoCache,
    repo_id: &RepoId,
    commit: &CommitId,
    variants: &[String],
    settings: &TrustSettings,
    root: &TrustRoot,
) -> Vec<VariantCheck> {
    let policy = settings.policy_for(repo_id);
    let build = repo.snapshot_dir(commit.as_str()).join("build");
    variants
        .iter()
        .map(|variant| {
            let dir = build.join(variant);
            let outcome = verify_variant(&dir, root, &policy);
            let verdict = Verdict::of(&outcome, settings.require_signed);
            VariantCheck {
                variant: variant.clone(),
                dir,
                outcome,
                verdict,
            }
        })
        .collect()
}
