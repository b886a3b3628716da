//! `kernels info`: what one kernel is, from the Hub, the Hub cache or a local
//! directory, as reference 0.17.2's `kernels info` says it (repository and
//! revision or path; name, version, `kernels-minver`, license, upstream,
//! source and Python dependencies from a variant's `metadata.json`; the set
//! of backends of its variants), and beyond the reference every build variant
//! with its backend, its archs and whether it fits the targets
//! ([`kernels_types::fit`]).
//!
//! * The revision ([`RevisionChoice`]): a given one; branch `vN` for a version
//!   (its refs from the Hub, or offline from the cache's `refs/`, of `kernel`
//!   and `model` folders, as 0.17.2 reads them); else the highest `vN`
//!   branch, else `main`.
//! * Variants are the directories under `build/` whose names the 0.17.2
//!   variant parser accepts
//!   ([`kernels_types::variant_name::BuildVariant::runtime_backend`]); the
//!   others are [`KernelInfo::skipped`].
//! * The kernel-level fields come from the first variant, by name, whose
//!   `metadata.json` reads (they are the same for every variant of a build;
//!   the reference reads one arbitrary variant).

mod error;
mod hub;
mod local;

use std::path::PathBuf;

use kernels_types::CommitId;
use kernels_types::fit::{self, Fit, FitContext};
use kernels_types::metadata::Metadata;
use kernels_types::repo_id::RepoId;

pub use error::InfoError;
pub use hub::{describe_cached, describe_hub};
pub use local::{describe_dir, describe_local, display_path};

/// Which revision of a Hub repository to describe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionChoice {
    /// The highest `vN` branch, else `main` (reference 0.17.2's default).
    Latest,
    /// Branch `vN`.
    Version(u64),
    /// A branch, tag or commit, as given.
    Revision(String),
}

/// What was described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A Hub repository (or its copy in the cache).
    Hub {
        /// The repository.
        repo_id: RepoId,
        /// The revision described, as chosen (`v1`, `main`, a given name).
        revision: String,
        /// The commit it named.
        commit: CommitId,
    },
    /// A local kernel repository, written as Python's `pathlib` writes the
    /// path given (see [`display_path`]).
    Path(String),
}

/// What a variant's `metadata.json` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataState {
    /// It was read.
    Read(Box<Metadata>),
    /// The variant has none.
    Missing,
    /// It cannot be read: the problem, naming the field where one is at fault.
    Invalid(String),
}

/// One build variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantInfo {
    /// The directory name under `build/`.
    pub name: String,
    /// Its backend as the 0.17.2 runtime reads the name (`cuda`, `rocm`,
    /// `cpu`, … or the text after `torch-` of a noarch name).
    pub backend: String,
    /// Its `metadata.json`.
    pub metadata: MetadataState,
}

/// Whether a variant fits, as far as can be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantFit {
    /// Its metadata was checked ([`fit::check`]).
    Checked(Fit),
    /// Its `metadata.json` cannot be read, so the runtime (which parses it at
    /// load) would refuse it.
    Unreadable(String),
    /// It has no `metadata.json`: nothing to check.
    Unknown,
}

impl VariantFit {
    /// `Some(true)` when it fits, `Some(false)` when refused, `None` unknown.
    pub fn fits(&self) -> Option<bool> {
        match self {
            VariantFit::Checked(fit) => Some(fit.fits()),
            VariantFit::Unreadable(_) => Some(false),
            VariantFit::Unknown => None,
        }
    }
}

impl VariantInfo {
    /// The variant's metadata, when read.
    pub fn metadata(&self) -> Option<&Metadata> {
        match &self.metadata {
            MetadataState::Read(metadata) => Some(metadata),
            _ => None,
        }
    }

    /// `backend.archs` of its metadata (empty when none).
    pub fn archs(&self) -> &[String] {
        self.metadata()
            .and_then(|m| m.backend.as_ref())
            .map_or(&[], |b| b.archs.as_slice())
    }

    /// Its fit for `context`.
    pub fn fit(&self, context: &FitContext<'_>) -> VariantFit {
        match &self.metadata {
            MetadataState::Read(metadata) => VariantFit::Checked(fit::check(metadata, context)),
            MetadataState::Invalid(problem) => VariantFit::Unreadable(problem.clone()),
            MetadataState::Missing => VariantFit::Unknown,
        }
    }
}

/// A described kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    /// Where it was read.
    pub origin: Origin,
    /// Its variants, by name.
    pub variants: Vec<VariantInfo>,
    /// Directories under `build/` that are no variant for the 0.17.2 parser,
    /// by name.
    pub skipped: Vec<String>,
}

impl KernelInfo {
    /// The kernel-level metadata: that of the first variant whose
    /// `metadata.json` reads.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.variants.iter().find_map(VariantInfo::metadata)
    }

    /// The backends of its variants, sorted, each once.
    pub fn backends(&self) -> Vec<&str> {
        let set: std::collections::BTreeSet<&str> =
            self.variants.iter().map(|v| v.backend.as_str()).collect();
        set.into_iter().collect()
    }

    /// Builds the description from `build/`'s directory names and each
    /// variant's metadata (in any order).
    fn from_dirs(
        origin: Origin,
        dirs: impl IntoIterator<Item = (String, MetadataState)>,
        mut skipped: Vec<String>,
    ) -> KernelInfo {
        let mut variants = Vec::new();
        for (name, metadata) in dirs {
            match kernels_types::variant_name::BuildVariant::parse(&name).runtime_backend() {
                Some(backend) => variants.push(VariantInfo {
                    name,
                    backend,
                    metadata,
                }),
                None => skipped.push(name),
            }
        }
        variants.sort_by(|a, b| a.name.cmp(&b.name));
        skipped.sort();
        skipped.dedup();
        KernelInfo {
            origin,
            variants,
            skipped,
        }
    }
}

/// Where the build directory of a local kernel repository is.
pub fn build_dir(repo: &std::path::Path) -> PathBuf {
    repo.join("build")
}
