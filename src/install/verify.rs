//! Checking locked kernels in the hub cache without any request.
//!
//! [`verify_kernels`] looks only at the cache: for each locked kernel it picks
//! the selected variants among the directories of `snapshots/<commit>/build/`,
//! takes every snapshot link under them (the files the reference's
//! `validate_kernel` looks at), re-hashes each linked blob against the digest
//! its name states (git blob sha1 for 40-hex names, sha256 for 64-hex names,
//! blobs hashed in parallel with rayon) and, for locks that carry variant
//! hashes, recomputes each variant's `git_lfs_concat` hash and compares it with
//! the lock. A variant whose cached metadata.json has a `digest` is compared
//! with it file by file ([`super::digest`]). Every difference becomes a
//! [`Problem`]; nothing stops at the first.
//!
//! `kernels verify` prints the result; `kernels download --offline` (or with
//! `HF_HUB_OFFLINE`) uses the same check instead of downloading.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::plan;
use super::receipts::{self, Trust};
use crate::lock::format::LockedKernel;
use crate::variant::{VariantSelection, VariantWarning};
use kernels_cache::{DigestKind, FileStamp, HubCache, RepoCache};
use kernels_types::CommitId;
use kernels_types::Digest;
use kernels_types::file_set;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

pub use super::error::Problem;

/// One file found in the cached snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedFile {
    /// Repo path, `build/<variant>/…`.
    pub path: String,
    /// The digest of the blob it links to (the blob's name).
    pub digest: Digest,
    /// Size of the blob in bytes (0 when the blob is missing).
    pub size: u64,
    /// For a regular file in the snapshot (a copy instead of a link): the
    /// other digest kind of its content, since a copy does not say whether it
    /// was an LFS file (sha256) or a git file (git blob sha1).
    pub copy_alt: Option<Digest>,
}

/// The verification result of one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelVerification {
    /// Hub repository.
    pub repo_id: RepoId,
    /// Locked commit.
    pub commit: CommitId,
    /// Selected variants found in the cache, with their linked files sorted by
    /// path (for variant-hash locks, the file set the lock hashed).
    pub variants: BTreeMap<String, Vec<CachedFile>>,
    /// Every difference found; empty when the kernel is complete and verified.
    pub problems: Vec<Problem>,
    /// What choosing among the cached variants warned about.
    pub warnings: Vec<VariantWarning>,
    /// Files that are copies (regular files) instead of links, verified by content.
    pub copies: Vec<String>,
    /// The fit of the chosen variants by their cached metadata.json (empty
    /// when fit was not checked).
    pub fit: super::fit::KernelFit,
}

impl KernelVerification {
    /// `owner/name@abcdef1`.
    pub fn label(&self) -> String {
        plan::label(&self.repo_id, &self.commit)
    }

    /// Whether no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Number of files in the selected variants.
    pub fn file_count(&self) -> usize {
        self.variants.values().map(Vec::len).sum()
    }

    /// Total size of those files in bytes.
    pub fn total_bytes(&self) -> u64 {
        kernels_types::size::total(self.variants.values().flatten().map(|f| f.size))
    }
}

/// A blob to hash: its path and expected name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BlobKey {
    path: PathBuf,
    digest: Digest,
}

/// Outcome of hashing one blob: `Ok((digest, size))` or the I/O error text.
type HashOutcome = Result<(Digest, u64), String>;

/// First pass over one kernel: the snapshot links of the selected variants.
struct Listing {
    repo: RepoCache,
    variants: BTreeMap<String, Vec<CachedFile>>,
    problems: Vec<Problem>,
    warnings: Vec<VariantWarning>,
    /// Snapshot paths of copies, with their content already hashed.
    copies: Vec<(String, PathBuf)>,
    /// The fit of the chosen variants.
    fit: super::fit::KernelFit,
    /// The variant the runtime loads among those chosen (the first).
    loaded: Option<String>,
    /// Per linked file (repo path): the stamp of its blob, taken before any
    /// hashing (for receipts, module `receipts`).
    stamps: HashMap<String, FileStamp>,
}

/// Verifies every kernel of `kernels` in `cache` (see the module docs), in
/// input order. Makes no network request; reads every selected blob once.
pub fn verify_kernels(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
) -> Vec<KernelVerification> {
    verify_kernels_fit(cache, repo_type, kernels, selection, None)
}

/// [`verify_kernels`], and with `policy` the fit of the chosen variants
/// re-checked from their cached metadata.json ([`super::fit`]): for the
/// environment's choice, the variant the runtime loads (the best cached);
/// for `--variant`, every named one. A variant it refuses is a
/// [`Problem::Refused`]; with `--all-variants` refusals are only recorded in
/// [`KernelVerification::fit`].
pub fn verify_kernels_fit(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
    policy: Option<&crate::variant::FitPolicy>,
) -> Vec<KernelVerification> {
    let checks = verify_with(cache, repo_type, kernels, selection, policy, false);
    checks.into_iter().map(|(check, _)| check).collect()
}

