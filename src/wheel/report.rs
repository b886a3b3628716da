//! What planning wheels hands back: the wheels of one run ([`Plan`],
//! [`PlannedWheel`]), the notes about metadata a wheel does not carry
//! ([`WheelNote`]), and for `--locked`/`--frozen` the wheels of each locked
//! kernel with the source of their version ([`LockedBuild`], [`LockedVersion`]).

use std::fmt;
use std::path::{Path, PathBuf};

use kernels_types::variant_name::BuildVariant;

use crate::install::LockedKernel;
use crate::wheel::archive::{self, Entry};
use crate::wheel::error::WheelError;
use crate::wheel::spec::WheelSpec;

/// The wheels one run will build, checked before anything is written.
#[derive(Debug)]
pub struct Plan {
    /// One wheel per selected variant, in variant-name order.
    pub wheels: Vec<PlannedWheel>,
    /// Variants skipped because no wheel can be built for them (only when
    /// no explicit selection was given).
    pub skipped: Vec<BuildVariant>,
    /// What the variants' `metadata.json` said that the wheels do not carry
    /// as it is (unknown fields, dependencies that cannot be declared).
    pub notes: Vec<WheelNote>,
}

/// A wheel ready to be written.
#[derive(Debug)]
pub struct PlannedWheel {
    /// The build variant.
    pub variant: BuildVariant,
    /// Name, tags and metadata.
    pub spec: WheelSpec,
    pub(crate) metadata: String,
    pub(crate) entries: Vec<Entry>,
    pub(crate) epoch: u64,
}

impl PlannedWheel {
    /// Writes the wheel into `out_dir` (which must exist) and returns its path.
    pub fn build(&self, out_dir: &Path) -> Result<PathBuf, WheelError> {
        let dist_info = self.spec.dist_info();
        let generated = [
            (format!("{dist_info}/METADATA"), self.metadata.clone()),
            (format!("{dist_info}/WHEEL"), self.spec.wheel_text()),
        ];
        let dest = out_dir.join(self.spec.file_name());
        archive::write_wheel(&dest, &self.entries, &generated, &dist_info, self.epoch)?;
        Ok(dest)
    }
}

/// Something about a variant's metadata that did not make it into the wheel
/// as it is; the command line shows these, the wheel is still built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WheelNote {
    /// A `metadata.json` field this version does not know; it is ignored.
    UnknownField {
        /// The variant.
        variant: String,
        /// The field name.
        field: String,
    },
    /// A backend-specific dependency of a universal variant: a wheel for every
    /// backend cannot say which one needs it.
    BackendDependencyLeftOut {
        /// The variant.
        variant: String,
        /// The PyPI name.
        dependency: String,
        /// The backend type it is declared for.
        backend: String,
    },
    /// A `kernel-depends` entry pinned to a revision: no wheel version follows.
    RevisionKernelDependency {
        /// The variant.
        variant: String,
        /// The kernel depended on.
        repo_id: String,
        /// Its revision.
        revision: String,
    },
    /// A dependency entry that is not a Python project name; it is ignored.
    BadDependency {
        /// The variant.
        variant: String,
        /// The entry as written.
        entry: String,
    },
}

impl WheelNote {
    /// The variant the note is about.
    pub fn variant(&self) -> &str {
        match self {
            WheelNote::UnknownField { variant, .. }
            | WheelNote::BackendDependencyLeftOut { variant, .. }
            | WheelNote::RevisionKernelDependency { variant, .. }
            | WheelNote::BadDependency { variant, .. } => variant,
        }
    }

    /// The note without the variant, so that equal notes of several variants
    /// can be shown once.
    pub fn message(&self) -> String {
        match self {
            WheelNote::UnknownField { field, .. } => {
                format!("metadata.json field `{field}` is not known to this version; ignored")
            }
            WheelNote::BackendDependencyLeftOut {
                dependency,
                backend,
                ..
            } => format!(
                "`{dependency}` is only needed on {backend} and a universal wheel cannot tell the backend; \
                 not declared, install it yourself where needed"
            ),
            WheelNote::RevisionKernelDependency {
                repo_id, revision, ..
            } => format!(
                "kernel dependency `{repo_id}` at revision `{revision}` has no wheel version; \
                 not declared, build and install its wheel yourself"
            ),
            WheelNote::BadDependency { entry, .. } => {
                format!("dependency `{entry}` is not a Python project name; ignored")
            }
        }
    }
}

impl fmt::Display for WheelNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.variant(), self.message())
    }
}

/// Where the wheel version of a locked kernel came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockedVersion {
    /// The lock entry's `version` or release-tag `revision` (0.17 locks).
    Lock(String),
    /// A release tag at the locked commit, from the Hub's ref listing.
    HubTag(String),
    /// A release tag at the locked commit, from the cache's `refs/`.
    CachedRef(String),
    /// No release version is known: `0+g<short commit>`.
    Commit,
}

impl std::fmt::Display for LockedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockedVersion::Lock(v) => write!(f, "from the lock entry `{v}`"),
            LockedVersion::HubTag(tag) => write!(f, "from Hub tag `{tag}`"),
            LockedVersion::CachedRef(tag) => write!(f, "from cached ref `{tag}`"),
            LockedVersion::Commit => write!(f, "no release tag at the locked commit"),
        }
    }
}

/// The wheels of one locked kernel, planned (nothing written yet).
#[derive(Debug)]
pub struct LockedBuild {
    /// The locked kernel.
    pub locked: LockedKernel,
    /// The wheel version before variant labels (`0.0.3`, `0+g1a2b3c4`).
    pub version: String,
    /// Where it came from.
    pub version_source: LockedVersion,
    /// The wheels to write.
    pub plan: Plan,
    /// Variants named in a variant-hash lock that cannot become wheels
    /// (such as `torch-ext`); they are neither downloaded nor built.
    pub skipped_locked: Vec<String>,
}
