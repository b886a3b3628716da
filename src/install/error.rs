//! The one error type of `install/` ([`DownloadError`]): every module of the
//! engine (plan, fetch, verify, explain) returns it, and imports it from here.

use kernels_cache::CacheError;
use kernels_hub::HubError;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use super::verify::Problem;
use crate::variant::VariantError;

/// Why one kernel could not be downloaded.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DownloadError {
    /// A Hub request failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Hub(#[from] HubError),

    /// Writing or verifying the cache failed (including content mismatches).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cache(#[from] CacheError),

    /// Variant selection failed for this kernel.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Variant(#[from] VariantError),

    /// A tree entry lacks a usable digest.
    #[error("the Hub listing of {repo_id}@{commit} has no valid digest for `{path}`")]
    #[diagnostic(
        code(kernels::download::invalid_listing),
        help("the server's tree listing is malformed; report it to the mirror's operator")
    )]
    InvalidListing {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// Repo path of the entry.
        path: String,
    },

    /// A listing names a path that could leave the snapshot or is otherwise
    /// unusable ([`kernels_types::repo_path`]); refused before any file request.
    #[error(
        "the Hub listing of {repo_id}@{commit} has an unsafe path `{}`: {reason}",
        kernels_types::text::escape(path)
    )]
    #[diagnostic(
        code(kernels::download::unsafe_path),
        help(
            "nothing was downloaded; the server's listing is malformed or hostile, report it to the mirror's operator"
        )
    )]
    UnsafePath {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The refused path, as listed.
        path: String,
        /// What is wrong with it.
        reason: kernels_types::repo_path::RepoPathError,
    },

    /// The locked commit has no build variant at all (no `build/`, or no
    /// variant directory in it): whatever the selection, nothing can be
    /// downloaded, and `kernels lock` warned about it.
    #[error(
        "{repo_id}@{commit} has no build variants: the locked commit has no variant directory under `build/`, so there is nothing to download"
    )]
    #[diagnostic(
        code(kernels::download::no_build_variants),
        help(
            "lock a version of {repo_id} that has builds (`kernels versions {repo_id}` lists them), or remove it with `kernels remove {repo_id}`"
        )
    )]
    NoBuildVariants {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
    },

    /// A variant the lock pins is not in the Hub listing of the locked commit.
    #[error(
        "variant `{variant}` of {repo_id}@{commit} is in kernels.lock but not in the Hub listing of that commit (listed: {})",
        if listed.is_empty() { "none".to_owned() } else { listed.join(", ") }
    )]
    #[diagnostic(
        code(kernels::download::locked_variant_not_listed),
        help(
            "the server's listing is incomplete or the lock does not belong to this repository; check the mirror, or regenerate the lock with `kernels lock`"
        )
    )]
    LockedVariantNotListed {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Variants the listing has.
        listed: Vec<String>,
    },

    /// Files are missing and the cache cannot be written.
    #[error(
        "the cache {} is not writable and {} file(s) are missing from it: {}{}",
        dir.display(), missing.len(),
        missing.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
        if missing.len() > 5 { ", …" } else { "" }
    )]
    #[diagnostic(
        code(kernels::download::read_only),
        help(
            "download into a writable cache first (set KERNELS_CACHE), or make this one writable"
        )
    )]
    ReadOnly {
        /// The cache directory.
        dir: std::path::PathBuf,
        /// `owner/name@commit: path` of each missing file.
        missing: Vec<String>,
    },

    /// Not enough free space for what must be fetched.
    #[error(
        "not enough disk space in {}: {} byte(s) to download, {} byte(s) free",
        dir.display(), needed, available
    )]
    #[diagnostic(
        code(kernels::download::no_space),
        help(
            "free space (`kernels cache prune` removes leftovers and unreferenced blobs) or move the cache (`--cache-dir` or KERNELS_CACHE)"
        )
    )]
    NoSpace {
        /// The cache directory.
        dir: std::path::PathBuf,
        /// Bytes to fetch.
        needed: u64,
        /// Bytes free on its file system.
        available: u64,
    },

    /// A selected variant has no hash in a variant-hash lock.
    #[error("kernels.lock has no hash for variant `{variant}` of {repo_id}@{commit}")]
    #[diagnostic(
        code(kernels::download::variant_not_locked),
        help(
            "run `kernels lock` to refresh the lock, or pick locked variants with `--variant NAME`"
        )
    )]
    VariantNotLocked {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
    },

    /// The Hub listing of a variant does not hash to the lock's value.
    #[error(
        "variant `{variant}` of {repo_id}@{commit}: kernels.lock has {locked}, but the Hub listing hashes to {listed}"
    )]
    #[diagnostic(
        code(kernels::download::listing_mismatch),
        help("the lock does not describe this commit's files; regenerate it with `kernels lock`")
    )]
    ListingMismatch {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Hash in the lock.
        locked: String,
        /// Hash of the listed files.
        listed: String,
    },

    /// After download, the variant's files do not hash to the lock's value.
    #[error(
        "variant `{variant}` of {repo_id}@{commit}: kernels.lock has {locked}, but the downloaded files hash to {actual}"
    )]
    #[diagnostic(
        code(kernels::download::variant_mismatch),
        help("the cache snapshot does not match the lock; run `kernels download` again")
    )]
    VariantMismatch {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Hash in the lock.
        locked: String,
        /// Hash recomputed from the cache.
        actual: String,
    },

    /// Offline mode and the cache does not hold every selected file, verified.
    #[error(
        "{}@{} cannot be used offline (--offline or HF_HUB_OFFLINE):{}",
        repo_id, commit.short(), problems.iter().map(|p| format!("\n  - {}", kernels_types::text::escape(&p.to_string()))).collect::<String>()
    )]
    #[diagnostic(
        code(kernels::download::not_cached),
        help("{}", not_cached_help(problems))
    )]
    NotCached {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// What is missing or wrong, as `kernels verify` reports it.
        problems: Vec<Problem>,
    },

    /// The target runtime would refuse every candidate variant (the
    /// environment's choice) or a `--variant` named one; nothing of the
    /// kernel was downloaded but the metadata.json files that said so.
    #[error("{}", super::fit::unfit_message(repo_id, commit, refused, *named))]
    #[diagnostic(code(kernels::download::unfit), help("{help}"))]
    Unfit {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// Each refused variant with its rules.
        refused: Vec<super::fit::RefusedVariant>,
        /// Whether the variants were named with `--variant`.
        named: bool,
        /// What would fit ([`super::fit::help`]).
        help: String,
    },

    /// A variant's metadata.json cannot be read or is malformed.
    #[error("`{path}` of {repo_id}@{} is invalid: {problem}", commit.short())]
    #[diagnostic(
        code(kernels::download::invalid_metadata),
        help(
            "the kernel's build metadata is malformed, so the runtime cannot load the variant either; report it to the kernel's publisher, or lock another version (`kernels versions {repo_id}`)"
        )
    )]
    InvalidMetadata {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// Repo path, `build/<variant>/metadata.json`.
        path: String,
        /// What is wrong, naming the field.
        problem: kernels_types::metadata::MetadataError,
    },

    /// Files of a variant differ from the `digest` of its metadata.json
    /// ([`super::digest`]); nothing of the variant was linked, and a fetched
    /// file that differs never became a blob.
    #[error(
        "variant `{variant}` of {repo_id}@{} does not match the digest in `build/{variant}/metadata.json`: {}",
        commit.short(), super::digest::describe(problems)
    )]
    #[diagnostic(
        code(kernels::download::digest_mismatch),
        help(
            "the files are not the ones the kernel was built with (changed, added or removed after the build): what the server sent that differs was not placed in the cache (report it to the kernel's publisher or the mirror's operator, or lock another version: `kernels versions {repo_id}`), and an unknown file already in the cached variant directory was added there (remove it)"
        )
    )]
    Digest {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// Every file that differs, sorted by path.
        problems: Vec<kernels_trust::DigestProblem>,
    },

    /// Files in a cached variant directory that the Hub's listing of the
    /// locked commit does not have (a variant whose metadata has no digest:
    /// the listing is what vouches for it).
    #[error(
        "variant `{variant}` of {repo_id}@{} has file(s) in the cache that the Hub's listing of the commit does not have: {}",
        commit.short(), files.join(", ")
    )]
    #[diagnostic(
        code(kernels::download::unlisted_file),
        help(
            "something other than `kernels download` added them to the cached variant directory, and the runtime would load them: remove them (or the whole snapshot directory) and run `kernels download` again"
        )
    )]
    Unlisted {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// The files, repo paths.
        files: Vec<String>,
    },

    /// A variant's Sigstore signature refuses it ([`super::signature`]):
    /// invalid, by a signer the policy does not accept, over metadata whose
    /// digest the files do not match, or missing where signatures are
    /// required. Nothing of the variant was linked.
    #[error(
        "variant `{variant}` of {repo_id}@{} fails its signature check ({outcome}): {reason}",
        commit.short()
    )]
    #[diagnostic(
        code(kernels::download::signature),
        help(
            "the variant is not proven to be the one its publisher built and signed, so it is not accepted (a download links none of its files into the snapshot; a copy already there is not used): report it to the kernel's publisher or the mirror's operator, or lock another version (`kernels versions {repo_id}`); a private signer is accepted once listed under `[tool.kernels.signers]` in pyproject.toml"
        )
    )]
    Signature {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant.
        variant: String,
        /// The reference's outcome name (`SignatureVerificationFailure`, …).
        outcome: &'static str,
        /// What did not verify.
        reason: String,
    },

    /// A bug or runtime failure (a worker task died).
    #[error("internal error: {0}")]
    #[diagnostic(code(kernels::download::internal))]
    Internal(String),
}

