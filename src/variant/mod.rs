//! Build variants (directories under `build/` of a kernel repo) and how
//! `kernels download` picks them.
//!
//! The default choice detects the environment's torch build ([`TorchEnv`]) and
//! ranks the kernel's variants the way the target runtime does
//! ([`VariantPreference`](crate::lock::profile::VariantPreference), part of the target profile):
//!
//! - reference ≤0.12 ([`VariantPreference::Exact`](crate::lock::profile::VariantPreference::Exact)): form `[arch, noarch,
//!   "torch-universal"]` (`utils.py::build_variants`) and take the first of
//!   them the kernel has; only exact names match.
//! - reference 0.13+ ([`VariantPreference::Resolver`](crate::lock::profile::VariantPreference::Resolver)): parse every directory name
//!   ([`BuildVariant`](kernels_types::variant_name::BuildVariant)), keep those compatible with the environment (CUDA
//!   builds of the same major version with a minor version up to the
//!   runtime's are accepted; ROCm, XPU and CANN need the exact version) and
//!   take the best by the resolver's order. Names that do not parse are
//!   skipped with a warning; they stay in lock files untouched.
//! - reference 0.18 and 0.19 ([`rules::Generation`], derived from the
//!   profile's runtime version into [`VariantRules`]): 0.18 accepts a lower
//!   ROCm minor too and reads `torch.version.rocm` and `torch.accelerator`;
//!   0.19 reads the dotted grammar, SDK and MLX names beside the legacy one,
//!   checks the Python part against the target's Python and sorts by its own
//!   order ([`ranking`]'s `v019`).
//!
//! One concept per module: [`selection`] (the command-line request and the
//! choice among a kernel's variants, shared by download and verify),
//! [`ranking`] (the preference order of each target runtime), [`rules`] (which
//! rules a runtime version applies) and
//! [`environment`] (finding the project's Python and asking it about torch),
//! [`mlx_only`] (the environment 0.19 selects for without torch, MLX on Metal),
//! [`probe_receipt`] (its stored answers, reused while the interpreter is unchanged).

pub mod environment;
mod fit_hint;
pub mod mlx_only;
pub mod probe_receipt;
pub mod python_target;
pub mod ranking;
pub mod rules;
pub mod selection;
pub mod targets;

use std::path::PathBuf;

use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

pub use environment::{
    Device, EnvOverrides, EnvSource, EnvSources, ProbeScope, ProbedRuntime, ProjectPython,
    PythonProbe, PythonTarget, TorchEnv, project_python,
};
pub use probe_receipt::ProbeReceipts;
pub use ranking::UNIVERSAL;
pub use rules::{Generation, VariantRules};
pub use selection::{Choice, VariantRequest, VariantSelection, VariantWarning};
pub use targets::{FitPolicy, NotChecked, TargetSource, Targets};

/// Errors of variant detection and selection.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum VariantError {
    /// No Python interpreter could be started to detect torch.
    #[error("cannot run `{}` to detect the torch build variant: {reason}", python.display())]
    #[diagnostic(
        code(kernels::variant::no_python),
        help(
            "activate the project's virtual environment (or create `<project>/.venv`); or name the environment (for an image built without torch or a GPU), e.g. `--torch-version 2.10 --cuda-version 12.8` (also `--rocm-version`, `--xpu-version`, `--metal`, `--cpu`); or choose variants with `--variant NAME` or `--all-variants`"
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
            "install torch in the project's environment; or name the environment (for an image built without torch or a GPU), e.g. `--torch-version 2.10 --cuda-version 12.8` (also `--rocm-version`, `--xpu-version`, `--metal`, `--cpu`); or choose variants with `--variant NAME` (repeatable) or `--all-variants`"
        )
    )]
    NoTorch {
        /// The interpreter that was asked.
        python: PathBuf,
        /// The import error message.
        reason: String,
    },

    /// Environment overrides that cannot hold together.
    #[error("{detail}")]
    #[diagnostic(
        code(kernels::variant::conflicting_overrides),
        help("drop one of the flags (`--metal` implies `--os darwin --arch aarch64`)")
    )]
    ConflictingOverrides {
        /// Which flags, and why.
        detail: String,
    },

    /// A torch version was given (a flag or a declared target) without the
    /// backend, which every build variant name also depends on (issue 45).
    #[error("{from} {torch} names no backend, so the build variant cannot be chosen")]
    #[diagnostic(
        code(kernels::variant::torch_without_backend),
        help(
            "add the backend: `--cuda-version VERSION`, `--rocm-version VERSION`, `--xpu-version VERSION`, `--metal` or `--cpu` (or `backend = \"cuda-12.8\"` in the [[tool.kernels.targets]] entry of pyproject.toml)"
        )
    )]
    TorchWithoutBackend {
        /// `--torch-version`, or the declared target's `torch`.
        from: String,
        /// `MAJOR.MINOR`.
        torch: String,
    },

    /// A backend was given without a torch version, and torch cannot be
    /// asked (issue 45).
    #[error("{flag} needs a torch version too: no `--torch-version`, no `torch` in [[tool.kernels.targets]], and torch is not importable by `{}` ({reason})", python.display())]
    #[diagnostic(
        code(kernels::variant::backend_without_torch),
        help(
            "add `--torch-version MAJOR.MINOR` (for example `--torch-version 2.10`), declare `torch = \"2.10\"` in [[tool.kernels.targets]] of pyproject.toml, or install torch in the project's environment"
        )
    )]
    BackendWithoutTorch {
        /// The backend flag (`--cuda-version 12.6`).
        flag: String,
        /// The interpreter that was asked.
        python: PathBuf,
        /// Why torch could not be asked.
        reason: String,
    },

    /// An environment override is not a version.
    #[error("{flag} `{value}` is not a version such as `12.6`")]
    #[diagnostic(code(kernels::variant::bad_override))]
    BadOverride {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
    },

    /// None of the `--variant` names is a directory under `build/` at the locked commit.
    #[error(
        "{repo_id}@{commit} has none of the requested build variants (`{variant}`); available: {}",
        closest_list(variant, available)
    )]
    #[diagnostic(
        code(kernels::variant::not_found),
        help("{}", not_found_help(variant, available))
    )]
    NotFound {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
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
        commit: CommitId,
    },

    /// No variant of the kernel suits the environment.
    #[error(
        "{repo_id}@{commit} has no build variant for this environment ({wanted}); available: {}",
        closest_list(wanted, available)
    )]
    #[diagnostic(code(kernels::variant::no_compatible), help("{help}"))]
    NoCompatible {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// What was looked for: the exact names tried in order, or the
        /// environment the resolver matched against.
        wanted: String,
        /// Variants the kernel has.
        available: Vec<String>,
        /// What would fit ([`fit_hint::no_fit_help`]).
        help: String,
    },
}