/// [`verify_kernels`] for the warm path of `download`: a linked file whose
/// blob's stamp is the one its variant's receipt records is not hashed
/// again, and a variant every file of which its receipt covers is not
/// re-checked against its metadata digest (module `receipts`). With each
/// check, what the receipts trusted and the receipts a passing check records.
/// `kernels verify` never comes here: it always re-hashes.
pub(crate) fn verify_kernels_trusting(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
) -> Vec<(KernelVerification, Trust)> {
    verify_with(cache, repo_type, kernels, selection, None, true)
}

/// The check behind [`verify_kernels_fit`] and [`verify_kernels_trusting`]
/// (`trusting` the stored receipts or not).
fn verify_with(
    cache: &HubCache,
    repo_type: RepoType,
    kernels: &[LockedKernel],
    selection: &VariantSelection,
    policy: Option<&crate::variant::FitPolicy>,
    trusting: bool,
) -> Vec<(KernelVerification, Trust)> {
    let listings: Vec<(Listing, Trust)> = kernels
        .iter()
        .map(|kernel| {
            let mut listing =
                list_snapshot(cache.repo(&kernel.repo_id, repo_type), kernel, selection);
            if let Some(policy) = policy {
                check_fit(&mut listing, kernel, selection, policy);
            }
            let trust = if trusting {
                receipts::trust(&listing.repo, kernel, &listing.variants, &listing.stamps)
            } else {
                Trust::default()
            };
            (listing, trust)
        })
        .collect();

    let blobs: BTreeSet<(PathBuf, Digest)> = listings
        .iter()
        .flat_map(|(listing, trust)| {
            listing
                .variants
                .values()
                .flatten()
                .filter(|f| f.copy_alt.is_none() && !trust.files.contains(&f.path))
                .map(|file| {
                    (
                        listing.repo.blob_path(&file.digest.to_string()),
                        file.digest,
                    )
                })
        })
        .collect();
    if trusting {
        let trusted: usize = listings.iter().map(|(_, t)| t.files.len()).sum();
        tracing::debug!(
            "checking {} kernel(s) in the cache: hashing {} blob(s), trusting {trusted} file(s) by their receipt",
            kernels.len(),
            blobs.len()
        );
    } else {
        tracing::debug!(
            "verifying {} kernel(s) in the cache: hashing {} blob(s)",
            kernels.len(),
            blobs.len()
        );
    }
    let hashed = hash_largest_first(blobs);

    kernels
        .iter()
        .zip(listings)
        .map(|(kernel, (listing, trust))| {
            let check = finish_kernel(kernel, listing, &hashed, &trust.variants);
            (check, trust)
        })
        .collect()
}

