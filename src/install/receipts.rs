//! Verification receipts on the warm path: a file checked in full once
//! (hashed, and its variant checked against its metadata digest) costs a
//! `stat` on later runs, not a hash, while it stays the same file.
//!
//! A receipt per snapshot variant ([`kernels_cache::VariantReceipt`]) records
//! each linked file's blob name and the blob's stamp (size, mtime and ctime in
//! nanoseconds, inode, device). It is written only after a full check passed:
//! by an online `download` once the kernel is fetched and verified
//! ([`record_planned`]), and by the warm path after it hashed what no receipt
//! covered ([`record_checked`], with stamps taken before the hashing). A file
//! whose stamp or link differs from its receipt is hashed again; a variant is
//! trusted as a whole (digest check skipped) only when its receipt covers
//! exactly its linked files. Copies (regular files in the snapshot) are never
//! receipted; a variant with one other than Python bytecode gets no receipt.
//!
//! A `KernelLocks` (0.17) lock does not say which variants a commit has, so a
//! listing receipt ([`kernels_cache::ListingReceipt`]) keeps the variant names
//! of the commit's listing ([`known_variants`]); such a kernel is complete
//! without a request only when every chosen variant's receipt covers it all.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::plan::KernelPlan;
use super::verify::CachedFile;
use crate::lock::format::LockedKernel;
use kernels_cache::{FileStamp, ListingReceipt, ReceiptFile, RepoCache, VariantReceipt};
use kernels_types::file_set::is_bytecode;
use rayon::prelude::*;

/// What the receipts of one kernel's snapshot allowed a check to skip, and
/// what a passing check records.
#[derive(Debug, Default)]
pub(crate) struct Trust {
    /// Repo paths of the linked files whose receipt matched (not hashed).
    pub(crate) files: BTreeSet<String>,
    /// The variants whose receipt covers exactly their linked files, all matched.
    pub(crate) variants: BTreeSet<String>,
    /// Per variant not in `variants`, the receipt to record if the check
    /// passes; absent for a variant with a copy that is not bytecode.
    pub(crate) fresh: BTreeMap<String, VariantReceipt>,
}

/// The variant names of `kernel`'s commit: the lock's, or, for a lock
/// without variant hashes, the stored listing receipt's.
pub(crate) fn known_variants(repo: &RepoCache, kernel: &LockedKernel) -> Option<BTreeSet<String>> {
    match &kernel.variants {
        Some(hashes) if !hashes.is_empty() => Some(hashes.keys().cloned().collect()),
        Some(_) => None,
        None => repo
            .read_listing_receipt(kernel.commit.as_str())
            .map(|receipt| receipt.variants),
    }
}

/// Compares the files a check listed (`variants`, with the blob `stamps`
/// taken while listing) with the stored receipts.
pub(crate) fn trust(
    repo: &RepoCache,
    kernel: &LockedKernel,
    variants: &BTreeMap<String, Vec<CachedFile>>,
    stamps: &HashMap<String, FileStamp>,
) -> Trust {
    let mut trust = Trust::default();
    for (variant, files) in variants {
        let stored = repo.read_variant_receipt(kernel.commit.as_str(), variant);
        let mut current = VariantReceipt::default();
        let (mut receiptable, mut all) = (true, stored.is_some());
        for file in files {
            let stamp = stamps.get(&file.path).filter(|_| file.copy_alt.is_none());
            let Some(stamp) = stamp else {
                receiptable &= is_bytecode(&file.path);
                all &= is_bytecode(&file.path);
                continue;
            };
            let etag = file.digest.to_string();
            if stored
                .as_ref()
                .is_some_and(|r| r.trusts(&file.path, &etag, stamp))
            {
                trust.files.insert(file.path.clone());
            } else {
                all = false;
            }
            let entry = ReceiptFile {
                etag,
                stamp: *stamp,
            };
            current.files.insert(file.path.clone(), entry);
        }
        if all && stored.is_some_and(|r| r.files.len() == current.files.len()) {
            trust.variants.insert(variant.clone());
        } else if receiptable {
            trust.fresh.insert(variant.clone(), current);
        }
    }
    trust
}

/// After a passing check of `kernel`: stores the receipts `trust` holds for
/// the variants it hashed. A cache that cannot be written keeps none.
pub(crate) fn record_checked(repo: &RepoCache, kernel: &LockedKernel, trust: &Trust) {
    for (variant, receipt) in &trust.fresh {
        store(repo, kernel, variant, receipt);
    }
}