/// Names shown in a list of available variants; the rest are counted.
const LIST_CAP: usize = 5;

/// `available`, closest to `wanted` first (see [`by_closeness`]), at most
/// [`LIST_CAP`] names and the number of the others.
fn closest_list(wanted: &str, available: &[String]) -> String {
    if available.is_empty() {
        return "none (the commit has no build/ directory)".to_owned();
    }
    capped_list(&by_closeness(wanted, available))
}

/// `names` in their order, at most [`LIST_CAP`] of them and the number of the
/// others (`a, b, c, d, e, and 47 more`), as lists of variants are shown.
pub(crate) fn capped_list(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(LIST_CAP).map(|s| s.as_str()).collect();
    let more = names.len().saturating_sub(LIST_CAP);
    if more == 0 {
        shown.join(", ")
    } else {
        format!("{}, and {more} more", shown.join(", "))
    }
}

/// `available` sorted by closeness to the names in `wanted` (split at
/// backquotes, commas, spaces and parentheses): fewest edits (Levenshtein)
/// first, then the highest Jaro-Winkler similarity, then by name.
pub(crate) fn by_closeness(wanted: &str, available: &[String]) -> Vec<String> {
    let names: Vec<&str> = wanted
        .split(['`', ',', ' ', '(', ')'])
        .filter(|n| !n.is_empty())
        .collect();
    // Fewest edits first (a typo is a few edits away), then Jaro-Winkler
    // similarity (a shared prefix), then the name.
    let edits = |candidate: &str| {
        names
            .iter()
            .map(|n| strsim::levenshtein(n, candidate))
            .min()
            .unwrap_or(usize::MAX)
    };
    let similarity = |candidate: &str| {
        names
            .iter()
            .map(|n| strsim::jaro_winkler(n, candidate))
            .fold(0.0_f64, f64::max)
    };
    let mut sorted: Vec<(usize, f64, &String)> = available
        .iter()
        .map(|a| (edits(a), similarity(a), a))
        .collect();
    sorted.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| b.1.total_cmp(&a.1))
            .then_with(|| a.2.cmp(b.2))
    });
    sorted.into_iter().map(|(_, _, a)| a.clone()).collect()
}

/// The help of [`VariantError::NotFound`]: the closest name when it is a
/// likely typo (at most a fifth of the name's characters edited, at least
/// one), as its own `--variant` flag on its own line.
fn not_found_help(wanted: &str, available: &[String]) -> String {
    let closest = by_closeness(wanted, available).into_iter().next();
    let typo =
        |name: &str| strsim::levenshtein(wanted, name) <= (wanted.chars().count() / 5).max(1);
    match closest {
        Some(name) if typo(&name) => {
            format!(
                "did you mean `{name}`?\n\n    --variant {name}\n\n(`--all-variants` takes every one)"
            )
        }
        _ => {
            "pass one of the available variants to `--variant`, or use `--all-variants`".to_owned()
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::TorchEnv;
    use kernels_types::CommitId;

    /// A commit id for tests (`cccc…`, shown as `ccccccc`).
    pub(crate) fn commit() -> CommitId {
        "c".repeat(40).parse().expect("40 hex digits")
    }

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
            rocm: None,
            accelerator: None,
            tpu_backend: false,
            no_torch: false,
            cann: None,
            mlx: false,
            python: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_name_is_the_fewest_edits_away() {
        let available: Vec<String> = [
            "torch25-cxx11-cu121-x86_64-linux",
            "torch26-cxx11-cu124-x86_64-linux",
            "torch26-cxx11-cu126-x86_64-linux",
            "torch27-cxx11-cu128-x86_64-linux",
        ]
        .map(String::from)
        .to_vec();
        // One edit from cu126 and cu124, two from torch25 … cu121.
        let sorted = by_closeness("torch26-cxx11-cu12-x86_64-linux", &available);
        assert_eq!(sorted[0], "torch26-cxx11-cu124-x86_64-linux");
        assert_eq!(sorted[1], "torch26-cxx11-cu126-x86_64-linux");
        assert!(
            not_found_help("torch27-cxx11-cu128-x86_64-linx", &available)
                .contains("--variant torch27-cxx11-cu128-x86_64-linux")
        );
        // Nothing close: no suggestion, even with a shared prefix.
        assert!(!not_found_help("metal", &available).contains("did you mean"));
        let other = ["torch-cpu".to_owned(), "torch-cuda".to_owned()];
        assert!(
            !not_found_help("torch210-cxx11-cu126-x86_64-linus", &other).contains("did you mean")
        );
        assert!(
            not_found_help("torch-univresal", &["torch-universal".to_owned()])
                .contains("did you mean")
        );
    }
}
