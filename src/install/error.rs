//! The errors of `install/`: [`DownloadError`] (why one kernel could not be
//! downloaded), [`Problem`] (one difference between the lock and the cache)
//! and what they carry ([`RefusedVariant`]). Every module of the engine
//! (plan, fetch, verify, explain, the checks) imports them from here; this
//! module imports none of its siblings, so the rules never import back.

use kernels_cache::CacheError;
use kernels_hub::HubError;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

use crate::variant::VariantError;
use kernels_cache::DigestKind;
use kernels_trust::DigestProblem;
use kernels_types::fit::Refusal;
use std::path::PathBuf;

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
            "lock a version of {repo_id} that has builds (`kernels variants {repo_id} --all-versions` lists them), or remove it with `kernels remove {repo_id}`"
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
    #[error("{}", unfit_message(repo_id, commit, refused, *named))]
    #[diagnostic(code(kernels::download::unfit), help("{help}"))]
    Unfit {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// Each refused variant with its rules.
        refused: Vec<RefusedVariant>,
        /// Whether the variants were named with `--variant`.
        named: bool,
        /// What would fit ([`crate::install::fit::help`]).
        help: String,
    },

    /// A variant's metadata.json cannot be read or is malformed.
    #[error("`{path}` of {repo_id}@{} is invalid: {problem}", commit.short())]
    #[diagnostic(
        code(kernels::download::invalid_metadata),
        help(
            "the kernel's build metadata is malformed, so the runtime cannot load the variant either; report it to the kernel's publisher, or lock another version (`kernels variants {repo_id} --all-versions`)"
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
    /// ([`crate::install::digest`]); nothing of the variant was linked, and a fetched
    /// file that differs never became a blob.
    #[error(
        "variant `{variant}` of {repo_id}@{} does not match the digest in `build/{variant}/metadata.json`: {}",
        commit.short(), describe(problems)
    )]
    #[diagnostic(
        code(kernels::download::digest_mismatch),
        help(
            "the files are not the ones the kernel was built with (changed, added or removed after the build): what the server sent that differs was not placed in the cache (report it to the kernel's publisher or the mirror's operator, or lock another version: `kernels variants {repo_id} --all-versions`), and an unknown file already in the cached variant directory was added there (remove it)"
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

    /// A variant's Sigstore signature refuses it ([`crate::install::signature`]):
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
            "the variant is not proven to be the one its publisher built and signed, so it is not accepted (a download links none of its files into the snapshot; a copy already there is not used): report it to the kernel's publisher or the mirror's operator, or lock another version (`kernels variants {repo_id} --all-versions`); a private signer is accepted once listed under `[tool.kernels.signers]` in pyproject.toml"
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

    /// `kernels.lock.provenance` records another signer or other files for
    /// a variant of the same locked commit ([`crate::install::check::provenance`]);
    /// nothing of the kernel was linked.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Provenance(#[from] crate::lock::provenance::ProvenanceError),

    /// A bug or runtime failure (a worker task died).
    #[error("internal error: {0}")]
    #[diagnostic(code(kernels::download::internal))]
    Internal(String),
}

