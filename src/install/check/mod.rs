//! The one ordered list of checks a variant of a locked kernel passes before
//! it counts as placed, and which check a refusal belongs to.
//!
//! Every path that accepts a variant applies [`ORDER`], and the first check
//! that refuses decides the verdict:
//!
//! | check | online (`engine`) | warm (`warm`) | offline (`verify`, `download --offline`) |
//! |---|---|---|---|
//! | [`Check::Fit`] | the candidates' metadata.json, fetched into `blobs/` | the cached metadata.json | the cached metadata.json |
//! | [`Check::Signature`] | the bundle over the metadata bytes, from `blobs/` | the cached directory ([`cached`]) | the cached directory ([`cached`]) |
//! | [`Check::Digest`] | the listing, then each fetched blob | every linked blob, unless a receipt covers it | every linked blob |
//! | [`Check::Abi`] | each compiled file of the fetched blobs, before linking ([`abi`]); only with declared images | each compiled file of the cached variants ([`abi::check_cached`]) | each compiled file of the cached variants (`verify`) |
//! | [`Check::Vouch`] | the listing vouches; a file in the directory that it lacks refuses | a receipt of every file (`KernelLocks` locks) | the digest or the recorded files hash |
//! | [`Check::LockHash`] | the listing, then the placed links | recomputed from the links | recomputed from the links |
//! | [`Check::Provenance`] | before linking ([`provenance`]) | [`cached`] | [`cached`] |
//!
//! Online, every check that needs only the listing, the metadata, the
//! fetched blobs and what the variant directory holds already (a file the
//! digest or the listing lacks) runs before anything of the kernel is linked
//! into the snapshot; only the variant hash recomputed from the links runs
//! after, and its refusal takes out again what the run linked (`engine`), so
//! a refused variant is never left linked. The warm path skips only what a receipt proves: the content hash
//! of a file whose stamp is unchanged (and with it the digest of a variant
//! whose receipt covers all its files); fit, signature and provenance need
//! no request and always run again, against the targets and rules of this
//! run. A check added later (ABI rules, a new variant grammar) takes its
//! place in [`ORDER`] and in each path at that place.

pub mod abi;
pub mod cached;
pub mod provenance;

use super::error::{DownloadError, Problem};

pub use cached::cached;

/// One check of a variant, in the order of [`ORDER`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// The target runtime would load it (`backend.archs`, `kernels-minver`,
    /// `python-depends`; [`crate::install::fit`]).
    Fit,
    /// Its Sigstore signature and signer policy, `require-signed`
    /// ([`crate::install::signature`]).
    Signature,
    /// Its files against the `digest` of its metadata.json, and each blob
    /// against its name ([`crate::install::digest`]).
    Digest,
    /// Its compiled files load on every declared image: symbol versions
    /// within the image's manylinux, the macOS minimum, the architecture
    /// ([`abi`], [`crate::abi`]).
    Abi,
    /// Something vouches for a variant the lock pins no hash for: the
    /// listing, the digest or the recorded files hash ([`crate::install::vouch`]).
    Vouch,
    /// The `git_lfs_concat` hash a variant-hash lock pins.
    LockHash,
    /// The signer and files `kernels.lock.provenance` recorded ([`provenance`]).
    Provenance,
}

/// Every check, in the order each path applies them.
pub const ORDER: [Check; 7] = [
    Check::Fit,
    Check::Signature,
    Check::Digest,
    Check::Abi,
    Check::Vouch,
    Check::LockHash,
    Check::Provenance,
];

impl Check {
    /// A stable kebab-case name (`lock-hash`, …).
    pub fn name(self) -> &'static str {
        match self {
            Check::Fit => "fit",
            Check::Signature => "signature",
            Check::Digest => "digest",
            Check::Abi => "abi",
            Check::Vouch => "vouch",
            Check::LockHash => "lock-hash",
            Check::Provenance => "provenance",
        }
    }

    /// Whether the warm path may skip it for a file or variant a receipt
    /// covers (module `receipts`): only the content checks, which a receipt
    /// proves were done on these very bytes.
    pub fn receipt_proves(self) -> bool {
        matches!(self, Check::Digest)
    }

    /// The check that refused a kernel with `error`; `None` for an error
    /// that is no refusal of a variant (a request, the cache, the listing).
    pub fn of_error(error: &DownloadError) -> Option<Check> {
        match error {
            DownloadError::Unfit { refused, .. }
                if refused
                    .iter()
                    .flat_map(|r| &r.refusals)
                    .all(|r| matches!(r, kernels_types::fit::Refusal::Abi { .. })) =>
            {
                Some(Check::Abi)
            }
            DownloadError::Unfit { .. } | DownloadError::InvalidMetadata { .. } => Some(Check::Fit),
            DownloadError::Signature { .. } => Some(Check::Signature),
            DownloadError::Digest { .. } => Some(Check::Digest),
            DownloadError::Unlisted { .. } => Some(Check::Vouch),
            DownloadError::VariantNotLocked { .. }
            | DownloadError::ListingMismatch { .. }
            | DownloadError::VariantMismatch { .. } => Some(Check::LockHash),
            DownloadError::Provenance(_) => Some(Check::Provenance),
            DownloadError::NotCached { problems, .. } => {
                problems.iter().filter_map(Check::of_problem).min()
            }
            _ => None,
        }
    }

    /// The check a problem of an offline verification belongs to; `None`
    /// for a problem that is something missing rather than refused.
    pub fn of_problem(problem: &Problem) -> Option<Check> {
        match problem {
            Problem::Refused { .. } | Problem::InvalidMetadata { .. } => Some(Check::Fit),
            Problem::Digest { .. } | Problem::WrongDigest { .. } => Some(Check::Digest),
            Problem::Unvouched { .. } | Problem::PinMismatch { .. } => Some(Check::Vouch),
            Problem::VariantNotLocked { .. }
            | Problem::VariantHash { .. }
            | Problem::UnlockedVariant { .. } => Some(Check::LockHash),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_the_order_of_the_type() {
        let mut sorted = ORDER;
        sorted.sort();
        assert_eq!(sorted, ORDER);
        let names: Vec<&str> = ORDER.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "fit",
                "signature",
                "digest",
                "abi",
                "vouch",
                "lock-hash",
                "provenance"
            ]
        );
        assert!(
            ORDER
                .iter()
                .filter(|c| c.receipt_proves())
                .eq([&Check::Digest])
        );
    }

    #[test]
    fn an_offline_failure_belongs_to_the_first_check_of_its_problems() {
        let err = DownloadError::NotCached {
            repo_id: "acme/relu".parse().unwrap(),
            commit: "0123456789abcdef0123456789abcdef01234567".parse().unwrap(),
            problems: vec![
                Problem::VariantHash {
                    variant: "torch-cpu".into(),
                    locked: "sha256-a".into(),
                    actual: "sha256-b".into(),
                    files: 1,
                },
                Problem::Refused {
                    variant: "torch-cpu".into(),
                    reasons: vec!["archs: no".into()],
                },
                Problem::MissingVariant {
                    variant: "torch-cuda".into(),
                },
            ],
        };
        assert_eq!(Check::of_error(&err), Some(Check::Fit));
        assert_eq!(Check::of_error(&DownloadError::Internal("x".into())), None);
    }
}
