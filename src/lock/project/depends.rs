//! The `metadata.json` of every variant of one commit ([`variant_metadata`],
//! also read by `kernels info`) and the `kernel-depends` they list
//! ([`kernel_depends`]): read from the Hub cache or fetched (and then stored
//! there), a bounded number at a time, parsed by the one
//! model, [`kernels_types::metadata::Metadata`] (lenient to unknown keys,
//! strict where a known field is malformed).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kernels_hub::{HubClient, HubError, Target};
use kernels_types::metadata::{self, DependencyVersion, KernelsVersion, Metadata};
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::BuildVariant;
use kernels_types::wire::{RepoType, TreeEntry};
use kernels_types::{CommitId, Digest};

use crate::lock::format::{KernelDependency, KernelVersion};
use crate::lock::project::error::LockError;

/// `kernel-depends` of every variant of `repo_id` at `commit`, deduplicated, in
/// variant then file order. Variant directories are the directories under
/// `build/` named `torch…` or `tvm-ffi…`, and with `sdk_and_mlx` (a 0.19+
/// target runtime) also the `sdk…` and `mlx-…` ones 0.19's parser reads
/// ([`BuildVariant::is_sdk_or_mlx_for_0_19`]); other names are skipped with a
/// warning (added to `warnings`), as the reference skips names its variant
/// parser rejects. One recursive listing of `build/` gives every `metadata.json` with
/// its blob id; each distinct blob is fetched once (variants of one build
/// usually share it).
///
/// # Errors
/// The listing's or a fetch's [`HubError`], a variant without
/// `metadata.json` ([`LockError::MissingMetadata`]) and a `metadata.json` the
/// model refuses ([`LockError::InvalidMetadata`]).
pub async fn kernel_depends(
    client: &HubClient,
    cache: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    sdk_and_mlx: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<metadata::KernelDependency>, LockError> {
    commit_depends(
        client,
        cache,
        repo_type,
        repo_id,
        commit,
        sdk_and_mlx,
        warnings,
    )
    .await
    .map(|(depends, _)| depends)
}

/// The `metadata.json` of every variant of one commit ([`variant_metadata`]).
#[derive(Debug)]
pub struct VariantMetadata {
    /// Variant directory (named `torch…` or `tvm-ffi…`) → its parsed
    /// `metadata.json`, or [`LockError::MissingMetadata`] /
    /// [`LockError::InvalidMetadata`] / the fetch's error; in name order.
    pub variants: Vec<(String, Result<Metadata, LockError>)>,
    /// Directories under `build/` that are no variant (`csrc`).
    pub invalid: BTreeSet<String>,
    /// Variant directory → git blob id of its `metadata.json`, as the
    /// listing names it (variants without one are absent).
    pub blobs: BTreeMap<String, Digest>,
}

/// How many `metadata.json` files one commit reads at the same time.
const METADATA_CONCURRENCY: usize = 8;

/// The `metadata.json` of every variant of `repo_id` at `commit`: one
/// recursive listing of `build/`, then each distinct blob read once (variants
/// of one build usually share it), at most [`METADATA_CONCURRENCY`] at a time,
/// from the Hub cache when `cache` holds it, else fetched (and stored there).
/// `None` when the commit has no `build/`.
///
/// # Errors
/// The listing's [`HubError`], and the first fetch that failed for another
/// reason than the file itself; a variant's own problem (no `metadata.json`,
/// or one the model refuses) is that variant's answer. Each file is parsed
/// as `runtime` reads it ([`Metadata::from_slice_for`]; `None`: the current
/// runtime).
pub async fn variant_metadata(
    client: &HubClient,
    cache: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    runtime: Option<KernelsVersion>,
) -> Result<Option<VariantMetadata>, LockError> {
    variant_metadata_with(client, cache, repo_type, repo_id, commit, false, runtime).await
}

/// [`variant_metadata`], with `sdk_and_mlx` also reading the `sdk…` and
/// `mlx-…` variants a 0.19+ runtime parses, each file parsed as `runtime`
/// reads it ([`Metadata::from_slice_for`]; `None`: the current runtime).
///
/// # Errors
/// As [`variant_metadata`].
pub async fn variant_metadata_with(
    client: &HubClient,
    cache: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    sdk_and_mlx: bool,
    runtime: Option<KernelsVersion>,
) -> Result<Option<VariantMetadata>, LockError> {
    let entries = match client
        .list_tree(repo_type, repo_id, commit.as_str(), "build", true)
        .await
    {
        Ok(entries) => entries,
        Err(HubError::EntryNotFound { .. }) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let files = MetadataFiles::from_listing(&entries, sdk_and_mlx);
    let at = At {
        client,
        repo_type,
        repo_id,
        commit,
        runtime,
    };
    let mut by_blob = files.fetch(&at, cache).await;
    // A fetch that failed for another reason than the file itself fails the
    // whole read (the first such, in name order).
    let failed = files.variants.values().flatten().find(|oid| {
        by_blob.get(*oid).is_some_and(|answer| {
            !matches!(
                answer,
                Ok(_) | Err(LockError::InvalidMetadata { .. } | LockError::MissingMetadata { .. })
            )
        })
    });
    if let Some(Some(Err(err))) = failed.copied().map(|oid| by_blob.remove(&oid)) {
        return Err(err);
    }
    let variants = files
        .variants
        .iter()
        .map(|(variant, oid)| {
            let answer = match oid.and_then(|oid| by_blob.get(&oid)) {
                None => Err(at.missing(variant)),
                Some(Ok(metadata)) => Ok(metadata.clone()),
                // Variants sharing a blob each name their own file.
                Some(Err(LockError::InvalidMetadata { problem, .. })) => {
                    Err(LockError::InvalidMetadata {
                        repo_id: repo_id.clone(),
                        commit: commit.clone(),
                        variant: variant.clone(),
                        problem: problem.clone(),
                    })
                }
                Some(Err(_)) => Err(at.missing(variant)),
            };
            (variant.clone(), answer)
        })
        .collect();
    let blobs = files
        .variants
        .iter()
        .filter_map(|(name, oid)| oid.map(|oid| (name.clone(), oid)))
        .collect();
    Ok(Some(VariantMetadata {
        variants,
        invalid: files.invalid,
        blobs,
    }))
}

/// `kernel-depends` of every variant of `repo_id` at `commit`, as
/// [`kernel_depends`] gives them, with every variant's metadata (variant →
/// metadata): `kernels lock` reuses it to check the declared targets.
///
/// # Errors
/// As [`kernel_depends`]: the first variant without a readable
/// `metadata.json` fails it.
pub async fn commit_depends(
    client: &HubClient,
    cache: Option<&MetadataCache>,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
    sdk_and_mlx: bool,
    warnings: &mut Vec<String>,
) -> Result<(Vec<metadata::KernelDependency>, BTreeMap<String, Metadata>), LockError> {
    let read =
        variant_metadata_with(client, cache, repo_type, repo_id, commit, sdk_and_mlx, None).await?;
    let Some(read) = read else {
        return Ok((Vec::new(), BTreeMap::new()));
    };
    for name in &read.invalid {
        warnings.push(format!(
            "Repository {repo_id} (revision: {commit}) contains invalid build variant: {name:?}"
        ));
    }
    let mut out: Vec<metadata::KernelDependency> = Vec::new();
    let mut variants = BTreeMap::new();
    for (name, answer) in read.variants {
        let metadata = answer?;
        for dep in &metadata.kernel_depends {
            if !out.contains(dep) {
                out.push(dep.clone());
            }
        }
        variants.insert(name, metadata);
    }
    Ok((out, variants))
}

/// The lock-file form of a `kernel-depends` entry.
pub fn lock_dependency(dep: &metadata::KernelDependency) -> KernelDependency {
    KernelDependency {
        repo_id: dep.repo_id.to_string(),
        version: match &dep.version {
            DependencyVersion::Version(n) => KernelVersion::Version(*n),
            DependencyVersion::Revision(r) => KernelVersion::Revision(r.clone()),
        },
    }
}

/// Where the `metadata.json` files of one commit are read from.
struct At<'a> {
    client: &'a HubClient,
    repo_type: RepoType,
    repo_id: &'a RepoId,
    commit: &'a CommitId,
    /// The runtime whose reading of `kernels-minver` applies.
    runtime: Option<KernelsVersion>,
}

impl At<'_> {
    fn missing(&self, variant: &str) -> LockError {
        LockError::MissingMetadata {
            repo_id: self.repo_id.clone(),
            commit: self.commit.clone(),
            variant: variant.to_owned(),
        }
    }
}