/// After an online download of `kernel` verified every planned file: stores
/// the listing receipt (`listed`, the variant names of the commit's listing)
/// and one receipt per planned variant whose files are all links to their
/// planned blobs, with the blobs' stamps now.
pub(crate) fn record_planned(
    repo: &RepoCache,
    kernel: &LockedKernel,
    plan: &KernelPlan,
    listed: &BTreeSet<String>,
) {
    let commit = kernel.commit.as_str();
    let listing = ListingReceipt {
        variants: listed.clone(),
    };
    if let Err(err) = repo.write_listing_receipt(commit, &listing) {
        tracing::debug!("{}: no listing receipt: {err}", kernel.repo_id);
        return;
    }
    // One variant per task: each reads its own links and writes its own file.
    plan.variants.par_iter().for_each(|(variant, files)| {
        let mut receipt = VariantReceipt::default();
        for file in files {
            let etag = file.digest.etag();
            if repo.linked_etag(commit, &file.path).as_deref() != Some(etag.as_str()) {
                return;
            }
            let Ok(stamp) = FileStamp::of(&repo.blob_path(&etag)) else {
                return;
            };
            receipt
                .files
                .insert(file.path.clone(), ReceiptFile { etag, stamp });
        }
        store(repo, kernel, variant, &receipt);
    });
}

fn store(repo: &RepoCache, kernel: &LockedKernel, variant: &str, receipt: &VariantReceipt) {
    match repo.write_variant_receipt(kernel.commit.as_str(), variant, receipt) {
        Ok(()) => tracing::debug!(
            "{}: receipt for {variant} ({} file(s))",
            kernel.repo_id,
            receipt.files.len()
        ),
        Err(err) => tracing::debug!("{}: no receipt for {variant}: {err}", kernel.repo_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_cache::HubCache;
    use kernels_types::Digest;
    use kernels_types::wire::RepoType;

    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

    fn file(path: &str, hex: char, copy: bool) -> CachedFile {
        let digest = Digest::from_etag(&hex.to_string().repeat(40)).unwrap();
        CachedFile {
            path: path.to_owned(),
            digest,
            size: 1,
            copy_alt: copy.then_some(digest),
        }
    }

    fn stamp(ino: u64) -> FileStamp {
        FileStamp {
            size: 1,
            mtime_ns: 10,
            ctime_ns: 10,
            ino,
            dev: 1,
        }
    }

    #[test]
    fn only_unchanged_files_are_trusted_and_whole_variants_need_an_exact_receipt() {
        let dir = tempfile::tempdir().unwrap();
        let repo = HubCache::new(dir.path()).repo(&"acme/relu".parse().unwrap(), RepoType::Kernel);
        let kernel = LockedKernel {
            repo_id: "acme/relu".parse().unwrap(),
            commit: COMMIT.parse().unwrap(),
            variants: None,
        };
        let (a, b) = ("build/torch-cpu/a.py", "build/torch-cpu/b.py");
        let listed = |files: Vec<CachedFile>| BTreeMap::from([("torch-cpu".to_owned(), files)]);
        let mut stamps = HashMap::from([(a.to_owned(), stamp(1)), (b.to_owned(), stamp(2))]);
        let both = listed(vec![file(a, 'a', false), file(b, 'b', false)]);

        // No receipt: nothing trusted; a passing check records one.
        let first = trust(&repo, &kernel, &both, &stamps);
        assert!(first.files.is_empty() && first.variants.is_empty());
        record_checked(&repo, &kernel, &first);
        let again = trust(&repo, &kernel, &both, &stamps);
        assert_eq!(again.files.len(), 2);
        assert!(again.variants.contains("torch-cpu") && again.fresh.is_empty());

        // A changed stamp: that file is hashed, the variant is not whole.
        stamps.insert(b.to_owned(), stamp(3));
        let changed = trust(&repo, &kernel, &both, &stamps);
        assert_eq!(changed.files, BTreeSet::from([a.to_owned()]));
        assert!(changed.variants.is_empty() && changed.fresh.contains_key("torch-cpu"));
        stamps.insert(b.to_owned(), stamp(2));

        // A file of the receipt that is gone: not whole.
        let fewer = trust(&repo, &kernel, &listed(vec![file(a, 'a', false)]), &stamps);
        assert!(fewer.variants.is_empty());
        // A bytecode copy is left out; any other copy gets no receipt.
        let pyc = file("build/torch-cpu/__pycache__/a.pyc", 'c', true);
        let with_pyc = listed(vec![file(a, 'a', false), file(b, 'b', false), pyc]);
        assert!(
            trust(&repo, &kernel, &with_pyc, &stamps)
                .variants
                .contains("torch-cpu")
        );
        let copy = listed(vec![
            file(a, 'a', false),
            file("build/torch-cpu/c.py", 'c', true),
        ]);
        let copied = trust(&repo, &kernel, &copy, &stamps);
        assert!(copied.variants.is_empty() && copied.fresh.is_empty());
    }
}
