//! Build-variant directory names (`build/<variant>/` in a kernel repository).
//!
//! A kernel repository holds one directory per build under `build/`. The
//! directory name encodes what the build was compiled for:
//!
//! | kind | shape | example |
//! |---|---|---|
//! | Torch arch | `torch{MAJ}{MIN}[-cxx11\|-cxx98]-{compute}-{cpu}-{os}` | `torch27-cxx11-cu126-x86_64-linux` |
//! | Torch stable ABI | `torch-stable-abi{MAJ}{MIN}-{compute}-{cpu}-{os}` | `torch-stable-abi29-cu126-x86_64-linux` |
//! | tvm-ffi arch | `tvm-ffi{MAJ}{MIN}-{compute}-{cpu}-{os}` | `tvm-ffi01-cu128-x86_64-linux` |
//! | noarch | `torch-{backend}` | `torch-cuda` |
//! | universal (legacy) | `torch-universal` | `torch-universal` |
//!
//! Reference 0.19 reads a second, dotted grammar beside this one (module
//! `dotted`): `torch-2.12-cxx11-cuda-12.8-cpython-3.9-abi3-x86_64-linux`,
//! `torch-stable-abi-2.11-…`, `tvm-ffi-0.1-…`, `mlx-metal`, `sdk`,
//! `sdk-<backend>`, `sdk-[<backend>-X.Y-]cpython-X.Y-<abi>-<cpu>-<os>`, and
//! Ascend's noarch `torch-cann`. [`BuildVariant::parse`] reads both; an arch
//! name says which in [`ArchVariant::grammar`], and legacy names imply the
//! Python part `cpython-3.9-abi3` ([`PythonTag::LEGACY`]). Which runtime
//! reads which names is the ranking's business (the `kernels` crate).
//!
//! Version digits are written without a dot. For frameworks (`torch`,
//! `torch-stable-abi`, `tvm-ffi`) the **first** digit is the major version
//! (`torch210` is Torch 2.10, `tvm-ffi01` is 0.1); for compute backends the
//! **last** digit is the minor version (`cu130` is CUDA 13.0, `xpu20253` is
//! oneAPI 2025.3). Both rules match the regular expressions of the reference
//! parser (`kernels` 0.13+, `variants.py`).
//!
//! # Strict and lenient views
//!
//! [`BuildVariant::parse`] never fails: a name it does not recognise becomes
//! [`VariantKind::Unknown`] and keeps its text. The parse is **strict**: the
//! noarch backend must be one the builders produce (`cpu`, `cuda`, `metal`,
//! `rocm`, `xpu`, `npu`, `neuron`, `tpu`), the cxx tag must be `cxx11` or
//! `cxx98`, the CPU `x86_64` or `aarch64` and the OS `linux`, `darwin` or
//! `windows`. So the stray `torch-ext` directory found in real repositories is
//! [`VariantKind::Unknown`] and [`BuildVariant::is_known`] is `false`.
//!
//! The reference parser (0.13+) is laxer: it treats *every* `torch-<rest>` name
//! as noarch with backend `<rest>` (including `torch-universal` and
//! `torch-ext`). Code that must reproduce which directories the reference
//! considers (for example when it lists or locks variants) uses
//! [`BuildVariant::lenient_noarch_backend`].
//!
//! ```
//! use kernels_types::variant_name::{Backend, BuildVariant, CxxAbi, Framework, Os, VariantKind};
//!
//! let v = BuildVariant::parse("torch210-cxx11-rocm71-x86_64-linux");
//! let arch = v.arch().unwrap();
//! assert_eq!(arch.framework, Framework::Torch((2, 10).into()));
//! assert_eq!(arch.cxx_abi, Some(CxxAbi::Cxx11));
//! assert_eq!(arch.backend, Backend::Rocm((7, 1).into()));
//! assert_eq!(arch.os, Os::Linux);
//! assert_eq!(v.to_string(), "torch210-cxx11-rocm71-x86_64-linux");
//!
//! let junk = BuildVariant::parse("torch-ext");
//! assert!(!junk.is_known());
//! assert_eq!(junk.kind(), &VariantKind::Unknown);
//! assert_eq!(junk.lenient_noarch_backend(), Some("ext"));
//! ```

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

mod dotted;

/// What [`BuildVariant::problem`] says of a name neither grammar reads.
const NOT_A_NAME: &str = "not a build-variant name";

/// A `major.minor` version read from concatenated digits in a variant name.
///
/// ```
/// use kernels_types::variant_name::MinorVersion;
/// let v = MinorVersion::new(13, 0);
/// assert_eq!(v.to_string(), "13.0");
/// assert_eq!(v.digits(), "130");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MinorVersion {
    /// Major component.
    pub major: u32,
    /// Minor component.
    pub minor: u32,
}

impl MinorVersion {
    /// A version from its two components.
    pub const fn new(major: u32, minor: u32) -> Self {
        MinorVersion { major, minor }
    }

    /// The digits as they appear in a variant name (`2.10` → `210`).
    pub fn digits(&self) -> String {
        format!("{}{}", self.major, self.minor)
    }

    /// Splits digits where the major version is the first digit
    /// (`210` → 2.10, `01` → 0.1), the rule for framework versions.
    fn from_digits_major_first(digits: &str) -> Option<Self> {
        Self::split_at(digits, 1)
    }

