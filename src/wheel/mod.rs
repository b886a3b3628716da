//! `kernels to-wheel`: turn the build variants of a kernel snapshot into
//! installable Python wheels (PEP 427), one wheel per variant.
//!
//! Input is a snapshot directory holding `build/<variant>/…`: a local
//! checkout, a Hugging Face cache snapshot, or one downloaded into the cache
//! first (see [`Snapshot`]). Each variant
//! becomes `{name}-{version}[+{local}]-{python}-{abi}-{platform}.whl`, with
//! names and tags from [`WheelSpec`]. Output is reproducible: entries are
//! sorted, timestamps come from `SOURCE_DATE_EPOCH`, and generated files have
//! fixed modes, so rebuilding gives byte-identical wheels.
//!
//! [`locked`] plans the wheels of every kernel in a project's `kernels.lock`
//! (`--locked`/`--frozen`); [`build_wheels`] writes planned wheels in parallel.
//!
//! The reference `kernels` had this command in 0.6.0–0.11.3 only; see
//! [`WheelSpec::new`] and `docs/to-wheel.md` for where this one deliberately
//! differs.
//!
//! ```no_run
//! use kernels::wheel::{Kernel, Snapshot, WheelOptions, plan_wheels};
//!
//! # fn main() -> Result<(), kernels::wheel::WheelError> {
//! let kernel = Kernel::new("kernels-community/activation".parse().unwrap(), "0.0.3")?;
//! let snapshot = Snapshot::from_dir("checkout/activation".as_ref())?;
//! let options = WheelOptions {
//!     python: "3.9".parse().unwrap(),
//!     manylinux: "2.28".parse().unwrap(),
//!     macos: "11.0".parse().unwrap(),
//!     source_date_epoch: 315_532_800,
//! };
//! let mut written = Vec::new();
//! for planned in plan_wheels(&kernel, &snapshot, &[], &options)?.wheels {
//!     written.push(planned.build("dist".as_ref())?);
//! }
//! # Ok(())
//! # }
//! ```

mod archive;
mod depends;
pub mod locked;
mod source;
mod spec;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub use archive::ZIP_EPOCH;
pub use depends::{Depends, KernelDepend, WheelNote};
pub use source::{HubRevision, Snapshot};
pub use spec::{Kernel, KernelMetadata, TagVersion, WheelOptions, WheelSpec};

use kernels_types::variant_name::BuildVariant;

