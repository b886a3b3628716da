//! Whether a build variant fits a target: the load-time checks of reference
//! 0.17.2 (`kernels/validate.py`, `archs.py`, `python_deps.py`), applied to a
//! variant's [`Metadata`] before the variant is chosen or downloaded.
//!
//! The rules ([`check`]):
//!
//! * **Archs.** A CUDA build's `backend.archs` must support the capability of
//!   every CUDA target ([`cuda_arch_supports`]: `X.Ya` exactly `X.Y`; `X.Yf` and
//!   plain `X.Y` the same major with a minor at least `Y`; `X.Y+PTX` any
//!   capability at least `X.Y`); one supporting arch suffices, and a list in
//!   which no arch parses counts as supporting everything (a newer builder's
//!   format). A ROCm build's archs must contain every ROCm target's arch
//!   as written: the runtime (0.16.2 to 0.19.1) strips feature flags from the
//!   device's arch only, so a build arch with flags (`gfx90a:xnack+`) fits no
//!   device. No archs, or no target of the build's
//!   backend, means the rule is not checked.
//! * **`kernels-minver`** must not be above the target runtime's release
//!   (from 0.17; a runtime before 0.17 loads such a variant with a warning,
//!   [`FitWarning::Minver`], reading the value as 0.16.2 does: any count of
//!   dotted numbers, [`LegacyVersion`]; one it cannot read is ignored).
//! * **`python-depends`** (and, beyond the 0.17.2 runtime, which reads only
//!   `python-depends`, the `python-depends-backends` entry of the build's
//!   backend): each name must be on the allow-list for the build's backend
//!   ([`crate::python_depends`]) and, when the project's interpreter was asked,
//!   its module must be importable there.
//! * **Dirty provenance** is a warning, never a refusal.
//!
//! ```
//! use kernels_types::fit::{check, Capability, FitContext, Refusal, Target};
//! use kernels_types::metadata::Metadata;
//! let metadata: Metadata = r#"{"name": "relu", "version": 1, "python-depends": [],
//!     "backend": {"type": "cuda", "archs": ["8.0"]}}"#.parse().unwrap();
//! let targets = [Target::Cuda(Capability::new(9, 0))];
//! let fit = check(&metadata, &FitContext { targets: &targets, ..FitContext::default() });
//! assert!(matches!(fit.refusals[0], Refusal::Arch { .. }));
//! assert_eq!(
//!     fit.refusals[0].to_string(),
//!     "CUDA capability 9.0 is not supported by the architectures of the build: 8.0"
//! );
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::metadata::{BackendType, KernelsVersion, LegacyVersion, Metadata};
use crate::python_depends;

/// A CUDA compute capability, `major.minor` (`9.0` for H100/H200).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Capability {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Capability {
    /// `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Capability { major, minor }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A value that is not a capability (`9.0`) or ROCm arch (`gfx942`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not {expected}")]
pub struct BadTarget {
    /// The text given.
    pub value: String,
    /// What was expected, e.g. "a CUDA capability such as `9.0`".
    pub expected: &'static str,
}

impl FromStr for Capability {
    type Err = BadTarget;

    /// Parses `X.Y` (decimal, nothing else).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadTarget {
            value: s.to_owned(),
            expected: "a CUDA capability such as `9.0`",
        };
        let (major, minor) = s.split_once('.').ok_or_else(bad)?;
        let number = |part: &str| {
            (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u32>().ok())
                .flatten()
        };
        Ok(Capability::new(
            number(major).ok_or_else(bad)?,
            number(minor).ok_or_else(bad)?,
        ))
    }
}

/// A GPU that a project's kernels must run on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// A CUDA device of this capability.
    Cuda(Capability),
    /// A ROCm device of this GCN arch (`gfx942`), without feature flags.
    Rocm(String),
}