    /// Splits digits where the minor version is the last digit
    /// (`130` → 13.0, `20253` → 2025.3), the rule for compute backends.
    fn from_digits_minor_last(digits: &str) -> Option<Self> {
        Self::split_at(digits, digits.len().checked_sub(1)?)
    }

    fn split_at(digits: &str, at: usize) -> Option<Self> {
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(at);
        Some(MinorVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }
}

impl From<(u32, u32)> for MinorVersion {
    fn from((major, minor): (u32, u32)) -> Self {
        MinorVersion { major, minor }
    }
}

impl fmt::Display for MinorVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The framework an arch variant was compiled against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framework {
    /// `torch{MAJ}{MIN}`: one Torch minor series only.
    Torch(MinorVersion),
    /// `torch-stable-abi{MAJ}{MIN}`: the Torch stable ABI, usable with this
    /// Torch version or any later one (reference 0.15+).
    TorchStableAbi(MinorVersion),
    /// `tvm-ffi{MAJ}{MIN}`: Apache TVM FFI of this minor series (reference 0.13+).
    TvmFfi(MinorVersion),
}

impl Framework {
    /// The framework version (`torch210` → 2.10).
    pub fn version(&self) -> MinorVersion {
        match self {
            Framework::Torch(v) | Framework::TorchStableAbi(v) | Framework::TvmFfi(v) => *v,
        }
    }
}

/// The C++ ABI tag of a Linux Torch build (`cxx11` or `cxx98`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CxxAbi {
    /// `cxx11`: built with `_GLIBCXX_USE_CXX11_ABI=1`.
    Cxx11,
    /// `cxx98`: built with the pre-C++11 ABI.
    Cxx98,
}

impl CxxAbi {
    /// The tag as written in variant names.
    pub fn as_str(&self) -> &'static str {
        match self {
            CxxAbi::Cxx11 => "cxx11",
            CxxAbi::Cxx98 => "cxx98",
        }
    }
}

/// The compute backend of an arch variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// `cu{MAJ}{MIN}`: CUDA (`cu118` = 11.8, `cu130` = 13.0).
    Cuda(MinorVersion),
    /// `rocm{MAJ}{MIN}`: ROCm (`rocm63` = 6.3).
    Rocm(MinorVersion),
    /// `xpu{YYYY}{N}`: Intel oneAPI (`xpu20253` = 2025.3); `None` for the bare
    /// `xpu` tag that reference 0.8.1–0.10.0 used.
    Xpu(Option<MinorVersion>),
    /// `cann{MAJ}{MIN}`: Huawei Ascend CANN.
    Cann(MinorVersion),
    /// `cpu`.
    Cpu,
    /// `metal`: Apple Metal.
    Metal,
    /// `neuron`: AWS Neuron.
    Neuron,
    /// `tpu`: Google TPU.
    Tpu,
}

impl Backend {
    fn parse(s: &str) -> Option<Self> {
        let versioned = |prefix: &str| {
            s.strip_prefix(prefix)
                .and_then(MinorVersion::from_digits_minor_last)
        };
        Some(match s {
            "cpu" => Backend::Cpu,
            "metal" => Backend::Metal,
            "neuron" => Backend::Neuron,
            "tpu" => Backend::Tpu,
            "xpu" => Backend::Xpu(None),
            _ => {
                if let Some(v) = versioned("cu") {
                    Backend::Cuda(v)
                } else if let Some(v) = versioned("rocm") {
                    Backend::Rocm(v)
                } else if let Some(v) = versioned("xpu") {
                    Backend::Xpu(Some(v))
                } else if let Some(v) = versioned("cann") {
                    Backend::Cann(v)
                } else {
                    return None;
                }
            }
        })
    }

    /// The backend version, when the tag carries one.
    pub fn version(&self) -> Option<MinorVersion> {
        match self {
            Backend::Cuda(v) | Backend::Rocm(v) | Backend::Cann(v) => Some(*v),
            Backend::Xpu(v) => *v,
            Backend::Cpu | Backend::Metal | Backend::Neuron | Backend::Tpu => None,
        }
    }

    /// The backend as the dotted grammar (reference 0.19) writes it:
    /// `cuda-12.8`, `rocm-7.2`, `xpu-2025.3`, `cann-8.2`, or the family name
    /// of a versionless backend (`cpu`, `metal`, `neuron`, `tpu`, bare `xpu`).
    ///
    /// ```
    /// use kernels_types::variant_name::{Backend, MinorVersion};
    /// assert_eq!(Backend::Cuda(MinorVersion::new(12, 8)).dotted(), "cuda-12.8");
    /// assert_eq!(Backend::Cpu.dotted(), "cpu");
    /// ```
    pub fn dotted(&self) -> String {
        match self.version() {
            Some(v) => format!("{}-{v}", self.family()),
            None => self.family().to_owned(),
        }
    }

    /// The backend family without version (`cuda`, `rocm`, `xpu`, `cann`,
    /// `cpu`, `metal`, `neuron`, `tpu`).
    pub fn family(&self) -> &'static str {
        match self {
            Backend::Cuda(_) => "cuda",
            Backend::Rocm(_) => "rocm",
            Backend::Xpu(_) => "xpu",
            Backend::Cann(_) => "cann",
            Backend::Cpu => "cpu",
            Backend::Metal => "metal",
            Backend::Neuron => "neuron",
            Backend::Tpu => "tpu",
        }
    }
}

