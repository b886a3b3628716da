//! The target runtime's own digest receipts, written for each variant a
//! download run verified in full ([`kernels_cache::RuntimeReceiptFormat`];
//! which format, if any, is the target profile's choice,
//! [`crate::lock::profile::Profile::runtime_receipts`]). The runtime that
//! finds one skips hashing the variant at load, which a read-only cache
//! could otherwise never avoid. Signature receipts are never written: what
//! the runtime's signature policy accepts is its own decision.

use kernels_cache::{HubCache, KernelLocation};

use super::options::DownloadOptions;
use super::report::KernelReport;

/// Writes the runtime receipt of every variant of a finished kernel when
/// `options` asks for a format. A cache that cannot be written keeps what it
/// has: the runtime then hashes the variant at load, as without a receipt.
pub(super) fn record(cache: &HubCache, options: &DownloadOptions, report: &KernelReport) {
    let Some(format) = options.runtime_receipts else {
        return;
    };
    for variant in &report.variants {
        let location = KernelLocation {
            repo_id: report.repo_id.as_str(),
            revision: report.commit.as_str(),
            variant,
        };
        if let Err(err) = cache.write_runtime_receipt(format, &location) {
            tracing::warn!(
                "{}: cannot write the runtime's receipt of {variant}: {err}",
                report.repo_id
            );
        }
    }
}
