//! Build variants (directories under `build/` of a kernel repo) and how
//! `kernels download` picks them.
//!
//! The default choice detects the environment's torch build ([`TorchEnv`]) and
//! ranks the kernel's variants the way the target runtime does
//! ([`VariantPreference`], part of the target profile):
//!
//! - reference ≤0.12 ([`VariantPreference::Exact`]): form `[arch, noarch,
//!   "torch-universal"]` (`utils.py::build_variants`) and take the first of
//!   them the kernel has; only exact names match.
//! - reference 0.13+ ([`VariantPreference::Resolver`]): parse every directory name
//!   ([`BuildVariant`]), keep those compatible with the environment (CUDA
//!   builds of the same major version with a minor version up to the
//!   runtime's are accepted; ROCm, XPU and CANN need the exact version) and
//!   take the best by the resolver's order. Names that do not parse are
//!   skipped with a warning; they stay in lock files untouched.
//!
//! One concept per module: [`selection`] (the command-line request and the
//! choice among a kernel's variants, shared by download and verify),
//! [`ranking`] (the preference order of each target runtime) and
//! [`environment`] (finding the project's Python and asking it about torch).

pub mod environment;
pub mod ranking;
pub mod selection;

use std::path::PathBuf;

use kernels_types::repo_id::RepoId;

pub use environment::{TorchEnv, project_python};
pub use ranking::UNIVERSAL;
pub use selection::{Choice, VariantRequest, VariantSelection, VariantWarning};

/// Errors of variant detection and selection.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum VariantError {
    /// No Python interpreter could be started to detect torch.
    #[error("cannot run `{}` to detect the torch build variant: {reason}", python.display())]
    #[diagnostic(
        code(kernels::variant::no_python),
        help(
            "activate the project's virtual environment (or create `<project>/.venv`), or choose variants explicitly with `--variant NAME` or `--all-variants`"
        )
    )]
    PythonFailed {
        /// The interpreter that was tried.
        python: PathBuf,
        /// What went wrong.
        reason: String,
    },

    /// The interpreter runs but cannot import torch.
    #[error("torch is not importable by `{}` ({reason}), so the build variant cannot be detected", python.display())]
    #[diagnostic(
        code(kernels::variant::no_torch),
        help(
            "install torch in the project's environment, or choose variants explicitly with `--variant NAME` (repeatable) or `--all-variants`"
        )
    )]
    NoTorch {
        /// The interpreter that was asked.
        python: PathBuf,
        /// The import error message.
        reason: String,
    },

    /// None of the `--variant` names is a directory under `build/` at the locked commit.
    #[error(
        "{repo_id}@{commit} has none of the requested build variants (`{variant}`); available: {}",
        list(available)
    )]
    #[diagnostic(
        code(kernels::variant::not_found),
        help("pass one of the available variants to `--variant`, or use `--all-variants`")
    )]
    NotFound {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
        /// The requested variant.
        variant: String,
        /// Variants the kernel has.
        available: Vec<String>,
    },

    /// A runtime before 0.11 with a CPU-only torch: its variant detection
    /// raises, so it can load no variant at all.
    #[error(
        "{repo_id}@{commit}: kernels runtimes before 0.11 cannot load any build variant with a CPU-only torch (their variant detection raises \"Torch was not compiled with CUDA, Metal, XPU, NPU, or ROCm enabled.\")"
    )]
    #[diagnostic(
        code(kernels::variant::cpu_torch_unsupported),
        help(
            "target kernels 0.11 or newer (`--target-runtime`), which loads CPU builds, use a GPU build of torch, or choose variants explicitly with `--variant NAME`"
        )
    )]
    NoVariantForCpuTorch {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
    },

    /// No variant of the kernel suits the environment.
    #[error(
        "{repo_id}@{commit} has no build variant for this environment ({wanted}); available: {}",
        list(available)
    )]
    #[diagnostic(
        code(kernels::variant::no_compatible),
        help("pick one explicitly with `--variant NAME`, or use `--all-variants`")
    )]
    NoCompatible {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
        /// What was looked for: the exact names tried in order, or the
        /// environment the resolver matched against.
        wanted: String,
        /// Variants the kernel has.
        available: Vec<String>,
    },
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none (the commit has no build/ directory)".to_owned()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::TorchEnv;

    pub(crate) fn env(cuda: Option<&str>, system: &str, machine: &str) -> TorchEnv {
        TorchEnv {
            major: 2,
            minor: 7,
            cuda: cuda.map(str::to_owned),
            hip: None,
            xpu: None,
            mps: false,
            neuron: false,
            cxx11_abi: true,
            tvm_ffi: None,
            system: system.to_owned(),
            machine: machine.to_owned(),
            mac_version: None,
        }
    }
}