/// Hashes every blob on all the pool's threads, the largest first: each
/// thread takes the next blob of the list as it finishes one, so a large
/// blob never starts last while the other threads sit idle (one blob is one
/// sequential SHA-256, the longest of them bounds the wall time).
fn hash_largest_first(blobs: BTreeSet<(PathBuf, Digest)>) -> HashMap<BlobKey, HashOutcome> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut sized: Vec<(u64, PathBuf, Digest)> = blobs
        .into_par_iter()
        .map(|(path, digest)| (fs_err::metadata(&path).map_or(0, |m| m.len()), path, digest))
        .collect();
    sized.sort_by_key(|s| std::cmp::Reverse(s.0));
    let next = AtomicUsize::new(0);
    let hashed = std::sync::Mutex::new(HashMap::with_capacity(sized.len()));
    let hash_next = || {
        while let Some((_, path, digest)) = sized.get(next.fetch_add(1, Ordering::Relaxed)) {
            let outcome =
                kernels_cache::hash_file(path, digest.kind()).map_err(|err| err.to_string());
            let key = BlobKey {
                path: path.clone(),
                digest: *digest,
            };
            hashed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, outcome);
        }
    };
    let workers = rayon::current_num_threads().min(sized.len());
    rayon::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|_| hash_next());
        }
    });
    hashed.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Re-checks the fit of the variants `listing` chose (see
/// [`verify_kernels_fit`]) from their cached metadata.json.
fn check_fit(
    listing: &mut Listing,
    kernel: &LockedKernel,
    selection: &VariantSelection,
    policy: &crate::variant::FitPolicy,
) {
    use super::fit::{self, Lookup, Mode};
    let mode = Mode::of(selection);
    let subject = fit::Subject {
        repo_id: &kernel.repo_id,
        commit: &kernel.commit,
        runtime: policy.runtime,
    };
    let mut fit = fit::KernelFit::new(policy);
    // The environment's choice loads the best cached variant, the first
    // one `choose_cached` gave.
    let checked: Vec<String> = match mode {
        Mode::FirstFitting => listing.loaded.iter().cloned().collect(),
        Mode::AllMustFit | Mode::Report => listing.variants.keys().cloned().collect(),
    };
    for variant in checked {
        let metadata = match fit::cached_lookup(&listing.repo, subject, &variant) {
            Ok(Lookup::Metadata(metadata)) => Some(*metadata),
            Ok(Lookup::NoMetadata | Lookup::Unknown | Lookup::Refused(_)) => None,
            Err(err) => {
                listing.problems.push(Problem::InvalidMetadata {
                    variant: variant.clone(),
                    message: err.to_string(),
                });
                continue;
            }
        };
        fit.record(policy, &variant, metadata.as_ref());
        check_abi(listing, kernel, &variant, policy, mode);
    }
    if mode != Mode::Report {
        for refused in fit.refused.drain(..) {
            listing.problems.push(refused_problem(refused));
        }
    }
    listing.fit = fit;
}

/// [`super::check::Check::Abi`] on the linked files of one cached variant,
/// when `policy` declares images: a refused file is a
/// [`Problem::Refused`] (but with `--all-variants`, which only reports), a
/// claimed ABI not kept a warning.
fn check_abi(
    listing: &mut Listing,
    kernel: &LockedKernel,
    variant: &str,
    policy: &crate::variant::FitPolicy,
    mode: super::fit::Mode,
) {
    if policy.images.is_empty() {
        return;
    }
    let commit = kernel.commit.as_str();
    let files: Vec<(String, PathBuf)> = listing
        .variants
        .get(variant)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let on_disk = listing.repo.snapshot_path(commit, &f.path).ok()?;
            Some((f.path.clone(), on_disk))
        })
        .collect();
    let found =
        super::check::abi::check_files(&kernel.repo_id, &kernel.commit, &files, &policy.images);
    listing.warnings.extend(found.warnings);
    if mode == super::fit::Mode::Report {
        return;
    }
    for (variant, refusals) in found.refused {
        listing
            .problems
            .push(refused_problem(super::fit::RefusedVariant {
                variant,
                refusals,
            }));
    }
}

/// The variant directories under a cached `build/` directory; `None` when it
/// cannot be read.
fn cached_variants(build: &Path) -> Option<BTreeSet<String>> {
    let entries = fs_err::read_dir(build).ok()?;
    // The shared rule of what a variant is (directories, files named `torch…`).
    Some(
        entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_str()?.to_owned();
                let is_file = !e.file_type().is_ok_and(|t| t.is_dir());
                file_set::variant_of(&format!("build/{name}"), is_file).map(str::to_owned)
            })
            .collect(),
    )
}

/// The shared [`VariantSelection::select`] among the `cached` variants, with
/// its warnings and missing names noted in `listing`; `None` (the problem
/// noted) when nothing can be chosen. `All` over a lock with variant hashes
/// means the variants the lock names.
fn choose_cached(
    listing: &mut Listing,
    kernel: &LockedKernel,
    selection: &VariantSelection,
    cached: &BTreeSet<String>,
    build: &Path,
) -> Option<Vec<String>> {
    // A lock with variant hashes names every variant of the commit.
    let locked_names = match (selection, &kernel.variants) {
        (VariantSelection::All, Some(hashes)) if !hashes.is_empty() => {
            let mut names: Vec<String> = hashes.keys().cloned().collect();
            names.sort();
            Some(VariantSelection::Named(names))
        }
        _ => None,
    };
    let selection = locked_names.as_ref().unwrap_or(selection);
    if *selection == VariantSelection::All && cached.is_empty() {
        listing.problems.push(Problem::NotCached {
            dir: build.to_owned(),
        });
        return None;
    }
    listing.warnings = selection.warnings(&kernel.repo_id, &kernel.commit, cached);
    // The environment's choice is made among the cached variants only.
    match selection.select(&kernel.repo_id, &kernel.commit, cached) {
        Ok(choice) => {
            for variant in missing_named(kernel, &choice) {
                listing.problems.push(Problem::MissingVariant { variant });
            }
            Some(choice.variants)
        }
        Err(err) => {
            listing
                .problems
                .push(nothing_fits(kernel, selection).unwrap_or_else(|| {
                    Problem::NoCachedVariant {
                        reason: err.to_string(),
                        cached: cached.iter().cloned().collect(),
                    }
                }));
            None
        }
    }
}