impl Target {
    /// A ROCm target from a name such as `gfx942` or `gfx90a:sramecc+:xnack-`
    /// (the flags are dropped, as the 0.17.2 runtime drops them).
    pub fn rocm(name: &str) -> Result<Target, BadTarget> {
        let arch = name.split(':').next().unwrap_or_default();
        if arch.len() > 3
            && arch.starts_with("gfx")
            && arch.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            Ok(Target::Rocm(arch.to_owned()))
        } else {
            Err(BadTarget {
                value: name.to_owned(),
                expected: "a ROCm arch such as `gfx942`",
            })
        }
    }

    /// The backend type whose builds this target constrains.
    pub fn backend(&self) -> BackendType {
        match self {
            Target::Cuda(_) => BackendType::Cuda,
            Target::Rocm(_) => BackendType::Rocm,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Cuda(capability) => write!(f, "CUDA capability {capability}"),
            Target::Rocm(arch) => write!(f, "ROCm arch {arch}"),
        }
    }
}

/// A declared CUDA arch: capability, suffix (`a` arch-specific, `f`
/// family-specific) and `+PTX`.
fn parse_cuda_arch(arch: &str) -> Option<(Capability, Option<char>, bool)> {
    let (arch, ptx) = match arch.strip_suffix("+PTX") {
        Some(rest) => (rest, true),
        None => (arch, false),
    };
    let (arch, suffix) = match arch.strip_suffix(['a', 'f']) {
        Some(rest) => (rest, arch.chars().last()),
        None => (arch, None),
    };
    let capability = arch.parse().ok()?;
    Some((capability, suffix, ptx))
}

/// Whether one declared CUDA arch supports `capability` (reference 0.17.2
/// `archs.py`); `None` when the arch is not in a known format.
///
/// ```
/// use kernels_types::fit::{cuda_arch_supports, Capability};
/// let h200 = Capability::new(9, 0);
/// assert_eq!(cuda_arch_supports("9.0a", h200), Some(true));
/// assert_eq!(cuda_arch_supports("8.0", h200), Some(false));
/// assert_eq!(cuda_arch_supports("8.0+PTX", h200), Some(true));
/// assert_eq!(cuda_arch_supports("10.0f", Capability::new(10, 3)), Some(true));
/// assert_eq!(cuda_arch_supports("sm_90", h200), None);
/// ```
pub fn cuda_arch_supports(arch: &str, capability: Capability) -> Option<bool> {
    let (declared, suffix, ptx) = parse_cuda_arch(arch)?;
    let same_family = capability.major == declared.major && capability.minor >= declared.minor;
    Some(match suffix {
        Some('a') => capability == declared,
        Some(_) => same_family,
        None if ptx => capability >= declared,
        None => same_family,
    })
}

/// Whether a build declaring `archs` supports `capability`: any arch does,
/// or none of them parses.
pub fn cuda_archs_support(archs: &[String], capability: Capability) -> bool {
    let verdicts: Vec<Option<bool>> = archs
        .iter()
        .map(|arch| cuda_arch_supports(arch, capability))
        .collect();
    verdicts.iter().all(Option::is_none) || verdicts.contains(&Some(true))
}

/// What a check knows besides the metadata; the default checks nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct FitContext<'a> {
    /// The GPUs the variant must run on (empty: archs not checked).
    pub targets: &'a [Target],
    /// The target runtime's release (`None`: `kernels-minver` not checked).
    pub runtime: Option<KernelsVersion>,
    /// For each module of the allow-list, whether the project's interpreter
    /// imports it (`None`: the interpreter was not asked, importability not
    /// checked).
    pub modules: Option<&'a BTreeMap<String, bool>>,
}

/// A reason the target runtime would refuse to load a variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `backend.archs` does not support a target.
    #[error("{target} is not supported by the architectures of the build: {}", archs.join(", "))]
    Arch {
        /// The target it does not support.
        target: Target,
        /// `backend.archs` as written.
        archs: Vec<String>,
    },
    /// `kernels-minver` is above the target runtime.
    #[error("the build requires kernels>={required}, but the target runtime is kernels {runtime}")]
    Minver {
        /// `kernels-minver`.
        required: KernelsVersion,
        /// The target runtime's release.
        runtime: KernelsVersion,
    },
    /// A `python-depends` name the runtime's allow-list lacks for the backend.
    #[error("python dependency `{name}` is not one the runtime allows for {backend} builds")]
    DependencyNotAllowed {
        /// The name as listed.
        name: String,
        /// The build's backend.
        backend: String,
    },
    /// A `python-depends` package whose module the project's Python cannot import.
    #[error(
        "python dependency `{name}` is not installed (module `{module}` of package `{package}` is not importable)"
    )]
    DependencyMissing {
        /// The name as listed.
        name: String,
        /// The package to install.
        package: String,
        /// The module that was looked for.
        module: String,
    },
    /// A compiled file of the variant that a declared image could not load:
    /// a symbol version above its glibc, a macOS minimum above its macOS, a
    /// file of another architecture, or no shared object at all.
    #[error("`{file}` {problem}")]
    Abi {
        /// The file's path inside the variant directory.
        file: String,
        /// What it needs or is, with the target and what would fit.
        problem: String,
    },
}