/// The canonical compute tag (`cu126`, `rocm71`, `xpu20253`, `xpu`, `cpu`, …).
impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match self {
            Backend::Cuda(_) => "cu",
            Backend::Rocm(_) => "rocm",
            Backend::Xpu(_) => "xpu",
            Backend::Cann(_) => "cann",
            other => return f.write_str(other.family()),
        };
        match self.version() {
            Some(v) => write!(f, "{prefix}{}", v.digits()),
            None => f.write_str(prefix),
        }
    }
}

/// The backend of a noarch (`torch-<backend>`) variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoarchBackend {
    /// `torch-cpu`.
    Cpu,
    /// `torch-cuda`.
    Cuda,
    /// `torch-metal`.
    Metal,
    /// `torch-rocm`.
    Rocm,
    /// `torch-xpu`.
    Xpu,
    /// `torch-npu` (Ascend up to reference 0.18: the CANN backend maps to it).
    Npu,
    /// `torch-cann` (Ascend from reference 0.19).
    Cann,
    /// `torch-neuron` (reference 0.12.2+).
    Neuron,
    /// `torch-tpu` (reference 0.17).
    Tpu,
}

impl NoarchBackend {
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "cpu" => NoarchBackend::Cpu,
            "cuda" => NoarchBackend::Cuda,
            "metal" => NoarchBackend::Metal,
            "rocm" => NoarchBackend::Rocm,
            "xpu" => NoarchBackend::Xpu,
            "npu" => NoarchBackend::Npu,
            "cann" => NoarchBackend::Cann,
            "neuron" => NoarchBackend::Neuron,
            "tpu" => NoarchBackend::Tpu,
            _ => return None,
        })
    }

    /// The backend as written after `torch-`.
    pub fn as_str(&self) -> &'static str {
        match self {
            NoarchBackend::Cpu => "cpu",
            NoarchBackend::Cuda => "cuda",
            NoarchBackend::Metal => "metal",
            NoarchBackend::Rocm => "rocm",
            NoarchBackend::Xpu => "xpu",
            NoarchBackend::Npu => "npu",
            NoarchBackend::Cann => "cann",
            NoarchBackend::Neuron => "neuron",
            NoarchBackend::Tpu => "tpu",
        }
    }
}

/// Which of the two naming grammars a name is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    /// Concatenated version digits, no Python part
    /// (`torch212-cxx11-cu128-x86_64-linux`); every runtime reads it.
    Legacy,
    /// Dotted versions, spelled-out backend and a `cpython-X.Y-<abi>` part
    /// (`torch-2.12-cxx11-cuda-12.8-cpython-3.9-abi3-x86_64-linux`); read
    /// from reference 0.19 on.
    Dotted,
}

/// The Python ABI a compiled build targets (reference 0.19 `PythonAbi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PythonAbi {
    /// `abi3`: the stable ABI of Python builds with a GIL.
    Abi3,
    /// `abi3t`: the stable ABI of free-threaded Python 3.15 and newer (PEP
    /// 803), also loadable by GIL builds from 3.15.
    Abi3t,
}

impl PythonAbi {
    /// The tag as written in variant names.
    pub fn as_str(&self) -> &'static str {
        match self {
            PythonAbi::Abi3 => "abi3",
            PythonAbi::Abi3t => "abi3t",
        }
    }
}

/// The `cpython-X.Y-<abi>` part of a dotted name: the lowest Python version
/// the build loads on, and its ABI. Legacy names imply [`PythonTag::LEGACY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PythonTag {
    /// The minimum Python `major.minor`.
    pub min: MinorVersion,
    /// The Python ABI.
    pub abi: PythonAbi,
}

impl PythonTag {
    /// What a legacy name implies: `cpython-3.9-abi3`.
    pub const LEGACY: PythonTag = PythonTag {
        min: MinorVersion::new(3, 9),
        abi: PythonAbi::Abi3,
    };

    /// The lowest Python an `abi3t` build may name (3.15).
    pub const ABI3T_MIN: MinorVersion = MinorVersion::new(3, 15);
}

impl fmt::Display for PythonTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpython-{}-{}", self.min, self.abi.as_str())
    }
}

/// The CPU architecture of an arch variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cpu {
    /// `x86_64` (`AMD64` on Windows).
    X86_64,
    /// `aarch64` (`arm64` on macOS).
    Aarch64,
}

impl Cpu {
    /// The architecture as written in variant names.
    pub fn as_str(&self) -> &'static str {
        match self {
            Cpu::X86_64 => "x86_64",
            Cpu::Aarch64 => "aarch64",
        }
    }
}

/// The operating system of an arch variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Os {
    /// `linux`.
    Linux,
    /// `darwin` (macOS).
    Darwin,
    /// `windows`.
    Windows,
}

impl Os {
    /// The OS as written in variant names.
    pub fn as_str(&self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Darwin => "darwin",
            Os::Windows => "windows",
        }
    }
}

/// The parts of a compiled (arch) variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArchVariant {
    /// What the build links against, with its version.
    pub framework: Framework,
    /// The cxx tag; present on most Linux Torch builds, absent on macOS,
    /// Windows, stable-ABI, tvm-ffi and newer tagless Linux builds.
    pub cxx_abi: Option<CxxAbi>,
    /// The compute backend.
    pub backend: Backend,
    /// The Python part ([`PythonTag::LEGACY`] for legacy names).
    pub python: PythonTag,
    /// Which grammar the name is written in.
    pub grammar: Grammar,
    /// The CPU architecture.
    pub cpu: Cpu,
    /// The operating system.
    pub os: Os,
}