/// [`Problem::NothingFits`] when the lock lists the kernel's variants and
/// `selection` finds none among them that suits the environment, so that no
/// download can place one; `None` when one would fit or the lock lists none.
fn nothing_fits(kernel: &LockedKernel, selection: &VariantSelection) -> Option<Problem> {
    let locked: BTreeSet<String> = kernel.variants.as_ref()?.keys().cloned().collect();
    if locked.is_empty() {
        return None;
    }
    let err = selection
        .select(&kernel.repo_id, &kernel.commit, &locked)
        .err()?;
    let help = miette::Diagnostic::help(&err)
        .map(|h| h.to_string())
        .unwrap_or_default();
    Some(Problem::NothingFits {
        reason: err.to_string(),
        help,
    })
}

/// The named variants of `choice` that are missing from the cache and count
/// as missing: as online (`VariantSelection::choose`), each kernel takes the
/// named variants it has, so a name is missing only when the kernel has it
/// (the lock's variant hashes list it) or when the kernel has none of the
/// names cached or locked (then every name is).
fn missing_named(kernel: &LockedKernel, choice: &crate::variant::Choice) -> Vec<String> {
    let hashes = kernel.variants.as_ref().filter(|h| !h.is_empty());
    let has = |name: &String| hashes.is_some_and(|h| h.contains_key(name));
    let any = !choice.variants.is_empty() || choice.missing.iter().any(has);
    let missing = choice.missing.iter();
    missing.filter(|n| !any || has(n)).cloned().collect()
}

/// Lists the snapshot links of the selected variants, noting missing variants,
/// foreign links and dangling links (which are left out of `variants`' hashing
/// but kept in the listing so the variant hash shows the gap).
fn list_snapshot(repo: RepoCache, kernel: &LockedKernel, selection: &VariantSelection) -> Listing {
    let mut listing = Listing {
        repo,
        variants: BTreeMap::new(),
        problems: Vec::new(),
        warnings: Vec::new(),
        copies: Vec::new(),
        fit: super::fit::KernelFit::default(),
        loaded: None,
        stamps: HashMap::new(),
    };
    if kernel.variants.as_ref().is_some_and(|v| v.is_empty()) {
        listing.problems.push(Problem::NoBuildVariants);
        return listing;
    }
    // A kernel none of whose locked variants suits the environment needs
    // another version, whatever the cache holds: `kernels download` would
    // fail on it too.
    if let Some(problem) = nothing_fits(kernel, selection) {
        listing.problems.push(problem);
        return listing;
    }
    let Ok(build) = listing.repo.snapshot_path(kernel.commit.as_str(), "build") else {
        listing.problems.push(Problem::NotCached {
            dir: listing.repo.snapshot_dir(kernel.commit.as_str()),
        });
        return listing;
    };
    if build.exists() && !listing.repo.resolves_inside(&build) {
        listing.problems.push(Problem::Escapes { dir: build });
        return listing;
    }
    let Some(cached) = cached_variants(&build) else {
        listing.problems.push(Problem::NotCached { dir: build });
        return listing;
    };
    // With variant hashes, a cached variant the lock does not list is an
    // error: the runtime may pick exactly that directory.
    if let Some(hashes) = kernel.variants.as_ref().filter(|h| !h.is_empty()) {
        for name in cached.iter().filter(|n| !hashes.contains_key(*n)) {
            listing.problems.push(Problem::UnlockedVariant {
                variant: name.clone(),
                dir: build.join(name),
            });
        }
    }
    let Some(chosen) = choose_cached(&mut listing, kernel, selection, &cached, &build) else {
        return listing;
    };
    listing.loaded = chosen.first().cloned();

    for variant in chosen {
        let root = build.join(&variant);
        if !listing.repo.resolves_inside(&root) {
            listing.problems.push(Problem::Escapes { dir: root });
            continue;
        }
        let files = listing.list_variant(kernel, &build, &variant, &root);
        let has_problem_here = listing.problems.iter().any(|p| match p {
            Problem::DanglingLink { path, .. } | Problem::ForeignLink { path } => {
                path.starts_with(&format!("build/{variant}/"))
            }
            _ => false,
        });
        if files.is_empty() && !has_problem_here {
            listing.problems.push(Problem::MissingVariant { variant });
        } else {
            listing.variants.insert(variant, files);
        }
    }
    listing
}