/// Why wheels could not be built.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WheelError {
    /// The repository name is not a valid Python project name.
    #[error("`{repo_id}` cannot name a Python distribution")]
    #[diagnostic(
        code(kernels::wheel::bad_project_name),
        help("the part after `/` must start and end with a letter or digit")
    )]
    BadProjectName {
        /// The repository id.
        repo_id: String,
    },
    /// The version argument is not a usable PEP 440 version.
    #[error("`{version}` is not a usable wheel version: {reason}")]
    #[diagnostic(
        code(kernels::wheel::bad_version),
        help("give a PEP 440 version such as `0.0.3` (a leading `v` is accepted)")
    )]
    BadVersion {
        /// The version as given.
        version: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The variant name is not a known build variant, so no tags follow from it.
    #[error(
        "build variant `{variant}` cannot become a wheel: it is not a known build-variant name"
    )]
    #[diagnostic(
        code(kernels::wheel::unsupported_variant),
        help(
            "wheels can be built for torch*, torch-stable-abi*, tvm-ffi*, torch-<backend> and torch-universal variants; choose those with `--variant`"
        )
    )]
    UnsupportedVariant {
        /// The directory name.
        variant: String,
    },
    /// `--variant` named a directory that is not in the snapshot.
    #[error("build variant `{variant}` is not in {}", build_dir.display())]
    #[diagnostic(
        code(kernels::wheel::no_such_variant),
        help("available variants: {available}")
    )]
    NoSuchVariant {
        /// The requested name.
        variant: String,
        /// The snapshot's `build/` directory.
        build_dir: PathBuf,
        /// The variants that exist, comma-separated.
        available: String,
    },
    /// The snapshot has no variant a wheel can be built for.
    #[error("{} contains no build variant to turn into a wheel", build_dir.display())]
    #[diagnostic(code(kernels::wheel::no_variants))]
    NoVariants {
        /// The snapshot's `build/` directory.
        build_dir: PathBuf,
    },
    /// The snapshot has no `build/` directory.
    #[error("{} has no `build/` directory", dir.display())]
    #[diagnostic(
        code(kernels::wheel::no_build_dir),
        help("pass the root of a kernel snapshot, the directory that contains `build/<variant>/`")
    )]
    NoBuildDir {
        /// The directory given.
        dir: PathBuf,
    },
    /// No snapshot for the revision is in the Hub cache.
    #[error("`{repo_id}` at revision `{revision}` is not in the Hub cache at {}", cache_dir.display())]
    #[diagnostic(
        code(kernels::wheel::not_cached),
        help(
            "run online (without HF_HUB_OFFLINE) so that to-wheel downloads it, or pass a local snapshot with `--from-dir`"
        )
    )]
    NotCached {
        /// The repository id.
        repo_id: String,
        /// The branch, tag or commit looked up.
        revision: String,
        /// The cache root searched.
        cache_dir: PathBuf,
    },
    /// The version's tag or branch `v<VERSION>` does not exist.
    #[error("`{repo_id}` has no version `{revision}` (no such tag or branch)")]
    #[diagnostic(code(kernels::wheel::no_such_version), help("{help}"))]
    NoSuchVersion {
        /// The repository id.
        repo_id: String,
        /// The revision looked up (`v<VERSION>`).
        revision: String,
        /// The versions there are, and the closest one.
        help: String,
    },
    /// A variant directory holds neither a flat module nor the package directory.
    #[error("build variant `{variant}` has neither {}/__init__.py nor a `{package}/` package directory", dir.display())]
    #[diagnostic(
        code(kernels::wheel::no_package),
        help("the package directory is the repository name with `-` replaced by `_`")
    )]
    NoPackage {
        /// The variant.
        variant: String,
        /// The variant directory.
        dir: PathBuf,
        /// The expected package directory name.
        package: String,
    },
    /// Two variants would produce the same wheel file.
    #[error("build variants `{first}` and `{second}` both become {file}")]
    #[diagnostic(
        code(kernels::wheel::duplicate_wheel),
        help(
            "build them separately into different `--out-dir`s: with `--variant`, or one kernel at a time instead of `--locked`"
        )
    )]
    DuplicateWheel {
        /// The wheel file name.
        file: String,
        /// The first variant.
        first: String,
        /// The second variant.
        second: String,
    },
    /// A file of the variant cannot be packed safely.
    #[error("refusing to pack {}: {reason}", path.display())]
    #[diagnostic(
        code(kernels::wheel::unsafe_path),
        help("remove or replace the file in the snapshot")
    )]
    UnsafePath {
        /// The offending path.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A variant's `metadata.json` is unreadable.
    #[error("invalid {}: {reason}", path.display())]
    #[diagnostic(code(kernels::wheel::bad_metadata))]
    BadMetadata {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Writing the wheel failed.
    #[error("cannot write {}", path.display())]
    #[diagnostic(code(kernels::wheel::write))]
    Write {
        /// The wheel being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Fetching the snapshot from the Hub failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Download(Box<crate::install::DownloadError>),
    /// The project's `kernels.lock` cannot be used (`--locked`/`--frozen`).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Lockfile(Box<crate::lock::format::LockfileError>),
    /// Reading the snapshot failed (the message names the path).
    #[error(transparent)]
    #[diagnostic(code(kernels::wheel::io))]
    Io(#[from] io::Error),
    /// The zip writer failed.
    #[error("zip writer failed: {0}")]
    #[diagnostic(code(kernels::wheel::zip))]
    Zip(#[from] zip::result::ZipError),
}

impl From<crate::install::DownloadError> for WheelError {
    fn from(err: crate::install::DownloadError) -> Self {
        WheelError::Download(Box::new(err))
    }
}

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
    metadata: String,
    entries: Vec<archive::Entry>,
    epoch: u64,
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

/// Writes `wheels` into `out_dir` (which must exist) on up to `jobs` threads
/// and returns each wheel's path or error, in the order given. Every wheel is
/// written atomically, so a failure leaves no partial file; the other wheels
/// are still written.
pub fn build_wheels(
    wheels: &[&PlannedWheel],
    out_dir: &Path,
    jobs: usize,
) -> Vec<Result<PathBuf, WheelError>> {
    use rayon::prelude::*;

    let build_all = || -> Vec<Result<PathBuf, WheelError>> {
        wheels
            .par_iter()
            .map(|wheel| wheel.build(out_dir))
            .collect()
    };
    match rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.clamp(1, wheels.len().max(1)))
        .build()
    {
        Ok(pool) => pool.install(build_all),
        // No thread could be started: build on this one.
        Err(_) => wheels.iter().map(|wheel| wheel.build(out_dir)).collect(),
    }
}

/// Plans one wheel per variant of `snapshot`.
///
/// `selection` lists variant names to build; empty means every directory in
/// `build/`, silently skipping names that are not build variants (such as a
/// stray `torch-ext`, reported in [`Plan::skipped`]). An explicitly selected
/// variant that is missing or unsupported is an error. All checks (names,
/// package layout, file paths, `metadata.json`, duplicate file names) happen
/// here, so a failing run writes nothing.
pub fn plan_wheels(
    kernel: &Kernel,
    snapshot: &Snapshot,
    selection: &[String],
    options: &WheelOptions,
) -> Result<Plan, WheelError> {
    let available = snapshot.variants()?;
    let mut skipped = Vec::new();
    let chosen: Vec<BuildVariant> = if selection.is_empty() {
        let (known, unknown): (Vec<_>, Vec<_>) =
            available.into_iter().partition(BuildVariant::is_known);
        skipped = unknown;
        known
    } else {
        let mut chosen = Vec::new();
        for name in selection {
            let Some(variant) = available.iter().find(|v| v.name() == name) else {
                return Err(WheelError::NoSuchVariant {
                    variant: name.clone(),
                    build_dir: snapshot.build_dir().to_path_buf(),
                    available: available
                        .iter()
                        .map(BuildVariant::name)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            if !chosen.contains(variant) {
                chosen.push(variant.clone());
            }
        }
        chosen.sort_by(|a, b| a.name().cmp(b.name()));
        chosen
    };
    if chosen.is_empty() {
        return Err(WheelError::NoVariants {
            build_dir: snapshot.build_dir().to_path_buf(),
        });
    }

    let package = kernel.package_dir();
    let mut by_file: BTreeMap<String, String> = BTreeMap::new();
    let mut wheels = Vec::new();
    let mut notes = Vec::new();
    for variant in chosen {
        let spec = WheelSpec::new(kernel, &variant, options)?;
        if let Some(first) = by_file.insert(spec.file_name(), variant.name().to_owned()) {
            return Err(WheelError::DuplicateWheel {
                file: spec.file_name(),
                first,
                second: variant.name().to_owned(),
            });
        }
        let dir = snapshot.build_dir().join(variant.name());
        let flat = dir.join("__init__.py").is_file();
        let root = if flat {
            dir.clone()
        } else {
            dir.join(&package)
        };
        if !root.is_dir() {
            return Err(WheelError::NoPackage {
                variant: variant.name().to_owned(),
                dir,
                package,
            });
        }
        let entries = archive::collect(&root, &package, snapshot.trust_root())?;
        let mut extra = read_kernel_metadata(&dir.join("metadata.json"))?;
        for field in &extra.unknown_fields {
            notes.push(WheelNote::UnknownField {
                variant: variant.name().to_owned(),
                field: field.clone(),
            });
        }
        let (requires, dependency_notes) = extra.depends.requirements(&variant);
        // The framework requirement of the variant is more precise than a
        // bare `torch` in `python-depends`.
        let name_of = |r: &str| {
            r.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase()
        };
        let framework = spec.requires_dist.as_deref().map(name_of);
        extra.requires = requires
            .into_iter()
            .filter(|r| framework.as_deref() != Some(name_of(r).as_str()))
            .collect();
        notes.extend(dependency_notes);
        let metadata = spec.metadata_text(kernel.repo_id(), variant.name(), &extra);
        wheels.push(PlannedWheel {
            variant,
            spec,
            metadata,
            entries,
            epoch: options.source_date_epoch,
        });
    }
    Ok(Plan {
        wheels,
        skipped,
        notes,
    })
}

fn read_kernel_metadata(path: &Path) -> Result<KernelMetadata, WheelError> {
    if !path.is_file() {
        return Ok(KernelMetadata::default());
    }
    let text = fs_err::read_to_string(path)?;
    KernelMetadata::from_json(&text).map_err(|reason| WheelError::BadMetadata {
        path: path.to_path_buf(),
        reason,
    })
}