/// What one listing of `build/` says about the variants' `metadata.json`.
#[derive(Debug, Default, PartialEq, Eq)]
struct MetadataFiles {
    /// Variant directory → blob id of its `metadata.json`, if it has one.
    variants: BTreeMap<String, Option<Digest>>,
    /// Size of each blob that is a plain git blob (cacheable by its id).
    sizes: HashMap<Digest, u64>,
    /// Directories under `build/` that are no variant (`torch-ext`).
    invalid: BTreeSet<String>,
}

/// Each fetched blob's parsed `metadata.json`, by blob id.
type ByBlob = HashMap<Digest, Result<Metadata, LockError>>;

impl MetadataFiles {
    fn from_listing(entries: &[TreeEntry], sdk_and_mlx: bool) -> Self {
        let mut files = MetadataFiles::default();
        for entry in entries {
            let rest = entry.path.strip_prefix("build/").unwrap_or(&entry.path);
            let Some((name, inner)) = rest.split_once('/') else {
                continue;
            };
            let read = name.starts_with("torch")
                || name.starts_with("tvm-ffi")
                || (sdk_and_mlx && BuildVariant::parse(name).is_sdk_or_mlx_for_0_19());
            if !read {
                files.invalid.insert(name.to_owned());
                continue;
            }
            let slot = files.variants.entry(name.to_owned()).or_default();
            if inner == "metadata.json" && entry.is_file() {
                *slot = Some(entry.oid);
                if entry.lfs.is_none() {
                    files.sizes.insert(entry.oid, entry.size);
                }
            }
        }
        files
    }