impl Listing {
    /// The files of one variant directory `root` (under `build`), in name
    /// order, noting what is wrong with the others.
    fn list_variant(
        &mut self,
        kernel: &LockedKernel,
        build: &Path,
        variant: &str,
        root: &Path,
    ) -> Vec<CachedFile> {
        let mut files = Vec::new();
        for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
            match entry {
                Ok(entry) => files.extend(self.list_entry(kernel, build, &entry)),
                Err(err) => self.problems.push(Problem::Unreadable {
                    path: format!("build/{variant}"),
                    etag: String::new(),
                    error: err.to_string(),
                }),
            }
        }
        files
    }

    /// One entry of a variant directory: a snapshot link to a blob, or a
    /// verified copy; anything else is skipped or noted as a problem.
    fn list_entry(
        &mut self,
        kernel: &LockedKernel,
        build: &Path,
        entry: &walkdir::DirEntry,
    ) -> Option<CachedFile> {
        let is_copy = entry.file_type().is_file() && !entry.path_is_symlink();
        if !entry.path_is_symlink() && !is_copy {
            return None;
        }
        let rel = entry.path().strip_prefix(build).ok()?;
        let rel: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let path = format!("build/{}", rel.join("/"));
        if is_copy {
            return match hash_copy(&self.repo, entry.path()) {
                Ok(file) => {
                    self.copies.push((path.clone(), entry.path().to_owned()));
                    Some(CachedFile { path, ..file })
                }
                Err(err) => {
                    self.problems.push(Problem::Unreadable {
                        path,
                        etag: String::new(),
                        error: err.to_string(),
                    });
                    None
                }
            };
        }
        self.linked_file(kernel, path)
    }

    /// The blob a snapshot link at `path` points at, if it is one of ours,
    /// named by a digest, and present.
    fn linked_file(&mut self, kernel: &LockedKernel, path: String) -> Option<CachedFile> {
        let Some(etag) = self.repo.linked_etag(kernel.commit.as_str(), &path) else {
            self.problems.push(Problem::ForeignLink { path });
            return None;
        };
        let Ok(digest) = Digest::from_etag(&etag) else {
            self.problems.push(Problem::BadBlobName { path, etag });
            return None;
        };
        let blob = self.repo.blob_path(&etag);
        if self.repo.blob_escapes(&etag) {
            self.problems.push(Problem::BlobIsLink { path, etag });
            return None;
        }
        match fs_err::metadata(&blob) {
            Ok(meta) if meta.is_file() => {
                let stamp = FileStamp::from_metadata(&meta);
                self.stamps.insert(path.clone(), stamp);
                Some(CachedFile {
                    path,
                    digest,
                    size: meta.len(),
                    copy_alt: None,
                })
            }
            _ => {
                let partial = self.repo.incomplete_path(&etag).exists();
                self.problems.push(Problem::DanglingLink {
                    path,
                    etag,
                    partial,
                });
                None
            }
        }
    }
}

/// One problem per cached blob of `variants` whose content does not hash to
/// its name or cannot be read, naming the first path that links to it.
fn blob_problems(
    repo: &RepoCache,
    variants: &BTreeMap<String, Vec<CachedFile>>,
    hashed: &HashMap<BlobKey, HashOutcome>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut reported = BTreeSet::new();
    for file in variants.values().flatten() {
        let key = BlobKey {
            path: repo.blob_path(&file.digest.to_string()),
            digest: file.digest,
        };
        let problem = match hashed.get(&key) {
            Some(Ok((actual, _))) if *actual == file.digest => None,
            Some(Ok((actual, size))) => Some(Problem::WrongDigest {
                path: file.path.clone(),
                etag: file.digest.to_string(),
                kind: file.digest.kind(),
                actual: actual.to_string(),
                size: *size,
            }),
            Some(Err(error)) => Some(Problem::Unreadable {
                path: file.path.clone(),
                etag: file.digest.to_string(),
                error: error.clone(),
            }),
            None => None,
        };
        // One report per blob, naming the first path that links to it.
        if let Some(problem) = problem
            && reported.insert(file.digest)
        {
            problems.push(problem);
        }
    }
    problems
}

/// Applies the blob hashes, the metadata digests (of the variants not in
/// `trusted`, whose receipt covers every file) and the lock's variant hashes.
fn finish_kernel(
    kernel: &LockedKernel,
    listing: Listing,
    hashed: &HashMap<BlobKey, HashOutcome>,
    trusted: &BTreeSet<String>,
) -> KernelVerification {
    let Listing {
        repo,
        mut variants,
        mut problems,
        warnings,
        copies,
        fit,
        ..
    } = listing;
    problems.extend(blob_problems(&repo, &variants, hashed));
    let found = digest_problems(&repo, kernel, &variants, &copies, &problems, trusted);
    problems.extend(found);
    if let Some(hashes) = &kernel.variants {
        for (variant, files) in variants.iter_mut() {
            let Some(locked) = hashes.get(variant) else {
                problems.push(Problem::VariantNotLocked {
                    variant: variant.clone(),
                });
                continue;
            };
            let hashed: Vec<(&str, Digest)> =
                files.iter().map(|f| (f.path.as_str(), f.digest)).collect();
            let matched = file_set::matching_file_set(variant, &hashed, locked)
                .or_else(|all| match_copies(variant, files, locked).ok_or(all));
            match matched {
                Ok(set) => {
                    files.retain(|f| set.includes(&f.path));
                    continue;
                }
                Err(all) => problems.push(Problem::VariantHash {
                    variant: variant.clone(),
                    locked: locked.clone(),
                    actual: all,
                    files: files.len(),
                }),
            }
        }
    }

    KernelVerification {
        repo_id: kernel.repo_id.clone(),
        commit: kernel.commit.clone(),
        variants,
        problems,
        warnings,
        copies: copies.into_iter().map(|(path, _)| path).collect(),
        fit,
    }
}