impl Refusal {
    /// The rule's short name, as JSON and summaries use it: `archs`,
    /// `kernels-minver`, `python-depends` or `abi`.
    pub fn rule(&self) -> &'static str {
        match self {
            Refusal::Arch { .. } => "archs",
            Refusal::Minver { .. } => "kernels-minver",
            Refusal::DependencyNotAllowed { .. } | Refusal::DependencyMissing { .. } => {
                "python-depends"
            }
            Refusal::Abi { .. } => "abi",
        }
    }
}

/// The first runtime that refuses a variant whose `kernels-minver` is above
/// it (0.17.2 `validate.py`); 0.16.2 only warns (`minver.py`).
pub const MINVER_REFUSED_FROM: KernelsVersion = KernelsVersion {
    major: 0,
    minor: 17,
    patch: 0,
};

/// Something the runtime warns about when loading a variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitWarning {
    /// `kernels-minver` is above a target runtime before
    /// [`MINVER_REFUSED_FROM`], which loads the variant with a warning.
    #[error(
        "the build asks for kernels>={required}; the target runtime kernels {runtime} loads it with a warning"
    )]
    Minver {
        /// `kernels-minver` as written (trimmed; any form
        /// [`LegacyVersion`] reads).
        required: String,
        /// The target runtime's release.
        runtime: KernelsVersion,
    },
    /// `provenance` marks the builder or the kernel source dirty.
    #[error("the build was made from uncommitted sources ({})", sources.join(", "))]
    Dirty {
        /// `kernel-builder` and/or `kernel`.
        sources: Vec<&'static str>,
    },
}

/// The verdict of [`check`] on one variant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fit {
    /// Why the runtime would refuse it; empty when it fits.
    pub refusals: Vec<Refusal>,
    /// What the runtime would warn about.
    pub warnings: Vec<FitWarning>,
}

impl Fit {
    /// Whether no rule refuses the variant.
    pub fn fits(&self) -> bool {
        self.refusals.is_empty()
    }
}

/// Checks one variant's metadata against `context` (see the module docs).
pub fn check(metadata: &Metadata, context: &FitContext<'_>) -> Fit {
    let mut fit = Fit::default();
    if let Some(backend) = &metadata.backend {
        fit.refusals.extend(arch_refusals(
            &backend.kind,
            &backend.archs,
            context.targets,
        ));
    }
    match context.runtime {
        // Before 0.17 the value is read as `minver.py` reads it, for a
        // warning; one it cannot read is ignored.
        Some(runtime) if runtime < MINVER_REFUSED_FROM => {
            if let Some(text) = metadata.kernels_minver_text.as_deref()
                && LegacyVersion::parse(text).is_some_and(|v| v > runtime.into())
            {
                fit.warnings.push(FitWarning::Minver {
                    required: text.trim().to_owned(),
                    runtime,
                });
            }
        }
        Some(runtime) => {
            if let Some(required) = metadata.kernels_minver
                && required > runtime
            {
                fit.refusals.push(Refusal::Minver { required, runtime });
            }
        }
        None => {}
    }
    fit.refusals.extend(dependency_refusals(metadata, context));
    if let Some(provenance) = &metadata.provenance {
        let mut sources = Vec::new();
        let builder_dirty = provenance
            .kernel_builder
            .as_ref()
            .and_then(|b| b.git.as_ref())
            .is_some_and(|g| g.dirty);
        if builder_dirty {
            sources.push("kernel-builder");
        }
        if provenance.kernel.as_ref().is_some_and(|k| k.dirty) {
            sources.push("kernel");
        }
        if !sources.is_empty() {
            fit.warnings.push(FitWarning::Dirty { sources });
        }
    }
    fit
}