/// An SDK variant (reference 0.19): a build without a framework.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SdkVariant {
    /// `sdk`: for every backend, nothing compiled.
    Bare,
    /// `sdk-<backend>`: for one backend, nothing compiled.
    Backend(NoarchBackend),
    /// `sdk-cpython-X.Y-<abi>-<cpu>-<os>` (`backend` `None`: any backend) or
    /// `sdk-<backend>[-X.Y]-cpython-X.Y-<abi>-<cpu>-<os>`: compiled parts.
    Compiled {
        /// The backend, with its version where it has one.
        backend: Option<Backend>,
        /// The Python part.
        python: PythonTag,
        /// The CPU architecture.
        cpu: Cpu,
        /// The operating system.
        os: Os,
    },
}

/// What a build-variant name denotes, in the strict view (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VariantKind {
    /// A compiled build for one framework version, backend, CPU and OS.
    Arch(ArchVariant),
    /// A Python-only build for one backend (`torch-cuda`).
    Noarch(NoarchBackend),
    /// A Python-only MLX build without torch (`mlx-metal`, reference 0.19).
    Mlx(NoarchBackend),
    /// An SDK build (`sdk`, `sdk-cuda`, `sdk-cuda-12.8-cpython-…`, reference 0.19).
    Sdk(SdkVariant),
    /// The legacy Python-only build for every backend (`torch-universal`).
    Universal,
    /// Anything else, such as the stray `torch-ext`; the name is kept verbatim
    /// in [`BuildVariant::name`].
    Unknown,
}

/// A build-variant directory name together with its parsed meaning.
///
/// Parsing never fails and never rewrites the name: [`fmt::Display`] and
/// [`BuildVariant::name`] return the original text, whatever its kind.
///
/// ```
/// use kernels_types::variant_name::{Backend, BuildVariant, Cpu, Framework, Os};
///
/// let v: BuildVariant = "torch-stable-abi29-cu130-x86_64-linux".parse().unwrap();
/// let arch = v.arch().unwrap();
/// assert_eq!(arch.framework, Framework::TorchStableAbi((2, 9).into()));
/// assert_eq!(arch.backend, Backend::Cuda((13, 0).into()));
/// assert_eq!(arch.backend.version().unwrap().to_string(), "13.0");
/// assert_eq!((arch.cpu, arch.os), (Cpu::X86_64, Os::Linux));
/// assert_eq!(arch.cxx_abi, None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BuildVariant {
    name: String,
    kind: VariantKind,
}

impl BuildVariant {
    /// Parses a directory name in either grammar (legacy first, then the
    /// dotted one of reference 0.19). Unrecognised names become
    /// [`VariantKind::Unknown`]; [`BuildVariant::problem`] says why.
    pub fn parse(name: &str) -> Self {
        let kind = parse_kind(name)
            .or_else(|| dotted::parse(name).ok())
            .unwrap_or(VariantKind::Unknown);
        BuildVariant {
            name: name.to_owned(),
            kind,
        }
    }

    /// Why the name is [`VariantKind::Unknown`], in a few words (`None` for
    /// every other kind): for a name shaped like the dotted grammar the part
    /// that is wrong (an unknown Python ABI, a missing `cpython` part, …),
    /// else `not a build-variant name`.
    ///
    /// ```
    /// use kernels_types::variant_name::BuildVariant;
    /// let bad = BuildVariant::parse("torch-2.12-cuda-12.8-cpython-3.9-abi4-x86_64-linux");
    /// assert!(bad.problem().unwrap().contains("abi4"));
    /// assert_eq!(BuildVariant::parse("csrc").problem().unwrap(), "not a build-variant name");
    /// assert_eq!(BuildVariant::parse("sdk").problem(), None);
    /// ```
    pub fn problem(&self) -> Option<String> {
        if self.is_known() {
            return None;
        }
        Some(
            dotted::parse(&self.name)
                .err()
                .unwrap_or_else(|| NOT_A_NAME.to_owned()),
        )
    }

    /// The grammar of the name: [`Grammar::Dotted`] for dotted arch names,
    /// SDK and MLX variants and `torch-cann`, [`Grammar::Legacy`] for the
    /// rest (unknown names included).
    pub fn grammar(&self) -> Grammar {
        match &self.kind {
            VariantKind::Arch(arch) => arch.grammar,
            VariantKind::Mlx(_) | VariantKind::Sdk(_) => Grammar::Dotted,
            VariantKind::Noarch(NoarchBackend::Cann) => Grammar::Dotted,
            _ => Grammar::Legacy,
        }
    }

    /// Whether reference 0.19's parser (`variants.py` `parse_variant`) reads
    /// an `sdk…` or `mlx…` directory name, in its lax view (`sdk-<anything>`
    /// without a Python part is an SDK for backend `<anything>`; `mlx-<rest>`
    /// is an MLX noarch build when `<rest>` does not start with a digit).
    /// `false` for every other name; the lock closure of 0.19 follows the
    /// `kernel-depends` of these besides the `torch…`/`tvm-ffi…` ones.
    ///
    /// ```
    /// use kernels_types::variant_name::BuildVariant;
    /// let read = |n: &str| BuildVariant::parse(n).is_sdk_or_mlx_for_0_19();
    /// assert!(read("sdk") && read("sdk-cuda") && read("mlx-metal") && read("sdk-foo"));
    /// assert!(read("sdk-cuda-12.8-cpython-3.10-abi3-x86_64-linux"));
    /// assert!(!read("sdk-cuda-12.8") && !read("mlx-0.1-metal") && !read("torch-cuda"));
    /// ```
    pub fn is_sdk_or_mlx_for_0_19(&self) -> bool {
        if matches!(self.kind, VariantKind::Mlx(_) | VariantKind::Sdk(_)) {
            return true;
        }
        let parts: Vec<&str> = self.name.split('-').collect();
        match parts.as_slice() {
            ["sdk", rest @ ..] => rest.len() <= 1 && !rest.contains(&"cpython"),
            ["mlx", first, ..] => !first.starts_with(|c: char| c.is_ascii_digit()),
            _ => false,
        }
    }