/// The [`Problem::Digest`]s of the listed variants whose cached
/// metadata.json has a `digest` ([`super::digest::check`]): every file found
/// under the variant (bytecode and metadata.json are left out by the rule).
/// Blobs named by their sha256 and copies are not read again; git blobs are
/// hashed. A missing file that an earlier problem names already (a dangling
/// link) is not reported twice. Variants in `trusted` are skipped: their
/// receipt was recorded after this check passed and no file changed since.
fn digest_problems(
    repo: &RepoCache,
    kernel: &LockedKernel,
    variants: &BTreeMap<String, Vec<CachedFile>>,
    copies: &[(String, PathBuf)],
    earlier: &[Problem],
    trusted: &BTreeSet<String>,
) -> Vec<Problem> {
    use super::digest::{Content, VariantFile};
    let subject = super::fit::Subject {
        repo_id: &kernel.repo_id,
        commit: &kernel.commit,
        runtime: super::fit::DIGEST_ONLY,
    };
    let mut problems = Vec::new();
    for (variant, files) in variants.iter().filter(|(v, _)| !trusted.contains(*v)) {
        let Ok(super::fit::Lookup::Metadata(metadata)) =
            super::fit::cached_lookup(repo, subject, variant)
        else {
            continue;
        };
        let Some(expected) = &metadata.digest else {
            continue;
        };
        let listed = files.iter().filter_map(|file| {
            let copy = copies.iter().find(|(p, _)| *p == file.path).map(|(_, c)| c);
            let on_disk = copy
                .cloned()
                .unwrap_or_else(|| repo.blob_path(&file.digest.to_string()));
            let sha256 = [Some(file.digest), file.copy_alt]
                .into_iter()
                .flatten()
                .find_map(|d| match d {
                    Digest::Sha256(bytes) => Some(bytes),
                    Digest::GitSha1(_) => None,
                });
            let content = match sha256 {
                Some(sha256) => Content::Sha256 {
                    sha256,
                    file: Some(on_disk),
                },
                None => Content::File(on_disk),
            };
            VariantFile::at(variant, &file.path, content)
        });
        let named = |relative: &str| {
            let path = format!("build/{variant}/{relative}");
            earlier.iter().any(|p| p.file() == Some(path.as_str()))
        };
        for problem in super::digest::check(expected, listed) {
            if let kernels_trust::DigestProblem::Missing(relative) = &problem
                && named(relative)
            {
                continue;
            }
            problems.push(Problem::Digest {
                variant: variant.clone(),
                problem,
            });
        }
    }
    problems
}

/// Hashes a snapshot file that is a copy with both digest kinds. The one that
/// names a blob in `blobs/` wins (a `cp -rL` copy keeps them), else sha256 for
/// binary content (LFS files are the compiled ones) and git blob sha1 otherwise;
/// the other is kept in [`CachedFile::copy_alt`] for [`match_copies`].
fn hash_copy(repo: &RepoCache, path: &std::path::Path) -> std::io::Result<CachedFile> {
    let (sha256, size) = kernels_cache::hash_file(path, DigestKind::Sha256)?;
    let (sha1, _) = kernels_cache::hash_file(path, DigestKind::GitBlobSha1)?;
    let binary = {
        use std::io::Read;
        let mut head = Vec::new();
        fs_err::File::open(path)?
            .take(8000)
            .read_to_end(&mut head)?;
        head.contains(&0)
    };
    let lfs = if repo.blob_path(&sha256.to_string()).exists() {
        true
    } else if repo.blob_path(&sha1.to_string()).exists() {
        false
    } else {
        binary
    };
    let (digest, alt) = if lfs { (sha256, sha1) } else { (sha1, sha256) };
    Ok(CachedFile {
        path: String::new(),
        digest,
        size,
        copy_alt: Some(alt),
    })
}