/// One difference between the lock and the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The lock hashes no variant of the commit (it has no `build/`): there
    /// is nothing to download or verify ([`crate::lock::project::NoVariants`]).
    #[error(
        "kernels.lock has no build variant of this commit (it has no variant directory under `build/`), so there is nothing to download or load"
    )]
    NoBuildVariants,

    /// The commit has no `snapshots/<commit>/build/` directory in the cache.
    #[error("the kernel is not in the cache (no directory `{}`)", dir.display())]
    NotCached {
        /// The missing directory.
        dir: PathBuf,
    },

    /// A selected variant is not in the cached snapshot (or has no file in it).
    #[error("variant `{variant}` is not in the cache")]
    MissingVariant {
        /// The variant name.
        variant: String,
    },

    /// No variant the environment accepts is cached (default selection only).
    #[error(
        "no build variant for this environment is in the cache (cached: {}): {reason}",
        if cached.is_empty() { "none".to_owned() } else { crate::variant::capped_list(cached) }
    )]
    NoCachedVariant {
        /// Why the selection failed among the cached variants.
        reason: String,
        /// The variants in the snapshot.
        cached: Vec<String>,
    },

    /// No variant the lock names suits the environment (default selection,
    /// a lock with variant hashes): downloading cannot help.
    #[error("{reason}")]
    NothingFits {
        /// Why no locked variant suits the environment.
        reason: String,
        /// What would fit ([`crate::variant::VariantError::NoCompatible`]).
        help: String,
    },

    /// A snapshot link points at a blob that does not exist.
    #[error(
        "`{path}` links to blob {etag}, which is missing{}",
        if *partial { " (only a partial `.incomplete` download exists)" } else { "" }
    )]
    DanglingLink {
        /// Repo path of the file.
        path: String,
        /// The blob name.
        etag: String,
        /// Whether `blobs/<etag>.incomplete` exists.
        partial: bool,
    },

    /// A snapshot entry is a symlink that does not point into this repo's `blobs/`.
    #[error("`{path}` is a link that does not point into this repo's `blobs/`")]
    ForeignLink {
        /// Repo path of the file.
        path: String,
    },

    /// A snapshot link points at a name in `blobs/` that is not a digest.
    #[error(
        "`{path}` links to `blobs/{etag}`, which is not a blob name (40 or 64 lowercase hex digits)"
    )]
    BadBlobName {
        /// Repo path of the file.
        path: String,
        /// The name the link points at.
        etag: String,
    },

    /// A blob's content does not hash to its name.
    #[error("`{path}`: blob {etag} has {kind} {actual} ({size} bytes), so its content is corrupt")]
    WrongDigest {
        /// Repo path of the file.
        path: String,
        /// The blob name (the expected digest).
        etag: String,
        /// Digest kind implied by the name's length.
        kind: DigestKind,
        /// Digest of the content.
        actual: String,
        /// Size of the content in bytes.
        size: u64,
    },

    /// A blob could not be read.
    #[error("`{path}`: cannot read blob {etag}: {error}")]
    Unreadable {
        /// Repo path of the file.
        path: String,
        /// The blob name.
        etag: String,
        /// The I/O error (names the file).
        error: String,
    },

    /// A variant in the snapshot that the lock does not list: the runtime may load it.
    #[error(
        "variant `{variant}` is in the cached snapshot but not in kernels.lock (the runtime may load it); remove `{}`",
        dir.display()
    )]
    UnlockedVariant {
        /// The variant name.
        variant: String,
        /// Its path in the snapshot.
        dir: PathBuf,
    },

    /// A blob is a symlink leading out of the cache (planted).
    #[error("`{path}`: blob {etag} is a symlink that leads out of the cache; it is not trusted")]
    BlobIsLink {
        /// Repo path of the file.
        path: String,
        /// The blob name.
        etag: String,
    },

    /// A snapshot directory leads out of the cache through a symlink.
    #[error("`{}` leads out of the cache through a symlink; it is not trusted", dir.display())]
    Escapes {
        /// The directory.
        dir: PathBuf,
    },

    /// A selected variant has no hash in a lock that has variant hashes.
    #[error("variant `{variant}` has no hash in kernels.lock")]
    VariantNotLocked {
        /// The variant name.
        variant: String,
    },

    /// The files of a variant in the cache do not hash to the lock's value
    /// (a file is missing, extra or different).
    #[error(
        "variant `{variant}`: kernels.lock has {locked}, but the {files} cached file(s) hash to {actual} (a file is missing, extra or different)"
    )]
    VariantHash {
        /// The variant name.
        variant: String,
        /// Hash in the lock.
        locked: String,
        /// Hash of the cached files.
        actual: String,
        /// Number of cached files hashed.
        files: usize,
    },

    /// A cached variant the target runtime loads would refuse it at load
    /// ([`crate::install::fit`]; the environment's choice among the cached variants,
    /// or a `--variant` named one).
    #[error(
        "variant `{variant}` is cached, but the target runtime would refuse to load it: {}",
        reasons.join("; ")
    )]
    Refused {
        /// The variant name.
        variant: String,
        /// `<rule>: <reason>` per rule it breaks (`archs: CUDA capability 9.0 …`).
        reasons: Vec<String>,
    },

    /// A file of a cached variant differs from the `digest` of the variant's
    /// metadata.json ([`crate::install::digest`]): not named there, missing, or changed.
    #[error(
        "variant `{variant}` does not match the digest in `build/{variant}/metadata.json`: {problem}"
    )]
    Digest {
        /// The variant name.
        variant: String,
        /// The file and what is wrong with it.
        problem: kernels_trust::DigestProblem,
    },

    /// A variant of a kernel the lock pins no hash for (a `KernelLocks`
    /// lock) with nothing else vouching for its files: no `digest` in its
    /// metadata.json and no entry in `kernels.lock.provenance`
    /// ([`crate::install::vouch`]). A directory planted in the cache looks like this.
    #[error(
        "variant `{variant}` has nothing that vouches for its files ({}): kernels.lock pins no hash for it, `build/{variant}/metadata.json` has no digest, and kernels.lock.provenance has no entry for it; remove the directory and run `kernels download` online, which fetches the variant from the Hub's listing if the locked commit has it and records its hash",
        files.join(", ")
    )]
    Unvouched {
        /// The variant name.
        variant: String,
        /// Its files, repo paths.
        files: Vec<String>,
    },

    /// A variant's files hash to another value than the one
    /// `kernels.lock.provenance` recorded when it was downloaded.
    #[error(
        "variant `{variant}`: kernels.lock.provenance pins its files to {pinned}, but the {} cached file(s) hash to {actual} ({}): a file is missing, extra or different",
        files.len(), files.join(", ")
    )]
    PinMismatch {
        /// The variant name.
        variant: String,
        /// The recorded hash.
        pinned: String,
        /// The hash of the cached files.
        actual: String,
        /// The cached files, repo paths.
        files: Vec<String>,
    },

    /// A cached variant's metadata.json cannot be read or is malformed.
    #[error("{message}")]
    InvalidMetadata {
        /// The variant name.
        variant: String,
        /// The error, naming the file and the field.
        message: String,
    },
}