/// The targets of `kind`'s backend that `archs` does not support.
pub fn arch_refusals(kind: &BackendType, archs: &[String], targets: &[Target]) -> Vec<Refusal> {
    if archs.is_empty() {
        return Vec::new();
    }
    let refused = |target: &Target| match (kind, target) {
        (BackendType::Cuda, Target::Cuda(capability)) => !cuda_archs_support(archs, *capability),
        // The runtime strips feature flags from the device's arch only, and
        // looks the result up among the build's archs as written.
        (BackendType::Rocm, Target::Rocm(arch)) => !archs.iter().any(|a| a == arch),
        _ => false,
    };
    targets
        .iter()
        .filter(|target| refused(target))
        .map(|target| Refusal::Arch {
            target: target.clone(),
            archs: archs.to_vec(),
        })
        .collect()
}

fn dependency_refusals(metadata: &Metadata, context: &FitContext<'_>) -> Vec<Refusal> {
    let backend = metadata
        .backend
        .as_ref()
        .map_or(BackendType::Cpu, |b| b.kind.clone());
    let names = metadata.python_depends.iter().chain(
        metadata
            .python_depends_backends
            .get(&backend)
            .into_iter()
            .flatten(),
    );
    let mut refusals = Vec::new();
    for name in names {
        match python_depends::lookup(name, backend.as_str()) {
            None => refusals.push(Refusal::DependencyNotAllowed {
                name: name.clone(),
                backend: backend.to_string(),
            }),
            Some(dependency) => {
                let missing = dependency
                    .module
                    .zip(context.modules)
                    .and_then(|(module, found)| {
                        (!found.get(module).copied().unwrap_or(false)).then_some(module)
                    });
                if let Some(module) = missing {
                    refusals.push(Refusal::DependencyMissing {
                        name: name.clone(),
                        package: dependency.package.to_owned(),
                        module: module.to_owned(),
                    });
                }
            }
        }
    }
    refusals.dedup();
    refusals
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(json: &str) -> Metadata {
        json.parse().unwrap()
    }

    #[test]
    fn arch_rules_match_the_runtime() {
        let cap = Capability::new;
        for (arch, capability, expected) in [
            ("9.0", cap(9, 0), Some(true)),
            ("9.0", cap(9, 1), Some(true)),
            ("9.0", cap(10, 0), Some(false)),
            ("9.0a", cap(9, 0), Some(true)),
            ("9.0a", cap(9, 1), Some(false)),
            ("10.0f", cap(10, 3), Some(true)),
            ("10.0f", cap(12, 0), Some(false)),
            ("8.0+PTX", cap(12, 0), Some(true)),
            ("8.6+PTX", cap(8, 0), Some(false)),
            ("9.0a+PTX", cap(10, 0), Some(false)),
            ("sm_90", cap(9, 0), None),
            ("9", cap(9, 0), None),
            ("", cap(9, 0), None),
        ] {
            assert_eq!(
                cuda_arch_supports(arch, capability),
                expected,
                "{arch} on {capability}"
            );
        }
        let archs = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(cuda_archs_support(
            &archs(&["sm_90", "compute_90"]),
            cap(7, 0)
        ));
        assert!(!cuda_archs_support(&archs(&["sm_90", "8.0"]), cap(9, 0)));
        assert!(cuda_archs_support(
            &archs(&["7.5", "8.0", "9.0"]),
            cap(9, 0)
        ));
    }

    #[test]
    fn every_target_of_the_backend_is_checked() {
        let cuda = metadata(r#"{"backend": {"type": "cuda", "archs": ["9.0"]}}"#);
        let targets = [
            Target::Cuda(Capability::new(9, 0)),
            Target::Cuda(Capability::new(10, 0)),
            Target::rocm("gfx942").unwrap(),
        ];
        let fit = check(
            &cuda,
            &FitContext {
                targets: &targets,
                ..FitContext::default()
            },
        );
        assert_eq!(
            fit.refusals,
            [Refusal::Arch {
                target: Target::Cuda(Capability::new(10, 0)),
                archs: vec!["9.0".into()],
            }]
        );
        let rocm = metadata(r#"{"backend": {"type": "rocm", "archs": ["gfx90a", "gfx942"]}}"#);
        let context = FitContext {
            targets: &targets,
            ..FitContext::default()
        };
        assert!(check(&rocm, &context).fits());
        // Flags on the build's arch: no device matches it (the runtime strips
        // them from the device's name only).
        let flagged =
            metadata(r#"{"backend": {"type": "rocm", "archs": ["gfx90a:xnack+", "gfx942"]}}"#);
        let mi200 = [Target::rocm("gfx90a:sramecc+:xnack-").unwrap()];
        let on_mi200 = FitContext {
            targets: &mi200,
            ..FitContext::default()
        };
        assert!(check(&rocm, &on_mi200).fits());
        let refusals = check(&flagged, &on_mi200).refusals;
        assert!(
            matches!(&refusals[..], [Refusal::Arch { target: Target::Rocm(a), .. }] if a == "gfx90a"),
            "{refusals:?}"
        );
        let no_archs = metadata(r#"{"backend": {"type": "cuda"}}"#);
        assert!(check(&no_archs, &context).fits());
    }

    #[test]
    fn minver_against_the_target_runtime() {
        let m = metadata(r#"{"kernels-minver": "0.18.0"}"#);
        let runtime = |v: &str| Some(v.parse::<KernelsVersion>().unwrap());
        let at = |v| {
            check(
                &m,
                &FitContext {
                    runtime: runtime(v),
                    ..FitContext::default()
                },
            )
        };
        assert!(at("0.18.0").fits());
        assert_eq!(
            at("0.17.2").refusals[0].to_string(),
            "the build requires kernels>=0.18.0, but the target runtime is kernels 0.17.2"
        );
        // 0.16.2 only warns (`minver.py`).
        let old = at("0.16.2");
        assert!(old.fits());
        assert_eq!(
            old.warnings[0].to_string(),
            "the build asks for kernels>=0.18.0; the target runtime kernels 0.16.2 loads it with a warning"
        );
        assert!(check(&m, &FitContext::default()).fits());
    }

    #[test]
    fn python_depends_against_the_allow_list_and_the_interpreter() {
        let m = metadata(
            r#"{"python-depends": ["einops", "not-installed-pkg"],
                "python-depends-backends": {"cuda": ["nvidia-cutlass-dsl"], "xpu": ["onednn"]},
                "backend": {"type": "cuda"}}"#,
        );
        let fit = check(&m, &FitContext::default());
        assert_eq!(fit.refusals.len(), 1);
        assert_eq!(fit.refusals[0].rule(), "python-depends");
        assert_eq!(
            fit.refusals[0].to_string(),
            "python dependency `not-installed-pkg` is not one the runtime allows for cuda builds"
        );
        let modules: BTreeMap<String, bool> =
            [("einops".to_owned(), true), ("cutlass".to_owned(), false)].into();
        let fit = check(
            &m,
            &FitContext {
                modules: Some(&modules),
                ..FitContext::default()
            },
        );
        assert_eq!(fit.refusals.len(), 2);
        assert!(matches!(
            &fit.refusals[1],
            Refusal::DependencyMissing { package, .. } if package == "nvidia-cutlass-dsl"
        ));
    }

    #[test]
    fn dirty_provenance_is_a_warning() {
        let m = metadata(
            r#"{"provenance": {"kernel-builder": {"version": "0.17.0", "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false},
                "kernel": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": true}}}"#,
        );
        let fit = check(&m, &FitContext::default());
        assert!(fit.fits());
        assert_eq!(
            fit.warnings,
            [FitWarning::Dirty {
                sources: vec!["kernel"]
            }]
        );
    }

    #[test]
    fn targets_parse_strictly() {
        assert_eq!(
            "10.0".parse::<Capability>().unwrap(),
            Capability::new(10, 0)
        );
        assert!("9".parse::<Capability>().is_err());
        assert!("9.0a".parse::<Capability>().is_err());
        assert_eq!(
            Target::rocm("gfx90a:sramecc+:xnack-").unwrap(),
            Target::Rocm("gfx90a".into())
        );
        assert!(Target::rocm("mi300").is_err());
    }
}
