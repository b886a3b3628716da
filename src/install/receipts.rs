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
    'variants: for (variant, files) in &plan.variants {
        let mut receipt = VariantReceipt::default();
        for file in files {
            let etag = file.digest.etag();
            if repo.linked_etag(commit, &file.path).as_deref() != Some(etag.as_str()) {
                continue 'variants;
            }
            let Ok(stamp) = FileStamp::of(&repo.blob_path(&etag)) else {
                continue 'variants;
            };
            receipt
                .files
                .insert(file.path.clone(), ReceiptFile { etag, stamp });
        }
        store(repo, kernel, variant, &receipt);
    }
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
