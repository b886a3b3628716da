//! Why `kernels to-wheel` could not plan or write wheels: [`WheelError`].

use std::io;
use std::path::PathBuf;

use kernels_types::metadata::MetadataError;

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
            "build them separately into different `--output` directories: with `--variant`, or one kernel at a time instead of `--locked`"
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
    /// A zip-layout variant's archive cannot be read or packed.
    #[error("corrupt kernel archive {}: {reason}", path.display())]
    #[diagnostic(
        code(kernels::wheel::corrupt_archive),
        help("download the variant again (`kernels download --refresh`), or rebuild it")
    )]
    CorruptArchive {
        /// The archive.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A variant's `metadata.json` is unreadable, or a field the wheel
    /// carries cannot go into `METADATA`.
    #[error("invalid {}: {problem}", path.display())]
    #[diagnostic(code(kernels::wheel::bad_metadata))]
    BadMetadata {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        problem: MetadataError,
    },
    /// A variant's files differ from the `digest` of its `metadata.json`.
    #[error(
        "variant `{variant}` ({}) does not match the digest in its metadata.json: {}",
        dir.display(), crate::install::digest::describe(problems)
    )]
    #[diagnostic(
        code(kernels::wheel::digest_mismatch),
        help(
            "the files are not the ones the kernel was built with (changed, added or removed after the build); no wheel was written. Use an unmodified snapshot (`kernels download` refuses files that do not match)"
        )
    )]
    Digest {
        /// The variant.
        variant: String,
        /// Its directory.
        dir: PathBuf,
        /// Every file that differs, sorted by path.
        problems: Vec<kernels_trust::DigestProblem>,
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