/// The help of [`DownloadError::NotCached`]: fetch it online, unless no
/// download can help: then what would fit (no locked variant suits the
/// environment), or that the problems say what to do.
fn not_cached_help(problems: &[Problem]) -> String {
    let fits: Vec<&str> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::NothingFits { help, .. } => Some(help.as_str()),
            _ => None,
        })
        .collect();
    if problems.iter().all(|p| !p.fixed_by_download()) {
        if fits.is_empty() {
            return "downloading does not repair this: do what each problem above says".to_owned();
        }
        return fits.join("\n\n");
    }
    "run `kernels download` without --offline and with HF_HUB_OFFLINE unset to fetch it".to_owned()
}

impl DownloadError {
    /// Whether running `kernels download` online can repair this failure:
    /// false for a kernel none of whose locked variants suits the environment.
    pub fn fixed_by_download(&self) -> bool {
        match self {
            DownloadError::NotCached { problems, .. } => {
                problems.iter().any(Problem::fixed_by_download)
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offline_failure_lists_every_problem() {
        let err = DownloadError::NotCached {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "0123456789abcdef0123456789abcdef01234567".parse().unwrap(),
            problems: vec![
                Problem::MissingVariant {
                    variant: "torch-cuda".into(),
                },
                Problem::MissingVariant {
                    variant: "torch-cpu".into(),
                },
            ],
        };
        assert_eq!(
            err.to_string(),
            "acme/relu@0123456 cannot be used offline (--offline or HF_HUB_OFFLINE):\n  \
             - variant `torch-cuda` is not in the cache\n  \
             - variant `torch-cpu` is not in the cache"
        );
    }

    #[test]
    fn a_read_only_cache_names_five_missing_files_at_most() {
        let err = DownloadError::ReadOnly {
            dir: "/ro".into(),
            missing: (1..=7).map(|i| format!("f{i}")).collect(),
        };
        assert_eq!(
            err.to_string(),
            "the cache /ro is not writable and 7 file(s) are missing from it: f1, f2, f3, f4, f5, …"
        );
    }
}