/// For a variant with copies whose hash did not match: tries the other digest
/// kind of each copy (up to 2^12 combinations) and, on a match, keeps it.
fn match_copies(
    variant: &str,
    files: &mut [CachedFile],
    locked: &str,
) -> Option<file_set::FileSet> {
    let flexible: Vec<usize> = (0..files.len())
        .filter(|&i| files[i].copy_alt.is_some())
        .collect();
    if flexible.is_empty() || flexible.len() > 12 {
        return None;
    }
    for mask in 1u32..(1 << flexible.len()) {
        let mut digests: Vec<Digest> = files.iter().map(|f| f.digest).collect();
        for (bit, &i) in flexible.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                digests[i] = files[i].copy_alt.expect("flexible");
            }
        }
        let hashed: Vec<(&str, Digest)> = files
            .iter()
            .zip(&digests)
            .map(|(f, d)| (f.path.as_str(), *d))
            .collect();
        if let Ok(set) = file_set::matching_file_set(variant, &hashed, locked) {
            for (file, digest) in files.iter_mut().zip(digests) {
                if file.digest != digest {
                    file.copy_alt = Some(file.digest);
                    file.digest = digest;
                }
            }
            return Some(set);
        }
    }
    None
}

/// The [`Problem::Refused`] of a variant [`super::fit`] refused.
fn refused_problem(refused: super::fit::RefusedVariant) -> Problem {
    Problem::Refused {
        variant: refused.variant,
        reasons: refused
            .refusals
            .iter()
            .map(|r| format!("{}: {r}", r.rule()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::Hasher;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn put(repo: &RepoCache, path: &str, content: &[u8], kind: DigestKind) -> String {
        let mut h = Hasher::new(kind, content.len() as u64);
        h.update(content);
        let etag = h.finish().to_string();
        fs_err::create_dir_all(repo.blobs_dir()).unwrap();
        fs_err::write(repo.blob_path(&etag), content).unwrap();
        repo.link(COMMIT, path, &etag).unwrap();
        etag
    }

    fn kernel(variants: Option<&[(&str, String)]>) -> LockedKernel {
        LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: COMMIT.parse().unwrap(),
            variants: variants.map(|v| {
                v.iter()
                    .map(|(k, h)| ((*k).to_owned(), h.clone()))
                    .collect()
            }),
        }
    }

    fn hash_of(repo: &RepoCache, variant: &str, paths: &[&str]) -> String {
        file_set::variant_hash(
            variant,
            paths.iter().map(|p| {
                let etag = repo.linked_etag(COMMIT, p).unwrap();
                (*p, Digest::from_etag(&etag).unwrap())
            }),
        )
    }

    /// `--variant a --variant b` offline (issue 24): a kernel that has either
    /// one cached is verified, with a lock that has variant hashes and with
    /// one that has none; a name the kernel does have (its hash is locked)
    /// but that is not cached is still missing, and so is every name when
    /// none is there.
    #[test]
    fn two_named_variants_accept_a_kernel_that_has_either() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let repo = cache.repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        put(
            &repo,
            "build/cuda/relu/_ops.so",
            b"cuda",
            DigestKind::Sha256,
        );
        let locked = hash_of(&repo, "cuda", &["build/cuda/relu/_ops.so"]);
        let either = VariantSelection::Named(vec!["cpu".into(), "cuda".into()]);
        let verify = |k: LockedKernel, selection: &VariantSelection| {
            let [check] = &verify_kernels(&cache, RepoType::Kernel, &[k], selection)[..] else {
                panic!()
            };
            let problems: Vec<String> = check.problems.iter().map(|p| p.to_string()).collect();
            (problems, check.variants.keys().cloned().collect::<Vec<_>>())
        };
        for k in [kernel(None), kernel(Some(&[("cuda", locked.clone())]))] {
            assert_eq!(verify(k, &either), (vec![], vec!["cuda".to_owned()]));
        }
        let both = kernel(Some(&[("cpu", locked.clone()), ("cuda", locked)]));
        let (problems, _) = verify(both, &either);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let neither = VariantSelection::Named(vec!["cpu".into(), "rocm".into()]);
        let (problems, _) = verify(kernel(None), &neither);
        assert_eq!(problems.len(), 2, "{problems:?}");
    }

    /// A cache of `acme/relu` with a `cpu` variant (source, library and
    /// bytecode) and a `cuda` one, and its variant-hash lock entry; with the
    /// etags of the cpu library and the cuda library.
    fn two_variant_cache() -> (tempfile::TempDir, HubCache, String, String, LockedKernel) {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let id: RepoId = "acme/relu".parse().unwrap();
        let repo = cache.repo(&id, RepoType::Kernel);
        put(
            &repo,
            "build/cpu/relu/__init__.py",
            b"x = 1\n",
            DigestKind::GitBlobSha1,
        );
        let so = put(
            &repo,
            "build/cpu/relu/_ops.so",
            b"\x7fELF....",
            DigestKind::Sha256,
        );
        put(
            &repo,
            "build/cpu/relu/__pycache__/a.pyc",
            b"pyc",
            DigestKind::GitBlobSha1,
        );
        let cuda = put(
            &repo,
            "build/cuda/relu/_ops.so",
            b"cuda",
            DigestKind::Sha256,
        );
        let locked_cpu = hash_of(
            &repo,
            "cpu",
            &["build/cpu/relu/__init__.py", "build/cpu/relu/_ops.so"],
        );
        let locked_cuda = hash_of(&repo, "cuda", &["build/cuda/relu/_ops.so"]);
        let k = kernel(Some(&[("cpu", locked_cpu.clone()), ("cuda", locked_cuda)]));

        (dir, cache, so, cuda, k)
    }

    #[test]
    fn reports_every_difference() {
        let (_dir, cache, so, cuda, k) = two_variant_cache();
        let id: RepoId = "acme/relu".parse().unwrap();
        let repo = cache.repo(&id, RepoType::Kernel);
        // Clean cache: the 0.16-style hash without bytecode is accepted.
        let all = VariantSelection::All;
        let [ok] = &verify_kernels(&cache, RepoType::Kernel, std::slice::from_ref(&k), &all)[..]
        else {
            panic!()
        };
        assert!(ok.is_ok(), "{:?}", ok.problems);
        assert_eq!(ok.variants["cpu"].len(), 2, "bytecode left out");
        assert_eq!(ok.file_count(), 3);

        // Corrupt one blob, remove another, name a variant the kernel lacks
        // (each kernel takes the named variants it has: not a problem).
        fs_err::write(repo.blob_path(&so), b"\x7fELF...!").unwrap();
        fs_err::remove_file(repo.blob_path(&cuda)).unwrap();
        fs_err::write(repo.incomplete_path(&cuda), b"cu").unwrap();
        let named = VariantSelection::Named(vec!["cpu".into(), "cuda".into(), "rocm".into()]);
        let [bad] = &verify_kernels(&cache, RepoType::Kernel, &[k], &named)[..] else {
            panic!()
        };
        let text: Vec<String> = bad.problems.iter().map(|p| p.to_string()).collect();
        assert!(
            !bad.problems
                .iter()
                .any(|p| matches!(p, Problem::MissingVariant { .. })),
            "{text:#?}"
        );
        assert!(
            bad.problems.iter().any(|p| matches!(p, Problem::DanglingLink { path, partial: true, .. } if path == "build/cuda/relu/_ops.so")),
            "{text:#?}"
        );
        assert!(
            bad.problems.iter().any(|p| matches!(p, Problem::WrongDigest { path, .. } if path == "build/cpu/relu/_ops.so")),
            "{text:#?}"
        );
        assert!(
            bad.problems
                .iter()
                .any(|p| matches!(p, Problem::VariantHash { variant, .. } if variant == "cuda")),
            "{text:#?}"
        );
        // The corrupt blob's name still matches its lock entry: no hash problem for cpu.
        assert!(
            !bad.problems
                .iter()
                .any(|p| matches!(p, Problem::VariantHash { variant, .. } if variant == "cpu")),
            "{text:#?}"
        );
    }

    #[test]
    fn missing_snapshot_and_preferred_selection() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let k = kernel(None);
        let [v] = &verify_kernels(
            &cache,
            RepoType::Kernel,
            std::slice::from_ref(&k),
            &VariantSelection::All,
        )[..] else {
            panic!()
        };
        assert!(matches!(v.problems[..], [Problem::NotCached { .. }]));
        let repo = cache.repo(&k.repo_id, RepoType::Kernel);
        put(
            &repo,
            "build/torch-universal/relu/__init__.py",
            b"x",
            DigestKind::GitBlobSha1,
        );
        // A CUDA torch tries [arch, torch-cuda, torch-universal]; only the last is cached.
        let pref = VariantSelection::Detected {
            env: Box::new(crate::variant::testing::env(
                Some("12.6"),
                "Linux",
                "x86_64",
            )),
            rules: crate::lock::profile::VariantPreference::Exact { noarch: true }.into(),
        };
        let [v] = &verify_kernels(&cache, RepoType::Kernel, std::slice::from_ref(&k), &pref)[..]
        else {
            panic!()
        };
        assert!(v.is_ok());
        assert_eq!(v.variants.keys().collect::<Vec<_>>(), ["torch-universal"]);
        // With only a ROCm build cached, the CUDA torch finds nothing.
        fs_err::remove_dir_all(
            repo.snapshot_dir(k.commit.as_str())
                .join("build/torch-universal"),
        )
        .unwrap();
        put(
            &repo,
            "build/torch-rocm/relu/__init__.py",
            b"y",
            DigestKind::GitBlobSha1,
        );
        let [v] = &verify_kernels(&cache, RepoType::Kernel, &[k], &pref)[..] else {
            panic!()
        };
        assert!(matches!(&v.problems[..], [Problem::NoCachedVariant { .. }]));
    }
}