    /// The directory name, exactly as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the name denotes.
    pub fn kind(&self) -> &VariantKind {
        &self.kind
    }

    /// Whether the name follows the grammar (any kind but [`VariantKind::Unknown`]).
    pub fn is_known(&self) -> bool {
        self.kind != VariantKind::Unknown
    }

    /// The parts of a compiled variant, `None` for noarch, universal and unknown names.
    pub fn arch(&self) -> Option<&ArchVariant> {
        match &self.kind {
            VariantKind::Arch(arch) => Some(arch),
            _ => None,
        }
    }

    /// The noarch backend as the reference parser (0.13+) reads it: the text
    /// after `torch-` for every `torch-<rest>` name that is not a stable-ABI
    /// variant. This includes `universal` and junk such as `ext`; the strict
    /// view is [`VariantKind::Noarch`].
    ///
    /// ```
    /// use kernels_types::variant_name::BuildVariant;
    /// assert_eq!(BuildVariant::parse("torch-cuda").lenient_noarch_backend(), Some("cuda"));
    /// assert_eq!(BuildVariant::parse("torch-universal").lenient_noarch_backend(), Some("universal"));
    /// assert_eq!(BuildVariant::parse("torch27-cxx11-cu126-x86_64-linux").lenient_noarch_backend(), None);
    /// ```
    pub fn lenient_noarch_backend(&self) -> Option<&str> {
        if matches!(
            self.kind,
            VariantKind::Arch(ArchVariant {
                framework: Framework::TorchStableAbi(_),
                ..
            })
        ) {
            return None;
        }
        self.name.strip_prefix("torch-")
    }

    /// The backend name the reference 0.17.2 variant parser (`variants.py`
    /// `parse_variant`) reads from this name, `None` where that parser rejects
    /// the name (the reference then skips it with a warning). That parser is
    /// laxer than [`BuildVariant::parse`] about the CPU and OS of an arch
    /// variant (any text), and about noarch names (everything after `torch-`);
    /// stricter about the bare `xpu` tag and a cxx tag on tvm-ffi builds. The
    /// family names are those of [`Backend::family`]: `cuda`, `rocm`, `xpu`,
    /// `cann`, `cpu`, `metal`, `neuron`, `tpu`.
    ///
    /// ```
    /// use kernels_types::variant_name::BuildVariant;
    /// let backend = |name: &str| BuildVariant::parse(name).runtime_backend();
    /// assert_eq!(backend("torch27-cxx11-cu126-x86_64-linux").as_deref(), Some("cuda"));
    /// assert_eq!(backend("torch-stable-abi29-rocm63-x86_64-linux").as_deref(), Some("rocm"));
    /// assert_eq!(backend("torch28-cxx11-cpu-riscv64-linux").as_deref(), Some("cpu"));
    /// assert_eq!(backend("torch-universal").as_deref(), Some("universal"));
    /// assert_eq!(backend("tvm-ffi01-metal-aarch64-darwin").as_deref(), Some("metal"));
    /// assert_eq!(backend("torch27-cxx11-xpu-x86_64-linux"), None);
    /// assert_eq!(backend("torch27-cxx11-cu126-x86_64"), None);
    /// assert_eq!(backend("csrc"), None);
    /// ```
    pub fn runtime_backend(&self) -> Option<String> {
        let parts: Vec<&str> = self.name.split('-').collect();
        let framework_digits = |s: &str| s.len() >= 2 && s.bytes().all(|b| b.is_ascii_digit());
        if self.name.starts_with("torch-stable-abi") {
            let digits = parts.get(2)?.strip_prefix("abi")?;
            return framework_digits(digits)
                .then(|| runtime_arch_backend(&parts[3..]))
                .flatten();
        }
        match parts.as_slice() {
            ["torch", rest @ ..] => Some(rest.join("-")),
            [torch, tag, rest @ ..]
                if torch.starts_with("torch") && matches!(*tag, "cxx11" | "cxx98") =>
            {
                framework_digits(&torch["torch".len()..])
                    .then(|| runtime_arch_backend(rest))
                    .flatten()
            }
            [torch, rest @ ..] if torch.starts_with("torch") => {
                framework_digits(&torch["torch".len()..])
                    .then(|| runtime_arch_backend(rest))
                    .flatten()
            }
            ["tvm", ffi, rest @ ..] => framework_digits(ffi.strip_prefix("ffi")?)
                .then(|| runtime_arch_backend(rest))
                .flatten(),
            _ => None,
        }
    }
}

/// The backend of `{compute}-{cpu}-{os}` as reference 0.17.2 reads it: exactly
/// three parts, any CPU and OS, a compute tag with its version digits.
fn runtime_arch_backend(parts: &[&str]) -> Option<String> {
    let [compute, _, _] = parts else {
        return None;
    };
    match Backend::parse(compute)? {
        Backend::Xpu(None) => None,
        backend => Some(backend.family().to_owned()),
    }
}

