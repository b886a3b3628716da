//! `kernels check --static`: every compiled-file check of
//! [`crate::install::check::abi`] run on the variants already in the cache,
//! without importing anything (no Python, no torch, no GPU): any build stage
//! can run it for the image it ships on.

use kernels_cache::HubCache;
use kernels_types::CommitId;
use kernels_types::fit::Refusal;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::abi::ImageTarget;
use crate::install::check::abi::{check_files, variant_files};
use crate::lock::format::LockedKernel;
use crate::variant::VariantWarning;

/// The verdict on one cached variant of a locked kernel.
#[derive(Debug, Clone)]
pub struct StaticVariant {
    /// The variant directory name.
    pub variant: String,
    /// Files in its directory.
    pub files: usize,
    /// Why an image could not load one of its files (rule `abi`).
    pub refusals: Vec<Refusal>,
    /// Claimed ABIs its files do not keep to.
    pub warnings: Vec<VariantWarning>,
}

/// The verdicts on one locked kernel: each variant of its cached snapshot,
/// or none when the snapshot is not in the cache.
#[derive(Debug, Clone)]
pub struct StaticKernel {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Each variant directory of the cached snapshot, by name; empty when
    /// nothing of the kernel is cached.
    pub variants: Vec<StaticVariant>,
}

impl StaticKernel {
    /// Whether any variant is refused.
    pub fn refused(&self) -> bool {
        self.variants.iter().any(|v| !v.refusals.is_empty())
    }
}

/// Checks the compiled files of every variant directory cached for each of
/// `kernels` (folders of `repo_type` in `cache`) against `images`, reading
/// the files only; no request, no interpreter.
pub fn check_cached(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    images: &[ImageTarget],
) -> Vec<StaticKernel> {
    kernels
        .iter()
        .map(|kernel| {
            let snapshot = cache
                .repo(&kernel.repo_id, repo_type)
                .snapshot_dir(kernel.commit.as_str());
            let mut names: Vec<String> = fs_err::read_dir(snapshot.join("build"))
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .filter(|e| e.path().is_dir())
                        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            let variants = names
                .into_iter()
                .map(|variant| {
                    let files = variant_files(&snapshot, &variant);
                    let found = check_files(&kernel.repo_id, &kernel.commit, &files, images);
                    StaticVariant {
                        files: files.len(),
                        refusals: found.refused.into_values().flatten().collect(),
                        warnings: found.warnings,
                        variant,
                    }
                })
                .collect();
            StaticKernel {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                variants,
            }
        })
        .collect()
}