    /// Distinct blobs, each with the first variant that has it.
    fn blobs(&self) -> Vec<(Digest, &str)> {
        let mut blobs: Vec<(Digest, &str)> = Vec::new();
        for (variant, oid) in &self.variants {
            if let Some(oid) = oid
                && !blobs.iter().any(|(o, _)| o == oid)
            {
                blobs.push((*oid, variant));
            }
        }
        blobs
    }

    /// Reads every distinct blob, [`METADATA_CONCURRENCY`] at a time.
    async fn fetch(&self, at: &At<'_>, cache: Option<&MetadataCache>) -> ByBlob {
        use futures_util::StreamExt as _;
        let blobs = self.blobs();
        let repo_cache = cache.map(|c| c.cache.repo(at.repo_id, at.repo_type));
        let fetched: Vec<_> = futures_util::stream::iter(blobs.iter().map(|(oid, variant)| {
            let blob = self
                .sizes
                .get(oid)
                .map(|size| kernels_cache::BlobId {
                    digest: *oid,
                    size: *size,
                })
                .zip(repo_cache.as_ref());
            cached_metadata(at, blob, cache, variant)
        }))
        .buffered(METADATA_CONCURRENCY)
        .collect()
        .await;
        blobs.iter().map(|(oid, _)| *oid).zip(fetched).collect()
    }
}
/// The Hub cache as [`kernel_depends`] uses it: `metadata.json` blobs are read
/// from it and stored in it. Stores run on the blocking pool, off the
/// resolution's path; [`MetadataCache::flush`] waits for them.
#[derive(Debug)]
pub struct MetadataCache {
    cache: kernels_cache::HubCache,
    pending: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl MetadataCache {
    /// A cache rooted at `cache`.
    pub fn new(cache: kernels_cache::HubCache) -> Self {
        MetadataCache {
            cache,
            pending: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Waits until every store started so far is done (or failed: stores are
    /// best effort).
    pub async fn flush(&self) {
        let pending: Vec<_> = self
            .pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        for handle in pending {
            let _ = handle.await;
        }
    }
}

/// `build/<variant>/metadata.json` at the commit, parsed: from the Hub cache
/// when `blob` (its git blob id, and the repository's cache folder) is there
/// with that exact content, else fetched and then stored in the cache
/// (best effort: a cache that cannot be written is skipped).
///
/// The blob is stored but never linked into the commit's snapshot: a
/// `build/<variant>/` folder holding only `metadata.json` is what an offline
/// runtime lists as a variant (0.17.2 ranks the folders it finds and loads
/// the best one), so a variant that `download` did not choose must have no
/// folder there.
async fn cached_metadata(
    at: &At<'_>,
    blob: Option<(kernels_cache::BlobId, &kernels_cache::RepoCache)>,
    store: Option<&MetadataCache>,
    variant: &str,
) -> Result<Metadata, LockError> {
    let file = format!("build/{variant}/metadata.json");
    if let Some((id, repo)) = &blob {
        let path = repo.blob_path(&id.etag());
        if kernels_cache::file_matches(&path, id).unwrap_or(false)
            && let Ok(body) = fs_err::read(&path)
        {
            return parse_metadata(&body, at, variant);
        }
    }
    let body = fetch_metadata(at, &file, variant).await?;
    if let Some((id, repo)) = blob {
        // On the blocking pool and not awaited here: the fsyncs of a store must
        // not delay what depends on this answer ([`MetadataCache::flush`]).
        let (repo, body) = (repo.clone(), body.clone());
        let handle = tokio::task::spawn_blocking(move || {
            if let Ok(kernels_cache::PartialBlob::Missing(mut writer)) = repo.open_blob(&id) {
                let _ = writer
                    .restart()
                    .and_then(|()| writer.write(&body, &file))
                    .and_then(|()| writer.finish(&file));
            }
        });
        if let Some(Ok(mut pending)) = store.map(|s| s.pending.lock()) {
            pending.push(handle);
        }
    }
    parse_metadata(&body, at, variant)
}

/// Downloads `file` (`build/<variant>/metadata.json`) at the commit.
async fn fetch_metadata(at: &At<'_>, file: &str, variant: &str) -> Result<Vec<u8>, LockError> {
    let url = at
        .client
        .resolve_url(at.repo_type, at.repo_id, at.commit.as_str(), file);
    let target = Target::repo(at.repo_type, at.repo_id)
        .at(at.commit.as_str())
        .path(file);
    match at.client.get_document(&url, Some(&target)).await {
        Ok(body) => Ok(body),
        Err(HubError::EntryNotFound { .. }) => Err(at.missing(variant)),
        Err(err) => Err(err.into()),
    }
}

/// A `metadata.json`, parsed.
fn parse_metadata(body: &[u8], at: &At<'_>, variant: &str) -> Result<Metadata, LockError> {
    Metadata::from_slice_for(body, at.runtime).map_err(|problem| LockError::InvalidMetadata {
        repo_id: at.repo_id.clone(),
        commit: at.commit.clone(),
        variant: variant.to_owned(),
        problem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(c: char) -> String {
        c.to_string().repeat(40)
    }

    fn digest(c: char) -> Digest {
        Digest::from_hex(&oid(c)).unwrap()
    }

    fn entry(path: &str, oid: &str, lfs: bool) -> TreeEntry {
        serde_json::from_value(serde_json::json!({
            "type": "file",
            "oid": oid,
            "size": 12,
            "path": path,
            "lfs": lfs.then(|| serde_json::json!({"oid": "ab".repeat(32), "size": 12, "pointerSize": 130})),
        }))
        .unwrap()
    }

    fn listing() -> Vec<TreeEntry> {
        vec![
            entry("build/torch-cuda/metadata.json", &oid('a'), false),
            entry("build/torch-cuda/relu/__init__.py", &oid('b'), false),
            entry("build/torch-cpu/metadata.json", &oid('a'), false),
            entry(
                "build/tvm-ffi01-cu128-x86_64-linux/metadata.json",
                &oid('c'),
                true,
            ),
            entry("build/torch-rocm/relu/__init__.py", &oid('d'), false),
            entry("build/torch-ext/relu/__init__.py", &oid('e'), false),
            entry("build/csrc/relu.cu", &oid('e'), false),
            entry("build/README.md", &oid('f'), false),
            entry("build/sdk/metadata.json", &oid('a'), false),
            entry("build/mlx-metal/metadata.json", &oid('a'), false),
        ]
    }

    #[test]
    fn only_a_0_19_runtime_reads_sdk_and_mlx_variants() {
        let names = |sdk_and_mlx| {
            let files = MetadataFiles::from_listing(&listing(), sdk_and_mlx);
            let read: Vec<String> = files.variants.keys().cloned().collect();
            (read, files.invalid)
        };
        let (read, invalid) = names(false);
        assert!(!read.contains(&"sdk".to_owned()), "{read:?}");
        assert!(invalid.contains("sdk") && invalid.contains("mlx-metal"));
        let (read, invalid) = names(true);
        assert!(read.contains(&"sdk".to_owned()) && read.contains(&"mlx-metal".to_owned()));
        assert_eq!(invalid, BTreeSet::from(["csrc".to_owned()]));
    }

    #[test]
    fn listing_gives_each_variants_metadata_blob() {
        let files = MetadataFiles::from_listing(&listing(), false);
        let variants: Vec<(&str, Option<Digest>)> = files
            .variants
            .iter()
            .map(|(v, o)| (v.as_str(), *o))
            .collect();
        assert_eq!(
            variants,
            [
                ("torch-cpu", Some(digest('a'))),
                ("torch-cuda", Some(digest('a'))),
                // A source directory named like a variant counts as one
                // (and fails for its missing metadata.json, as in 0.17).
                ("torch-ext", None),
                ("torch-rocm", None),
                ("tvm-ffi01-cu128-x86_64-linux", Some(digest('c'))),
            ]
        );
        // LFS blobs are not cached by their git id.
        assert_eq!(files.sizes, HashMap::from([(digest('a'), 12)]));
        assert_eq!(
            files.invalid,
            BTreeSet::from(["csrc".to_owned(), "mlx-metal".to_owned(), "sdk".to_owned()])
        );
        assert_eq!(
            files.blobs(),
            [
                (digest('a'), "torch-cpu"),
                (digest('c'), "tvm-ffi01-cu128-x86_64-linux")
            ]
        );
    }

    #[test]
    fn entries_become_lock_dependencies() {
        let metadata: Metadata = r#"{"kernel-depends": [
            {"repo-id": "kernels-community/einops", "version": 1},
            {"repo-id": "kernels-test/other", "revision": "main", "optional": true}]}"#
            .parse()
            .unwrap();
        let deps: Vec<KernelDependency> = metadata
            .kernel_depends
            .iter()
            .map(lock_dependency)
            .collect();
        assert_eq!(
            deps,
            [
                KernelDependency {
                    repo_id: "kernels-community/einops".to_owned(),
                    version: KernelVersion::Version(1),
                },
                KernelDependency {
                    repo_id: "kernels-test/other".to_owned(),
                    version: KernelVersion::Revision("main".to_owned()),
                },
            ]
        );
    }
}
