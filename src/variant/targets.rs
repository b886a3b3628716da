//! The fit policy of a command: the GPUs a project's kernels must run on
//! ([`Targets`]) and what else the runtime's load-time rules need
//! ([`FitPolicy`]), checked by [`kernels_types::fit::check`].
//!
//! Targets come from the first of: `--cuda-capability` / `--rocm-arch` flags,
//! `[tool.kernels] cuda-capabilities` / `rocm-archs` of `pyproject.toml`, the
//! GPU torch sees in the project's Python (as the 0.17.2 runtime reads it at
//! load). Without any of them the arch rule is not checked, and commands say
//! so once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use kernels_types::fit::{Capability, FitContext, Target};
use kernels_types::metadata::KernelsVersion;

use super::environment::Device;
use crate::lock::profile::RuntimeVersion;

/// Where [`Targets::list`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSource {
    /// `--cuda-capability` / `--rocm-arch`.
    Flags,
    /// `[tool.kernels]` of this `pyproject.toml`.
    Manifest(PathBuf),
    /// The GPU torch sees in the project's Python.
    Device {
        /// `torch.cuda.get_device_name()`.
        name: String,
    },
    /// None: the arch rule is not checked.
    NotChecked(NotChecked),
}

/// Why no target is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotChecked {
    /// The project's Python was asked and torch sees no GPU.
    NoGpu,
    /// Querying the GPU failed (the Python exception).
    QueryFailed(String),
    /// The project's Python was not asked (variants were named, or the
    /// environment was given with flags).
    NotAsked,
}

/// The GPUs the project's kernels must run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// The targets, CUDA then ROCm, in the order given; empty when
    /// [`Targets::source`] is [`TargetSource::NotChecked`].
    pub list: Vec<Target>,
    /// Where they came from.
    pub source: TargetSource,
}

impl Targets {
    /// No targets, because the project's Python was not asked.
    pub fn not_asked() -> Targets {
        Targets {
            list: Vec::new(),
            source: TargetSource::NotChecked(NotChecked::NotAsked),
        }
    }

    /// The targets of a command: `flags` when any, else the manifest's
    /// (`[tool.kernels]` targets with the path of its `pyproject.toml`) when
    /// any, else the visible GPU of `device` (`None`: Python was not asked).
    pub fn resolve(
        flags: &[Target],
        manifest: Option<(&[Target], &Path)>,
        device: Option<&Device>,
    ) -> Targets {
        if !flags.is_empty() {
            return Targets {
                list: flags.to_vec(),
                source: TargetSource::Flags,
            };
        }
        if let Some((list, path)) = manifest.filter(|(list, _)| !list.is_empty()) {
            return Targets {
                list: list.to_vec(),
                source: TargetSource::Manifest(path.to_owned()),
            };
        }
        let (list, source) = match device {
            None => (Vec::new(), TargetSource::NotChecked(NotChecked::NotAsked)),
            Some(Device::None) => (Vec::new(), TargetSource::NotChecked(NotChecked::NoGpu)),
            Some(Device::Error { error }) => (
                Vec::new(),
                TargetSource::NotChecked(NotChecked::QueryFailed(error.clone())),
            ),
            Some(Device::Cuda { name, capability }) => (
                vec![Target::Cuda(Capability::new(capability.0, capability.1))],
                TargetSource::Device { name: name.clone() },
            ),
            Some(Device::Rocm { name, arch }) => (
                vec![Target::Rocm(arch.clone())],
                TargetSource::Device { name: name.clone() },
            ),
        };
        Targets { list, source }
    }

    /// Whether the arch rule is checked.
    pub fn is_checked(&self) -> bool {
        !self.list.is_empty()
    }
}