impl Problem {
    /// Whether fetching again can fix it (everything except a lock without a
    /// hash for the variant, which needs `kernels lock`).
    pub fn fixed_by_download(&self) -> bool {
        !matches!(
            self,
            Problem::VariantNotLocked { .. }
                | Problem::NoBuildVariants
                | Problem::NothingFits { .. }
                | Problem::UnlockedVariant { .. }
                | Problem::Escapes { .. }
                | Problem::Refused { .. }
                | Problem::InvalidMetadata { .. }
                | Problem::Digest { .. }
                | Problem::Unvouched { .. }
                | Problem::PinMismatch { .. }
        )
    }

    /// The repo path of the one file the problem is about, if it is one.
    pub(crate) fn file(&self) -> Option<&str> {
        match self {
            Problem::DanglingLink { path, .. }
            | Problem::ForeignLink { path }
            | Problem::BadBlobName { path, .. }
            | Problem::WrongDigest { path, .. }
            | Problem::Unreadable { path, .. }
            | Problem::BlobIsLink { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// A variant the target runtime would refuse to load, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedVariant {
    /// The variant directory name.
    pub variant: String,
    /// Every rule it breaks (never empty).
    pub refusals: Vec<Refusal>,
}

/// The message of [`DownloadError::Unfit`]: the kernel, then one line per
/// refused variant and rule, `  - <variant>: <rule>: <reason>`.
pub fn unfit_message(
    repo_id: &RepoId,
    commit: &CommitId,
    refused: &[RefusedVariant],
    named: bool,
) -> String {
    let head = if named {
        format!(
            "the target runtime would refuse to load the requested variant of {repo_id}@{}",
            commit.short()
        )
    } else {
        format!(
            "the target runtime would refuse to load every build variant of {repo_id}@{} for this environment; nothing was downloaded",
            commit.short()
        )
    };
    let mut out = head;
    for variant in refused {
        for refusal in &variant.refusals {
            out.push_str(&format!(
                "\n  - {}: {}: {refusal}",
                variant.variant,
                refusal.rule()
            ));
        }
    }
    out
}

/// `File hash mismatch for _ops.py: …; Unknown file: planted.py`: the
/// problems of one variant on one line.
pub fn describe(problems: &[DigestProblem]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("; ")
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