fn parse_kind(name: &str) -> Option<VariantKind> {
    if name == "torch-universal" {
        return Some(VariantKind::Universal);
    }
    if let Some(rest) = name.strip_prefix("torch-stable-abi") {
        let (digits, arch) = rest.split_once('-')?;
        let version = MinorVersion::from_digits_major_first(digits)?;
        return parse_arch(Framework::TorchStableAbi(version), arch);
    }
    if let Some(rest) = name.strip_prefix("tvm-ffi") {
        let (digits, arch) = rest.split_once('-')?;
        let version = MinorVersion::from_digits_major_first(digits)?;
        return parse_arch(Framework::TvmFfi(version), arch);
    }
    if let Some(backend) = name.strip_prefix("torch-") {
        return NoarchBackend::parse(backend).map(VariantKind::Noarch);
    }
    let rest = name.strip_prefix("torch")?;
    let (digits, arch) = rest.split_once('-')?;
    let version = MinorVersion::from_digits_major_first(digits)?;
    parse_arch(Framework::Torch(version), arch)
}

/// Parses `[cxx11-|cxx98-]{compute}-{cpu}-{os}`.
fn parse_arch(framework: Framework, arch: &str) -> Option<VariantKind> {
    let parts: Vec<&str> = arch.split('-').collect();
    let (cxx_abi, parts) = match parts.as_slice() {
        [tag, rest @ ..] if rest.len() == 3 => {
            let abi = match *tag {
                "cxx11" => CxxAbi::Cxx11,
                "cxx98" => CxxAbi::Cxx98,
                _ => return None,
            };
            (Some(abi), rest)
        }
        parts if parts.len() == 3 => (None, parts),
        _ => return None,
    };
    let [compute, cpu, os] = parts else {
        return None;
    };
    let cpu = match *cpu {
        "x86_64" => Cpu::X86_64,
        "aarch64" => Cpu::Aarch64,
        _ => return None,
    };
    let os = match *os {
        "linux" => Os::Linux,
        "darwin" => Os::Darwin,
        "windows" => Os::Windows,
        _ => return None,
    };
    Some(VariantKind::Arch(ArchVariant {
        framework,
        cxx_abi,
        backend: Backend::parse(compute)?,
        python: PythonTag::LEGACY,
        grammar: Grammar::Legacy,
        cpu,
        os,
    }))
}

impl FromStr for BuildVariant {
    type Err = Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(BuildVariant::parse(s))
    }
}