impl fmt::Display for Targets {
    /// `CUDA capability 9.0, CUDA capability 10.0 (from --cuda-capability)`,
    /// `CUDA capability 9.0 (NVIDIA H200, the GPU torch sees)` or
    /// `not checked (torch sees no GPU)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let TargetSource::NotChecked(why) = &self.source {
            let why = match why {
                NotChecked::NoGpu => "torch sees no GPU".to_owned(),
                NotChecked::QueryFailed(error) => format!("querying the GPU failed: {error}"),
                NotChecked::NotAsked => "no GPU was asked for".to_owned(),
            };
            return write!(
                f,
                "not checked ({why}; name them with `cuda-capabilities`/`rocm-archs` in [tool.kernels] or --cuda-capability/--rocm-arch)"
            );
        }
        let list: Vec<String> = self.list.iter().map(Target::to_string).collect();
        let source = match &self.source {
            TargetSource::Flags => "from --cuda-capability/--rocm-arch".to_owned(),
            TargetSource::Manifest(path) => format!("from [tool.kernels] of {}", path.display()),
            TargetSource::Device { name } => format!("{name}, the GPU torch sees"),
            TargetSource::NotChecked(_) => unreachable!("handled above"),
        };
        write!(f, "{} ({source})", list.join(", "))
    }
}

/// What the fit rules of a command check against: the targets, the target
/// runtime's release (for `kernels-minver`) and, when the project's Python
/// was asked, which allow-listed modules it imports (for `python-depends`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitPolicy {
    /// The GPUs.
    pub targets: Targets,
    /// The target runtime's release, `None` when unknown.
    pub runtime: Option<KernelsVersion>,
    /// Module name → importable, from the probe of the project's Python.
    pub modules: Option<BTreeMap<String, bool>>,
    /// The images every compiled file of a chosen variant must load on
    /// (`manylinux`, `macos-min`, `--manylinux`; [`crate::abi`]); empty:
    /// the ABI is not checked.
    pub images: Vec<crate::abi::ImageTarget>,
}

impl FitPolicy {
    /// A policy that checks only what metadata alone decides (the
    /// `python-depends` allow-list): no targets, runtime or interpreter.
    pub fn unchecked() -> FitPolicy {
        FitPolicy {
            targets: Targets::not_asked(),
            runtime: None,
            modules: None,
            images: Vec::new(),
        }
    }

    /// The target runtime's release as `kernels-minver` compares it.
    pub fn runtime_release(version: RuntimeVersion) -> KernelsVersion {
        KernelsVersion {
            major: version.major,
            minor: version.minor,
            patch: version.patch,
        }
    }

    /// The context [`kernels_types::fit::check`] takes.
    pub fn context(&self) -> FitContext<'_> {
        FitContext {
            targets: &self.targets.list,
            runtime: self.runtime,
            modules: self.modules.as_ref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_then_manifest_then_device() {
        let nine = [Target::Cuda(Capability::new(9, 0))];
        let ten = [Target::Cuda(Capability::new(10, 0))];
        let h200 = Device::Cuda {
            name: "NVIDIA H200".into(),
            capability: (9, 0),
        };
        let path = Path::new("pyproject.toml");
        let flags = Targets::resolve(&ten, Some((&nine, path)), Some(&h200));
        assert_eq!(
            (flags.list.as_slice(), &flags.source),
            (&ten[..], &TargetSource::Flags)
        );
        let manifest = Targets::resolve(&[], Some((&ten, path)), Some(&h200));
        assert_eq!(manifest.list, ten);
        assert_eq!(
            manifest.to_string(),
            "CUDA capability 10.0 (from [tool.kernels] of pyproject.toml)"
        );
        let device = Targets::resolve(&[], Some((&[], path)), Some(&h200));
        assert_eq!(device.list, nine);
        assert_eq!(
            device.to_string(),
            "CUDA capability 9.0 (NVIDIA H200, the GPU torch sees)"
        );
        let none = Targets::resolve(&[], None, Some(&Device::None));
        assert!(!none.is_checked());
        assert!(
            none.to_string()
                .starts_with("not checked (torch sees no GPU;")
        );
        let failed = Targets::resolve(
            &[],
            None,
            Some(&Device::Error {
                error: "RuntimeError: no driver".into(),
            }),
        );
        assert_eq!(
            failed.source,
            TargetSource::NotChecked(NotChecked::QueryFailed("RuntimeError: no driver".into()))
        );
    }
}
