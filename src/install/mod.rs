//! Downloading locked kernels into the Hugging Face hub cache.
//!
//! Per kernel: one recursive tree listing at the locked commit, variant
//! selection ([`crate::variant`]), then every file of the selected variants is
//! placed as a verified blob plus a relative snapshot link ([`kernels_cache`]).
//! Blobs already in the cache whose content verifies cost no request. A
//! variant locked with a `git_lfs_concat` hash is reported done only after the
//! hash recomputed from the linked blobs equals the lock's; a variant whose
//! metadata.json has a `digest` is checked against it before anything of the
//! kernel is linked (module `digest`). All kernels are
//! tried; failures are collected in the [`DownloadSummary`].
//!
//! A kernel whose selected variants are already complete and verified in
//! the cache costs no request at all, not even the listing (module `warm`;
//! [`DownloadOptions::refresh`] lists it anyway): with a variant-hash lock,
//! or with a `KernelLocks` lock once a download recorded its receipts.
//!
//! In offline mode (`--offline`, `HF_HUB_OFFLINE`) no request is made: the
//! kernels are checked with [`verify::verify_kernels`] (the code behind
//! `kernels verify`), which lists the files from the cached snapshot, re-hashes
//! every linked blob and checks variant hashes, so an offline run accepts a
//! cache written by us or by `huggingface_hub` and names whatever is missing.

//!
//! Modules: the one ordered list of variant checks every path applies
//! (`check`), the options of a run (`options`), the engine (`engine`), one blob
//! fetched through the Hub client (`fetch`), the plan of a kernel (`plan`),
//! what a run hands back (`report`), the one error type (`error`), the version
//! label of a commit (`version`), the reporter trait (`reporter`), offline
//! verification (`verify`), `--dry-run` (`dry_run`), `--explain` (`explain`),
//! the load-time fit of candidate variants (`fit`), the metadata digest of a
//! variant's files (`digest`), the signature of a variant (`signature`), what vouches for
//! the files of a variant the lock pins no hash for (`vouch`), the fit of each variant
//! for the targets that `--explain` and `kernels env` show (`variant_fit`),
//! the verification receipts that spare the warm path a hash (`receipts`),
//! the `benchmarks/` and `tests/` folders of `--with-benchmarks` (`extras`).
//! Each imports what it needs from its siblings; none imports this module.

pub mod check;
pub mod digest;
pub mod dry_run;
mod engine;
pub mod error;
pub mod explain;
pub mod extras;
pub(crate) mod fetch;
pub mod fit;
pub mod options;
pub mod plan;
mod receipts;
pub mod report;
pub mod reporter;
mod runtime_receipts;
pub mod signature;
pub mod variant_fit;
pub mod verify;
mod version;
pub mod vouch;
mod warm;

pub use crate::lock::format::LockedKernel;
pub use dry_run::{DRY_RUN_SCHEMA, DryRunKernel, DryRunVariant, dry_run};
pub use engine::download;
pub use error::DownloadError;
pub(crate) use fetch::{Fetched, Source, ensure_blob};
pub use options::{DEFAULT_CONCURRENCY, DownloadOptions, KernelRef};
pub use plan::{KernelPlan, PlannedFile, plan_kernel};
pub use report::{DownloadSummary, KernelFailure, KernelReport};
pub use reporter::{FileReporter, NoReporter, PlannedKernel, Reporter};