impl fmt::Display for BuildVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name in the derived union list of real variant names
    /// (`shared/real-inputs/variants/ALL-VARIANT-NAMES--derived.tsv`, first column).
    const REAL_NAMES: &str = "torch-cpu torch-cuda torch-ext torch-metal torch-rocm torch-tpu \
        torch-universal torch-xpu torch24-cxx11-cu118-x86_64-linux torch24-cxx11-cu121-x86_64-linux \
        torch24-cxx11-cu124-x86_64-linux torch24-cxx98-cu118-x86_64-linux \
        torch24-cxx98-cu121-x86_64-linux torch24-cxx98-cu124-x86_64-linux \
        torch25-cxx11-cu118-x86_64-linux torch25-cxx11-cu121-x86_64-linux \
        torch25-cxx11-cu124-x86_64-linux torch25-cxx98-cu118-x86_64-linux \
        torch25-cxx98-cu121-x86_64-linux torch25-cxx98-cu124-x86_64-linux \
        torch26-cxx11-cu118-x86_64-linux torch26-cxx11-cu124-x86_64-linux \
        torch26-cxx11-cu126-aarch64-linux torch26-cxx11-cu126-x86_64-linux \
        torch26-cxx11-rocm62-x86_64-linux torch26-cxx98-cu118-x86_64-linux \
        torch26-cxx98-cu124-x86_64-linux torch26-cxx98-cu126-aarch64-linux \
        torch26-cxx98-cu126-x86_64-linux torch27-cxx11-cu118-x86_64-linux \
        torch27-cxx11-cu126-aarch64-linux torch27-cxx11-cu126-x86_64-linux \
        torch27-cxx11-cu128-aarch64-linux torch27-cxx11-cu128-x86_64-linux \
        torch27-cxx11-metal-aarch64-darwin torch27-cxx11-rocm63-x86_64-linux \
        torch27-cxx11-xpu20250-x86_64-linux torch27-metal-aarch64-darwin \
        torch28-cpu-aarch64-darwin torch28-cxx11-cpu-aarch64-linux torch28-cxx11-cpu-x86_64-linux \
        torch28-cxx11-cu126-aarch64-linux torch28-cxx11-cu126-x86_64-linux \
        torch28-cxx11-cu128-aarch64-linux torch28-cxx11-cu128-x86_64-linux \
        torch28-cxx11-cu129-aarch64-linux torch28-cxx11-cu129-x86_64-linux \
        torch28-cxx11-rocm63-x86_64-linux torch28-cxx11-rocm64-x86_64-linux \
        torch28-cxx11-xpu20251-x86_64-linux torch28-metal-aarch64-darwin \
        torch-stable-abi29-cu126-x86_64-linux torch-stable-abi29-cu128-x86_64-linux \
        torch-stable-abi29-cu130-x86_64-linux torch29-cpu-aarch64-darwin \
        torch29-cu130-x86_64-windows torch29-cxx11-cpu-aarch64-linux torch29-cxx11-cpu-x86_64-linux \
        torch29-cxx11-cu126-aarch64-linux torch29-cxx11-cu126-x86_64-linux \
        torch29-cxx11-cu128-aarch64-linux torch29-cxx11-cu128-x86_64-linux \
        torch29-cxx11-cu129-aarch64-linux torch29-cxx11-cu129-x86_64-linux \
        torch29-cxx11-cu130-aarch64-linux torch29-cxx11-cu130-x86_64-linux \
        torch29-cxx11-rocm63-x86_64-linux torch29-cxx11-rocm64-x86_64-linux \
        torch29-cxx11-xpu20252-x86_64-linux torch29-metal-aarch64-darwin \
        torch29-xpu20252-x86_64-windows torch-stable-abi210-cu126-aarch64-linux \
        torch-stable-abi210-cu126-x86_64-linux torch-stable-abi210-cu128-aarch64-linux \
        torch-stable-abi210-cu128-x86_64-linux torch-stable-abi210-cu130-aarch64-linux \
        torch-stable-abi210-cu130-x86_64-linux torch-stable-abi210-cu132-aarch64-linux \
        torch-stable-abi210-cu132-x86_64-linux torch210-cpu-aarch64-darwin \
        torch210-cu128-x86_64-windows torch210-cxx11-cpu-aarch64-linux \
        torch210-cxx11-cpu-x86_64-linux torch210-cxx11-cu126-aarch64-linux \
        torch210-cxx11-cu126-x86_64-linux torch210-cxx11-cu128-aarch64-linux \
        torch210-cxx11-cu128-x86_64-linux torch210-cxx11-cu130-aarch64-linux \
        torch210-cxx11-cu130-x86_64-linux torch210-cxx11-rocm70-x86_64-linux \
        torch210-cxx11-rocm71-x86_64-linux torch210-cxx11-xpu20253-x86_64-linux \
        torch210-metal-aarch64-darwin torch210-xpu20253-x86_64-windows torch211-cpu-aarch64-darwin \
        torch211-cu128-x86_64-windows torch211-cxx11-cpu-aarch64-linux \
        torch211-cxx11-cpu-x86_64-linux torch211-cxx11-cu126-aarch64-linux \
        torch211-cxx11-cu126-x86_64-linux torch211-cxx11-cu128-aarch64-linux \
        torch211-cxx11-cu128-x86_64-linux torch211-cxx11-cu130-aarch64-linux \
        torch211-cxx11-cu130-x86_64-linux torch211-cxx11-rocm71-x86_64-linux \
        torch211-cxx11-rocm72-x86_64-linux torch211-cxx11-xpu20253-x86_64-linux \
        torch211-metal-aarch64-darwin torch212-cpu-aarch64-darwin torch212-cxx11-cpu-aarch64-linux \
        torch212-cxx11-cpu-x86_64-linux torch212-cxx11-cu126-aarch64-linux \
        torch212-cxx11-cu126-x86_64-linux torch212-cxx11-cu130-aarch64-linux \
        torch212-cxx11-cu130-x86_64-linux torch212-cxx11-cu132-aarch64-linux \
        torch212-cxx11-cu132-x86_64-linux torch212-cxx11-rocm71-x86_64-linux \
        torch212-cxx11-rocm72-x86_64-linux torch212-cxx11-xpu20253-x86_64-linux \
        torch212-metal-aarch64-darwin torch213-cpu-aarch64-darwin torch213-cxx11-cpu-aarch64-linux \
        torch213-cxx11-cpu-x86_64-linux torch213-cxx11-cu126-aarch64-linux \
        torch213-cxx11-cu126-x86_64-linux torch213-cxx11-cu130-aarch64-linux \
        torch213-cxx11-cu130-x86_64-linux torch213-cxx11-cu132-aarch64-linux \
        torch213-cxx11-cu132-x86_64-linux torch213-cxx11-rocm71-x86_64-linux \
        torch213-cxx11-rocm72-x86_64-linux torch213-cxx11-xpu20253-x86_64-linux \
        torch213-cxx11-xpu20260-x86_64-linux torch213-metal-aarch64-darwin \
        torch214-cxx11-cpu-x86_64-linux torch214-cxx11-xpu20261-x86_64-linux";

    fn arch(name: &str) -> ArchVariant {
        *BuildVariant::parse(name)
            .arch()
            .unwrap_or_else(|| panic!("{name} is not an arch variant"))
    }

    #[test]
    fn every_real_name_parses_and_round_trips() {
        let names: Vec<&str> = REAL_NAMES.split_whitespace().collect();
        assert_eq!(names.len(), 137, "the derived list has 137 names");
        for name in names {
            let variant = BuildVariant::parse(name);
            assert_eq!(variant.to_string(), name);
            assert_eq!(name.parse::<BuildVariant>().unwrap(), variant);
            assert_eq!(variant.is_known(), name != "torch-ext", "{name}");
            if let Some(arch) = variant.arch() {
                // The canonical rendering of the parts gives the name back.
                let framework = match arch.framework {
                    Framework::Torch(v) => format!("torch{}", v.digits()),
                    Framework::TorchStableAbi(v) => format!("torch-stable-abi{}", v.digits()),
                    Framework::TvmFfi(v) => format!("tvm-ffi{}", v.digits()),
                };
                let cxx = arch
                    .cxx_abi
                    .map(|c| format!("-{}", c.as_str()))
                    .unwrap_or_default();
                let rebuilt = format!(
                    "{framework}{cxx}-{}-{}-{}",
                    arch.backend,
                    arch.cpu.as_str(),
                    arch.os.as_str()
                );
                assert_eq!(rebuilt, name);
            }
        }
    }

    #[test]
    fn framework_versions_take_the_first_digit_as_major() {
        assert_eq!(
            arch("torch210-cxx11-cu128-x86_64-linux").framework,
            Framework::Torch(MinorVersion::new(2, 10))
        );
        assert_eq!(
            arch("torch27-cxx11-cu126-x86_64-linux").framework,
            Framework::Torch(MinorVersion::new(2, 7))
        );
        assert_eq!(
            arch("torch-stable-abi210-cu126-aarch64-linux").framework,
            Framework::TorchStableAbi(MinorVersion::new(2, 10))
        );
        assert_eq!(
            arch("tvm-ffi01-cu128-x86_64-linux").framework,
            Framework::TvmFfi(MinorVersion::new(0, 1))
        );
        assert_eq!(
            arch("torch213-cxx11-cpu-x86_64-linux")
                .framework
                .version()
                .to_string(),
            "2.13"
        );
    }

    #[test]
    fn backend_versions_take_the_last_digit_as_minor() {
        let backend = |name| arch(name).backend;
        assert_eq!(
            backend("torch29-cxx11-cu130-x86_64-linux"),
            Backend::Cuda(MinorVersion::new(13, 0))
        );
        assert_eq!(
            backend("torch24-cxx98-cu118-x86_64-linux"),
            Backend::Cuda(MinorVersion::new(11, 8))
        );
        assert_eq!(
            backend("torch27-cxx11-rocm63-x86_64-linux"),
            Backend::Rocm(MinorVersion::new(6, 3))
        );
        assert_eq!(
            backend("torch210-cxx11-xpu20253-x86_64-linux"),
            Backend::Xpu(Some(MinorVersion::new(2025, 3)))
        );
        assert_eq!(
            backend("torch28-cxx11-xpu-x86_64-linux"),
            Backend::Xpu(None)
        );
        assert_eq!(
            backend("torch29-cxx11-cann82-aarch64-linux"),
            Backend::Cann(MinorVersion::new(8, 2))
        );
        assert_eq!(backend("torch212-cxx11-cpu-aarch64-linux"), Backend::Cpu);
        assert_eq!(backend("torch210-metal-aarch64-darwin"), Backend::Metal);
        assert_eq!(
            backend("torch213-cxx11-neuron-x86_64-linux"),
            Backend::Neuron
        );
        assert_eq!(backend("torch213-tpu-x86_64-linux"), Backend::Tpu);
        assert_eq!(
            Backend::Xpu(Some(MinorVersion::new(2025, 3))).to_string(),
            "xpu20253"
        );
        assert_eq!(Backend::Rocm(MinorVersion::new(7, 1)).family(), "rocm");
    }

    #[test]
    fn cxx_tag_cpu_and_os() {
        let linux = arch("torch24-cxx98-cu121-x86_64-linux");
        assert_eq!(linux.cxx_abi, Some(CxxAbi::Cxx98));
        assert_eq!((linux.cpu, linux.os), (Cpu::X86_64, Os::Linux));

        let tagless = arch("torch29-cu130-x86_64-windows");
        assert_eq!(tagless.cxx_abi, None);
        assert_eq!(tagless.os, Os::Windows);

        let mac = arch("torch28-cpu-aarch64-darwin");
        assert_eq!(
            (mac.cpu, mac.os, mac.backend),
            (Cpu::Aarch64, Os::Darwin, Backend::Cpu)
        );

        // A real (early) macOS name carries a cxx tag.
        assert_eq!(
            arch("torch27-cxx11-metal-aarch64-darwin").cxx_abi,
            Some(CxxAbi::Cxx11)
        );
    }

    #[test]
    fn noarch_universal_and_unknown() {
        assert_eq!(
            BuildVariant::parse("torch-cuda").kind(),
            &VariantKind::Noarch(NoarchBackend::Cuda)
        );
        assert_eq!(
            BuildVariant::parse("torch-npu").kind(),
            &VariantKind::Noarch(NoarchBackend::Npu)
        );
        assert_eq!(
            BuildVariant::parse("torch-universal").kind(),
            &VariantKind::Universal
        );
        for junk in [
            "torch-ext",
            "torch",
            "torch27",
            "torch2-cxx11-cu126-x86_64-linux",
            "torch27-cxx14-cu126-x86_64-linux",
            "torch27-cxx11-cu1-x86_64-linux",
            "torch27-cxx11-cuda-x86_64-linux",
            "torch27-cxx11-cu126-riscv64-linux",
            "torch27-cxx11-cu126-x86_64-freebsd",
            "torch27-cxx11-cu126-x86_64-linux-extra",
            "torch-stable-abi-cu126-x86_64-linux",
            "torch99999999999-cxx11-cu126-x86_64-linux",
            "tvm-ffi01",
            "README.md",
            "",
        ] {
            let variant = BuildVariant::parse(junk);
            assert_eq!(variant.kind(), &VariantKind::Unknown, "{junk:?}");
            assert_eq!(variant.name(), junk);
        }
        assert_eq!(
            BuildVariant::parse("torch-stable-abi29-cu126-x86_64-linux").lenient_noarch_backend(),
            None
        );
    }
}
