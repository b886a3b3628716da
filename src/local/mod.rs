//! Kernels under development: builds in a local directory rather than a
//! Hub commit.
//!
//! - `LOCAL_KERNELS` as the runtime reads it ([`overrides`]): which
//!   repositories its `get_kernel`, `get_local_kernel` and `has_kernel` take
//!   from a local directory (reference 0.19.1 `kernels/_internals/load.py`,
//!   `_parse_local_kernel_overrides`); `load_kernel(lockfile=…)` and
//!   `get_locked_kernel` ignore it.
//! - The layouts of such a directory and the variant the runtime would load
//!   from it ([`layout`], reference 0.19.1 `resolver.py`,
//!   `resolve_local_kernel`).
//!
//! Nothing here reads the environment or prints: the CLI passes the
//! variable's value in and renders what comes back.

pub mod check;
pub mod layout;
pub mod overrides;

pub use layout::{LocalBuild, LocalLayout, LocalVariant};
pub use overrides::{LocalEntry, LocalKernels};

use std::path::PathBuf;

/// Why a local kernel directory or a `LOCAL_KERNELS` value cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LocalError {
    /// An entry of `LOCAL_KERNELS` without `=` (the runtime raises
    /// `ValueError` for it on the first `get_kernel`).
    #[error(
        "LOCAL_KERNELS entry `{entry}` has no `=`: the runtime's get_kernel raises ValueError for it"
    )]
    #[diagnostic(
        code(kernels::local::malformed_entry),
        help(
            "write `org/name=/path/to/kernel`, entries separated by `:`, for example `LOCAL_KERNELS=kernels-community/relu=../relu`"
        )
    )]
    MalformedEntry {
        /// The entry as written (empty for an empty value or `::`).
        entry: String,
    },
    /// The directory a local kernel is said to be in does not exist.
    #[error("{source_name}: {path} does not exist")]
    #[diagnostic(
        code(kernels::local::missing),
        help(
            "build the kernel there (kernel-builder writes `build/<variant>/`), or correct the path"
        )
    )]
    Missing {
        /// Where the path was given (`LOCAL_KERNELS entry \`org/name=…\``, a
        /// manifest entry, a command-line argument).
        source_name: String,
        /// The path.
        path: PathBuf,
    },
    /// The path holds no variant the runtime would accept in any layout.
    #[error(
        "{source_name}: {path} holds no build variant: no variant directory at its root or under build/, and no metadata.json of its own{names}"
    )]
    #[diagnostic(
        code(kernels::local::no_variant),
        help(
            "point at a kernel-builder output (the directory with `build/<variant>/`), at its `build/`, or at one variant directory with its metadata.json"
        )
    )]
    NoVariant {
        /// Where the path was given.
        source_name: String,
        /// The path.
        path: PathBuf,
        /// `; directories skipped: …` when some were not variant names.
        names: String,
    },
    /// The directory could not be read.
    #[error("{source_name}: cannot read {path}: {source}")]
    #[diagnostic(code(kernels::local::io))]
    Io {
        /// Where the path was given.
        source_name: String,
        /// The path.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}
