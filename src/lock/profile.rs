//! Target profiles: what the `kernels` Python runtime that will consume our
//! lock and cache expects, decided once per command.
//!
//! A [`Profile`] fixes, for one runtime version of the reference package:
//!
//! | property | rule |
//! |---|---|
//! | lock format | variant-hash for ≤0.16, `KernelLocks` for 0.17+ |
//! | repo type / cache prefix | `model` / `models--` up to 0.13, `kernel` / `kernels--` from 0.14 |
//! | variant preference | exact `[arch, noarch, universal]` order up to 0.12 (noarch only in releases that have it), the resolver from 0.13 (stable ABI from 0.15) |
//! | bytecode | `*.pyc` and `__pycache__/` left out of hashes and downloads from 0.16 |
//! | requirements | specifier strings up to 0.13, integers from 0.12, integers only from 0.14 |
//! | transitive `kernel-depends`, publisher trust check when locking | 0.17+ |
//! | [`Generation`]: ROCm minor fallback (0.18+), the second variant grammar and `torch-cann` (0.19+) | 0.17, 0.18, 0.19 |
//! | digest receipts the runtime reads at load ([`Profile::runtime_receipts`]) | `.verified-kernels/digest/v1/` in 0.18–0.19, none before; a later format is not known yet |
//!
//! The newest release modelled is [`NEWEST_MODELLED`] (0.19.1); a newer runtime
//! gets its profile, and [`Profile::beyond_modelled`] says so.
//!
//! [`detect`] chooses the runtime from, in order: an explicit `--target-runtime`,
//! `target-runtime` under `[tool.kernels]` of `pyproject.toml`, the format of an
//! existing `kernels.lock` (refined by the installed version when that version
//! writes the same format; with no runtime installed, a variant-hash lock
//! whose manifest has specifier strings means [`NEWEST_READING_STRINGS`], as
//! for the first lock), the `kernels` package installed in the project's
//! Python environment ([`installed_kernels`] reads its files; when they show
//! none, the command asks the project's interpreter, [`FoundBy::Interpreter`]),
//! and finally, for a project's first lock ([`DetectInputs::first_lock`]), the
//! newest modelled runtime that reads every requirement form of the manifest
//! ([`RequirementForms`]), else a default profile: variant-hash lock with
//! `kernel` repositories.
//! An installed runtime that cannot read the existing lock's format is kept in
//! [`Profile::ignored_installed`], whatever found it.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::lock::format::LockFormat;
use crate::lock::requirement::Requirement;
use kernels_hub::HubClient;
use kernels_types::wire::RepoType;

/// A `kernels` (Python package) release, `major.minor.patch`; pre-release and
/// local suffixes are dropped (`0.17.0rc1` counts as 0.17.0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RuntimeVersion {
    /// Major version (0 for every release so far).
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version (0 when not given).
    pub patch: u64,
}

impl RuntimeVersion {
    /// Builds a version from its parts.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        RuntimeVersion {
            major,
            minor,
            patch,
        }
    }

    /// Parses a PEP 440 version with at most three release numbers: `0.10.5`,
    /// `0.17`, `v0.16.2`, `0.17.0rc1`, `0.13.0.dev0`. Fails on anything else.
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let invalid = || ProfileError::InvalidVersion {
            text: text.to_owned(),
        };
        let version: pep440_rs::Version = text.trim().parse().map_err(|_| invalid())?;
        let release = version.release();
        if release.len() > 3 {
            return Err(invalid());
        }
        let part = |i: usize| release.get(i).copied().unwrap_or(0);
        Ok(RuntimeVersion::new(part(0), part(1), part(2)))
    }

    fn at_least(self, minor: u64) -> bool {
        self.major > 0 || self.minor >= minor
    }
}

impl fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The newest `kernels` release whose behaviour this tool models: 0.19.1, read
/// from its published wheel (`kernels/_internals/`). A runtime of a later
/// minor line gets this release's profile ([`Profile::beyond_modelled`]).
pub const NEWEST_MODELLED: RuntimeVersion = RuntimeVersion::new(0, 19, 1);

/// The newest release that reads specifier strings in `[tool.kernels.dependencies]`
/// (0.13.0: deprecated there, refused from 0.14).
pub const NEWEST_READING_STRINGS: RuntimeVersion = RuntimeVersion::new(0, 13, 0);

/// The runtime line of a profile among the releases that read the
/// `KernelLocks` lock, each of which changed how variants are chosen. The lock
/// format, repositories, bytecode and requirement forms are the same for all
/// three (measured: 0.17.2, 0.18.3 and 0.19.1 write byte-identical locks).
///
/// Variant ranking reads its rules from here ([`Generation::rocm_minor_fallback`],
/// [`Generation::reads_dotted_names`], [`Generation::ascend_noarch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Generation {
    /// Before 0.17 (variant-hash locks), or no runtime named (the default profile).
    BeforeKernelLocks,
    /// 0.17.x (modelled on 0.17.2): the resolver with stable ABI, Metal arch
    /// builds only from macOS 26, transitive `kernel-depends`, publisher trust.
    V017,
    /// 0.18.x (modelled on 0.18.3): 0.17 plus a ROCm variant of a lower minor
    /// than the system's accepted (as CUDA), digests checked at load, receipts.
    V018,
    /// 0.19.x and later (modelled on 0.19.1): 0.18 plus the second variant
    /// grammar (`torch-2.12-…-cpython-3.9-abi3-…`, `sdk`, `mlx-metal`), the
    /// target's Python taking part in selection, `rocmXYZ` read as X.YZ, and
    /// Ascend's noarch named `torch-cann`.
    V019,
}

impl Generation {
    /// The generation of a runtime version; versions after 0.19 are [`Generation::V019`].
    pub fn of(version: RuntimeVersion) -> Generation {
        if version.at_least(19) {
            Generation::V019
        } else if version.at_least(18) {
            Generation::V018
        } else if version.at_least(17) {
            Generation::V017
        } else {
            Generation::BeforeKernelLocks
        }
    }

    /// The release whose code this generation is modelled on (0.17.2, 0.18.3,
    /// 0.19.1); `None` before 0.17.
    pub fn modelled_on(self) -> Option<RuntimeVersion> {
        match self {
            Generation::BeforeKernelLocks => None,
            Generation::V017 => Some(RuntimeVersion::new(0, 17, 2)),
            Generation::V018 => Some(RuntimeVersion::new(0, 18, 3)),
            Generation::V019 => Some(NEWEST_MODELLED),
        }
    }

    /// The release range as status lines name it: `0.17`, `0.18`, `0.19+`.
    pub fn label(self) -> &'static str {
        match self {
            Generation::BeforeKernelLocks => "≤0.16",
            Generation::V017 => "0.17",
            Generation::V018 => "0.18",
            Generation::V019 => "0.19+",
        }
    }

    /// Whether a ROCm build of a lower minor than the system's ROCm is
    /// accepted (same major), as CUDA builds are (0.18+).
    pub fn rocm_minor_fallback(self) -> bool {
        self >= Generation::V018
    }

    /// Whether the second variant grammar (dotted versions, a `cpython-X.Y-abi3`
    /// part, `sdk`, `mlx-metal`) is parsed beside the legacy names (0.19+).
    pub fn reads_dotted_names(self) -> bool {
        self >= Generation::V019
    }

    /// The noarch variant of Ascend NPUs: `torch-cann` from 0.19, `torch-npu` before.
    pub fn ascend_noarch(self) -> &'static str {
        if self >= Generation::V019 {
            "torch-cann"
        } else {
            "torch-npu"
        }
    }
}

/// Which requirement forms a manifest uses, for the profile of a project's
/// first lock when no runtime is named or installed ([`DetectInputs::first_lock`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequirementForms {
    /// Some dependency is a specifier string (PEP 440 or the Cargo-style
    /// extension), bare or as `{ version = "…" }`.
    pub strings: bool,
}

impl RequirementForms {
    /// The forms of `requirements` (integers and revisions are read by every
    /// runtime this tool writes for; strings only up to 0.13).
    pub fn of<'a>(requirements: impl IntoIterator<Item = &'a Requirement>) -> RequirementForms {
        RequirementForms {
            strings: requirements
                .into_iter()
                .any(|r| matches!(r, Requirement::Pep440(_) | Requirement::Semver(_))),
        }
    }

    /// The newest modelled runtime that reads every form: [`NEWEST_MODELLED`]
    /// for integers and revisions, [`NEWEST_READING_STRINGS`] with strings.
    pub fn newest_reader(self) -> RuntimeVersion {
        if self.strings {
            NEWEST_READING_STRINGS
        } else {
            NEWEST_MODELLED
        }
    }
}

/// How `kernels download` orders a kernel's build variants for this
/// environment. [`crate::variant`] implements each policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VariantPreference {
    /// Reference ≤0.12: exact names `[arch, noarch, "torch-universal"]`, first
    /// existing wins. `noarch` is false for the releases without the December
    /// 2025 noarch back-port (0.5.0, 0.6.0–0.6.2, 0.7.0, 0.8.0–0.8.1, 0.9.0,
    /// 0.10.0–0.10.4, 0.11.0–0.11.1 and everything before 0.4.5), whose order is
    /// `[arch, "torch-universal"]`.
    Exact {
        /// Whether the `torch-<backend>` noarch variant is tried.
        noarch: bool,
    },
    /// Reference 0.13–0.14: filter by environment, CUDA minor fallback (same
    /// major, variant minor ≤ runtime minor), noarch by backend, then universal.
    Resolver,
    /// Reference 0.15–0.16: [`VariantPreference::Resolver`] plus Torch stable-ABI
    /// variants (sorted first) and tagless Linux variants before cxx-tagged ones.
    ResolverStableAbi,
    /// Reference before 0.11 (0.10.5 and older): [`VariantPreference::Exact`]
    /// with the older arch name: no CPU builds (a CPU-only torch makes the
    /// reference's variant detection raise, so nothing can be loaded) and
    /// Windows names like Linux ones, with the cxx tag and the raw
    /// `platform.machine()` (`torch27-cxx11-cu128-AMD64-windows`).
    ExactBefore011 {
        /// Whether the `torch-<backend>` noarch variant is tried.
        noarch: bool,
    },
    /// Reference 0.17+: [`VariantPreference::ResolverStableAbi`], and Metal
    /// arch variants are rejected below macOS 26 (`platform.mac_ver()`), so a
    /// Mac on macOS 15 takes `torch-metal` or `torch-universal` instead.
    ResolverMetalMacos26,
}

impl VariantPreference {
    /// Whether this is an exact-name order (reference ≤0.12):
    /// [`VariantPreference::Exact`] or [`VariantPreference::ExactBefore011`].
    pub fn is_exact(self) -> bool {
        matches!(
            self,
            VariantPreference::Exact { .. } | VariantPreference::ExactBefore011 { .. }
        )
    }
}

/// Which `[tool.kernels.dependencies]` value forms the runtime accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequirementSupport {
    /// ≤0.11: PEP 440 specifier strings against `v<version>` tags only.
    StringsOnly,
    /// 0.12–0.13: integers (branch `vN`) and deprecated specifier strings.
    IntegersAndStrings,
    /// 0.14+: integers only.
    IntegersOnly,
}

/// Where the runtime version of a [`Profile`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSource {
    /// `--target-runtime VERSION`.
    Option,
    /// `target-runtime` under `[tool.kernels]` in `pyproject.toml`.
    Manifest,
    /// The format of the existing `kernels.lock`.
    LockFile(LockFormat),
    /// The existing `kernels.lock`'s format, with the installed version (which
    /// writes that format) giving the details.
    LockFileAndInstalled(LockFormat, Installed),
    /// The existing variant-hash `kernels.lock`, with specifier strings in the
    /// manifest: of the runtimes that read that format (0.1.7–0.16), only
    /// those up to 0.13 read strings, and the newest of them is chosen
    /// ([`NEWEST_READING_STRINGS`], the runtime the project's first lock was
    /// written for: [`ProfileSource::FirstLock`]).
    LockFileAndStrings,
    /// The `kernels` package installed in the project's Python environment.
    Installed(Installed),
    /// No lock and no runtime named or installed: a project's first lock,
    /// written for the newest modelled runtime that reads every requirement
    /// form of the manifest ([`RequirementForms::newest_reader`]).
    FirstLock(RequirementForms),
    /// Nothing found: the default profile.
    Default,
}

/// A `kernels` distribution found in a Python environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The version read from `METADATA` (or reported by the interpreter).
    pub version: RuntimeVersion,
    /// How and where it was found.
    pub found: FoundBy,
}

/// How an [`Installed`] runtime was found: by reading files
/// ([`installed_kernels`]) or by asking the project's interpreter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoundBy {
    /// A `kernels-*.dist-info/METADATA` file in the site directories of an
    /// environment, without starting Python.
    Files {
        /// Which environment: `.venv`, `VIRTUAL_ENV`, or `python3 on PATH`.
        environment: &'static str,
        /// The `kernels-*.dist-info` directory.
        dist_info: PathBuf,
    },
    /// `importlib.metadata.distribution("kernels")` in the project's
    /// interpreter, which also sees `PYTHONPATH`, user site-packages
    /// (`pip install --user`), `pip install --target` directories, conda
    /// and distribution (`dist-packages`) layouts.
    Interpreter {
        /// The interpreter that was asked (`python3`, `.venv/bin/python`, …).
        python: PathBuf,
        /// The directory the distribution's metadata was found in.
        location: PathBuf,
    },
}

impl Installed {
    /// A runtime the interpreter `python` reports: `version` as
    /// `importlib.metadata` gives it, found in `location`. Fails when the
    /// version is not one [`RuntimeVersion::parse`] reads.
    pub fn from_interpreter(
        version: &str,
        python: &Path,
        location: &Path,
    ) -> Result<Installed, ProfileError> {
        Ok(Installed {
            version: RuntimeVersion::parse(version)?,
            found: FoundBy::Interpreter {
                python: python.to_owned(),
                location: location.to_owned(),
            },
        })
    }
}

/// Where the runtime was found, as status lines put it after `installed in `:
/// `.venv`, `VIRTUAL_ENV`, `python3 on PATH`, or
/// `python3 (importlib.metadata, /path/to/site-packages)`.
impl fmt::Display for FoundBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FoundBy::Files { environment, .. } => f.write_str(environment),
            FoundBy::Interpreter { python, location } => write!(
                f,
                "{} (importlib.metadata, {})",
                python.display(),
                location.display()
            ),
        }
    }
}

/// Everything that differs between runtime eras; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The target runtime; `None` for the default profile.
    pub runtime: Option<RuntimeVersion>,
    /// Why this profile was chosen.
    pub source: ProfileSource,
    /// Lock format `kernels lock` writes.
    pub lock_format: LockFormat,
    /// Hub repository type (API path, resolve URL prefix, cache folder prefix).
    pub repo_type: RepoType,
    /// Whether `--repo-type` overrode the runtime's repository type.
    pub repo_type_overridden: bool,
    /// Variant ordering for `kernels download`.
    pub variant_preference: VariantPreference,
    /// Leave bytecode out of variant hashes and downloads (0.16+).
    pub exclude_bytecode: bool,
    /// Accepted dependency value forms.
    pub requirements: RequirementSupport,
    /// The runtime line among the `KernelLocks` readers (variant rules that
    /// changed in 0.18 and 0.19).
    pub generation: Generation,
    /// Lock every `kernel-depends` entry of every variant's `metadata.json` (0.17+).
    pub transitive: bool,
    /// Check the publisher's `trustedKernelPublisher` flag when locking (0.17+).
    pub check_trust: bool,
    /// An installed `kernels` (found by files or by the interpreter) that was
    /// not used because the existing lock is in a format it cannot read:
    /// `kernels download` and `kernels verify` fail on it, the other commands
    /// warn.
    pub ignored_installed: Option<Installed>,
}

impl Profile {
    /// The profile of a runtime version.
    pub fn for_runtime(version: RuntimeVersion, source: ProfileSource) -> Self {
        let v017 = version.at_least(17);
        Profile {
            runtime: Some(version),
            source,
            lock_format: if v017 {
                LockFormat::KernelLocks
            } else {
                LockFormat::VariantHash
            },
            repo_type: if version.at_least(14) {
                RepoType::Kernel
            } else {
                RepoType::Model
            },
            repo_type_overridden: false,
            variant_preference: if v017 {
                VariantPreference::ResolverMetalMacos26
            } else if version.at_least(15) {
                VariantPreference::ResolverStableAbi
            } else if version.at_least(13) {
                VariantPreference::Resolver
            } else if !version.at_least(11) {
                VariantPreference::ExactBefore011 {
                    noarch: has_noarch_backport(version),
                }
            } else {
                VariantPreference::Exact {
                    noarch: has_noarch_backport(version),
                }
            },
            exclude_bytecode: version.at_least(16),
            requirements: if version.at_least(14) {
                RequirementSupport::IntegersOnly
            } else if version.at_least(12) {
                RequirementSupport::IntegersAndStrings
            } else {
                RequirementSupport::StringsOnly
            },
            generation: Generation::of(version),
            transitive: v017,
            check_trust: v017,
            ignored_installed: None,
        }
    }

    /// `(runtime, NEWEST_MODELLED)` when the target runtime is of a later
    /// minor line than the newest release modelled (for example 0.25.0): its
    /// profile is [`NEWEST_MODELLED`]'s, which commands say once, with
    /// `kernels check` (importing the kernels through that runtime) as the way
    /// to confirm. `None` for modelled runtimes and the default profile.
    pub fn beyond_modelled(&self) -> Option<(RuntimeVersion, RuntimeVersion)> {
        let runtime = self.runtime?;
        ((runtime.major, runtime.minor) > (NEWEST_MODELLED.major, NEWEST_MODELLED.minor))
            .then_some((runtime, NEWEST_MODELLED))
    }

    /// The profile when nothing names a runtime: variant-hash lock, `kernel`
    /// repositories, exact variant order with noarch, bytecode hashed like any
    /// file, every requirement form accepted (the tool's behaviour before
    /// profiles existed).
    pub fn default_profile() -> Self {
        Profile {
            runtime: None,
            source: ProfileSource::Default,
            lock_format: LockFormat::VariantHash,
            repo_type: RepoType::Kernel,
            repo_type_overridden: false,
            variant_preference: VariantPreference::Exact { noarch: true },
            exclude_bytecode: false,
            requirements: RequirementSupport::IntegersAndStrings,
            generation: Generation::BeforeKernelLocks,
            transitive: false,
            check_trust: false,
            ignored_installed: None,
        }
    }

    /// The profile a lock format alone implies: a `KernelLocks` lock, which
    /// 0.17, 0.18 and 0.19 all read, means the newest of them modelled
    /// ([`NEWEST_MODELLED`], the runtime a first lock is written for); a
    /// variant-hash lock gives the default profile.
    fn for_lock_format(format: LockFormat) -> Self {
        match format {
            LockFormat::KernelLocks => {
                Profile::for_runtime(NEWEST_MODELLED, ProfileSource::LockFile(format))
            }
            LockFormat::VariantHash => Profile {
                source: ProfileSource::LockFile(format),
                ..Profile::default_profile()
            },
        }
    }

    /// The digest receipt format the target runtime reads before hashing a
    /// variant at load time (`.verified-kernels/digest/v1/`, read by 0.18.3
    /// and 0.19.1's `verify_digest`): `None` for runtimes up to 0.17, which
    /// read none, for the default profile, and for 0.20 and later, whose
    /// format upstream has not settled.
    pub fn runtime_receipts(&self) -> Option<kernels_cache::RuntimeReceiptFormat> {
        let version = self.runtime?;
        (version.major == 0 && (18..=19).contains(&version.minor))
            .then_some(kernels_cache::RuntimeReceiptFormat::DigestV1)
    }

    /// Replaces the repository type (the `--repo-type` override).
    pub fn with_repo_type(mut self, repo_type: RepoType) -> Self {
        if repo_type != self.repo_type {
            self.repo_type = repo_type;
            self.repo_type_overridden = true;
        }
        self
    }

    /// Whether commands that use the cache (`download`, `verify`) should hint
    /// that only a variant-hash lock chose the profile: that format is read by
    /// runtimes 0.1.7–0.16, which disagree on the cache folder (`models--` up
    /// to 0.13).
    pub fn cache_is_ambiguous(&self) -> bool {
        self.source == ProfileSource::LockFile(LockFormat::VariantHash)
            && !self.repo_type_overridden
    }

    /// The client this profile's commands talk to the Hub with: `client`,
    /// asking the `kernel` API for a `model` repository the `model` API no
    /// longer serves when the profile reads `model` repositories (the Hub
    /// removes model-type kernel repositories from 2026-09-13,
    /// huggingface/kernels#757); see [`HubClient::with_kernel_fallback`].
    pub fn hub_client(&self, client: &HubClient) -> HubClient {
        match self.repo_type {
            RepoType::Model => client.clone().with_kernel_fallback(),
            RepoType::Kernel => client.clone(),
        }
    }

    /// The one note about the repositories `client` found only through the
    /// `kernel` API ([`Profile::hub_client`]), saying what was done with them
    /// (`done`: "resolved", "downloaded"); `None` when there are none.
    pub fn served_as_kernel_note(&self, client: &HubClient, done: &str) -> Option<String> {
        let repos = client.served_as_kernel();
        if repos.is_empty() {
            return None;
        }
        let names: Vec<String> = repos.iter().map(|r| format!("`{r}`")).collect();
        let reader = match self.runtime {
            Some(version) => format!("kernels {version}"),
            None => "runtimes 0.13 and older".to_owned(),
        };
        Some(format!(
            "the Hub's model API no longer serves {} (model-type kernel repositories are removed from 2026-09-13); {done} through the kernel API, for the `{}` cache layout that {reader} reads offline",
            names.join(", "),
            self.cache_prefix()
        ))
    }

    /// The cache folder prefix: `kernels--` or `models--`.
    pub fn cache_prefix(&self) -> &'static str {
        match self.repo_type {
            RepoType::Kernel => "kernels--",
            RepoType::Model => "models--",
        }
    }
}

/// Releases of the exact-order era that try the noarch variant (reference §0:
/// back-ported to 0.4.5, 0.5.1, 0.6.3, 0.7.1, 0.8.2, 0.9.1, 0.10.5, 0.11.2; native from 0.12).
fn has_noarch_backport(version: RuntimeVersion) -> bool {
    if version.at_least(12) {
        return true;
    }
    let first_patch = match version.minor {
        4 => 5,
        5 | 7 | 9 => 1,
        6 => 3,
        8 | 11 => 2,
        10 => 5,
        _ => return false,
    };
    version.patch >= first_patch
}

/// Problems choosing a profile.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ProfileError {
    /// A runtime version that cannot be parsed.
    #[error("`{text}` is not a kernels version")]
    #[diagnostic(
        code(kernels::profile::invalid_version),
        help("give a release of the Python `kernels` package, for example `0.10.5` or `0.17.2`")
    )]
    InvalidVersion {
        /// What was given.
        text: String,
    },

    /// `target-runtime` in `[tool.kernels]` is invalid.
    #[error("{}: [tool.kernels] target-runtime: {source}", path.display())]
    #[diagnostic(
        code(kernels::profile::invalid_manifest_version),
        help("write it as a string, for example `target-runtime = \"0.17.2\"`")
    )]
    ManifestVersion {
        /// The pyproject file.
        path: PathBuf,
        /// Why the value is rejected.
        #[source]
        source: Box<ProfileError>,
    },
}

/// Inputs of [`detect`], gathered by the command as values.
#[derive(Debug, Clone, Default)]
pub struct DetectInputs<'a> {
    /// `--target-runtime`.
    pub option: Option<&'a str>,
    /// `target-runtime` under `[tool.kernels]`, with the pyproject path for errors.
    pub manifest: Option<(&'a str, &'a Path)>,
    /// Format of the existing `kernels.lock`, if one was read.
    pub lock_format: Option<LockFormat>,
    /// The `kernels` installed in the project's Python environment
    /// ([`installed_kernels`]).
    pub installed: Option<Installed>,
    /// `--repo-type`, which overrides the runtime's repository type.
    pub repo_type: Option<RepoType>,
    /// The manifest's requirement forms, given by every command that read
    /// them: with no runtime named or installed, they choose the profile of a
    /// first lock ([`DetectInputs::first_lock`]), and with an existing
    /// variant-hash lock, specifier strings choose [`NEWEST_READING_STRINGS`]
    /// ([`ProfileSource::LockFileAndStrings`]), the runtime the first lock
    /// was written for.
    pub requirement_forms: Option<RequirementForms>,
    /// Whether the command writes `kernels.lock` (`lock`, `add`): with no
    /// lock and no runtime named or installed, the profile is that of
    /// [`RequirementForms::newest_reader`] for [`DetectInputs::requirement_forms`]
    /// instead of the default.
    pub first_lock: bool,
}

/// Chooses the profile; see the module docs for the order. A `repo_type`
/// input then overrides the chosen repository type.
///
/// Fails only when the option or the manifest key names an unparsable version.
pub fn detect(inputs: &DetectInputs<'_>) -> Result<Profile, ProfileError> {
    let profile = runtime_profile(inputs)?;
    Ok(match inputs.repo_type {
        Some(repo_type) => profile.with_repo_type(repo_type),
        None => profile,
    })
}

/// The profile of the first input that names a runtime.
fn runtime_profile(inputs: &DetectInputs<'_>) -> Result<Profile, ProfileError> {
    if let Some(text) = inputs.option {
        return Ok(Profile::for_runtime(
            RuntimeVersion::parse(text)?,
            ProfileSource::Option,
        ));
    }
    if let Some((text, path)) = inputs.manifest {
        let version =
            RuntimeVersion::parse(text).map_err(|source| ProfileError::ManifestVersion {
                path: path.to_owned(),
                source: Box::new(source),
            })?;
        return Ok(Profile::for_runtime(version, ProfileSource::Manifest));
    }
    Ok(match (inputs.lock_format, inputs.installed.clone()) {
        (Some(format), Some(installed)) => {
            let profile = Profile::for_runtime(installed.version, ProfileSource::Default);
            if profile.lock_format == format {
                Profile {
                    source: ProfileSource::LockFileAndInstalled(format, installed),
                    ..profile
                }
            } else {
                Profile {
                    ignored_installed: Some(installed),
                    ..Profile::for_lock_format(format)
                }
            }
        }
        (Some(LockFormat::VariantHash), None)
            if inputs.requirement_forms.is_some_and(|forms| forms.strings) =>
        {
            Profile::for_runtime(NEWEST_READING_STRINGS, ProfileSource::LockFileAndStrings)
        }
        (Some(format), None) => Profile::for_lock_format(format),
        (None, Some(installed)) => {
            Profile::for_runtime(installed.version, ProfileSource::Installed(installed))
        }
        (None, None) => match inputs.requirement_forms.filter(|_| inputs.first_lock) {
            Some(forms) => {
                Profile::for_runtime(forms.newest_reader(), ProfileSource::FirstLock(forms))
            }
            None => Profile::default_profile(),
        },
    })
}

/// The `kernels` distribution installed in the project's Python environment,
/// found without starting Python.
///
/// Environments are tried in order: `$VIRTUAL_ENV`, `<project>/.venv`, then the
/// prefix of the first `python3` on `PATH`. For a `python3` on `PATH`, the
/// prefix is the parent of its `bin/` directory when that holds a `pyvenv.cfg`
/// (a virtual environment), else the parent of `bin/` of the resolved
/// executable (the sysconfig layout of a system or pyenv Python; pyenv shims
/// are followed to `<pyenv root>/versions/<global version>`). Python is
/// never run here: that keeps the common case fast and side-effect free. User
/// site-packages, `PYTHONPATH` and layouts whose prefix is not next to the
/// `python3` on `PATH` are not seen; when this finds nothing, commands ask the
/// interpreter ([`Installed::from_interpreter`]).
///
/// In an environment, `lib/python3*/site-packages`, `lib/python3*/dist-packages`,
/// `lib64/…`, `local/lib/python3*/dist-packages`, `lib/python3/dist-packages` and
/// `Lib/site-packages` are searched for `kernels-*.dist-info/METADATA`, whose
/// `Version:` header is the result.
pub fn installed_kernels(
    project_dir: &Path,
    virtual_env: Option<&Path>,
    path_var: Option<&std::ffi::OsStr>,
) -> Option<Installed> {
    for (environment, prefix) in project_environments(project_dir, virtual_env) {
        if let Some((version, dist_info)) = kernels_in_prefix(&prefix) {
            return Some(Installed {
                version,
                found: FoundBy::Files {
                    environment,
                    dist_info,
                },
            });
        }
    }
    let prefix = python_prefix(path_var?)?;
    let (version, dist_info) = kernels_in_prefix(&prefix)?;
    Some(Installed {
        version,
        found: FoundBy::Files {
            environment: "python3 on PATH",
            dist_info,
        },
    })
}

/// The project's Python environments in the order they are tried, each with
/// the name commands show for it: `$VIRTUAL_ENV` (`VIRTUAL_ENV`), then
/// `<project>/.venv` (`.venv`). After them comes [`PATH_PYTHON`] on `PATH`.
pub fn project_environments(
    project_dir: &Path,
    virtual_env: Option<&Path>,
) -> Vec<(&'static str, PathBuf)> {
    let mut environments = Vec::with_capacity(2);
    if let Some(env) = virtual_env {
        environments.push(("VIRTUAL_ENV", env.to_owned()));
    }
    environments.push((".venv", project_dir.join(".venv")));
    environments
}

/// The interpreter of an environment prefix: `bin/python`, or
/// `Scripts\python.exe` on Windows.
pub fn environment_python(prefix: &Path) -> PathBuf {
    if cfg!(windows) {
        prefix.join("Scripts").join("python.exe")
    } else {
        prefix.join("bin").join("python")
    }
}

/// The Python looked up on `PATH` when the project has no environment.
pub const PATH_PYTHON: &str = if cfg!(windows) { "python" } else { "python3" };

/// The installation prefix of the first `python3` on `PATH`; see [`installed_kernels`].
fn python_prefix(path_var: &std::ffi::OsStr) -> Option<PathBuf> {
    let exe = std::env::split_paths(path_var)
        .map(|dir| dir.join(format!("{PATH_PYTHON}{}", std::env::consts::EXE_SUFFIX)))
        .find(|candidate| candidate.is_file())?;
    let bin = exe.parent()?;
    if let Some(prefix) = bin.parent()
        && prefix.join("pyvenv.cfg").is_file()
    {
        return Some(prefix.to_owned());
    }
    if bin.file_name().is_some_and(|name| name == "shims")
        && let Some(root) = bin.parent()
    {
        let version = fs_err::read_to_string(root.join("version")).ok()?;
        let version = version.lines().next()?.trim();
        return Some(root.join("versions").join(version));
    }
    let resolved = fs_err::canonicalize(&exe).ok()?;
    Some(resolved.parent()?.parent()?.to_owned())
}

/// Finds `kernels-*.dist-info/METADATA` in the site directories of a prefix.
fn kernels_in_prefix(prefix: &Path) -> Option<(RuntimeVersion, PathBuf)> {
    if !prefix.is_dir() {
        return None;
    }
    let mut site_dirs = vec![
        prefix.join("Lib").join("site-packages"),
        prefix.join("lib").join("python3").join("dist-packages"),
    ];
    for lib in ["lib", "lib64", "local/lib"] {
        let Ok(entries) = fs_err::read_dir(prefix.join(lib)) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
            .map(|e| e.path())
            .collect();
        pythons.sort();
        for python in pythons {
            site_dirs.push(python.join("site-packages"));
            site_dirs.push(python.join("dist-packages"));
        }
    }
    site_dirs.iter().find_map(|dir| kernels_in_site(dir))
}

fn kernels_in_site(site: &Path) -> Option<(RuntimeVersion, PathBuf)> {
    let mut dist_infos: Vec<PathBuf> = fs_err::read_dir(site)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("kernels-") && name.ends_with(".dist-info")
        })
        .map(|e| e.path())
        .collect();
    dist_infos.sort();
    dist_infos.into_iter().find_map(|dir| {
        let metadata = fs_err::read_to_string(dir.join("METADATA")).ok()?;
        let mut name_ok = false;
        let mut version = None;
        for line in metadata.lines() {
            if line.is_empty() {
                break;
            }
            if let Some(name) = line.strip_prefix("Name:") {
                name_ok = name.trim().eq_ignore_ascii_case("kernels");
            } else if let Some(v) = line.strip_prefix("Version:") {
                version = RuntimeVersion::parse(v.trim()).ok();
            }
        }
        (name_ok).then_some(version).flatten().map(|v| (v, dir))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> RuntimeVersion {
        RuntimeVersion::parse(text).unwrap()
    }

    #[test]
    fn parses_versions() {
        assert_eq!(v("0.10.5"), RuntimeVersion::new(0, 10, 5));
        assert_eq!(v("0.17"), RuntimeVersion::new(0, 17, 0));
        assert_eq!(v("v0.16.2"), RuntimeVersion::new(0, 16, 2));
        assert_eq!(v("0.17.0rc1"), RuntimeVersion::new(0, 17, 0));
        assert_eq!(v("0.13.0.dev0"), RuntimeVersion::new(0, 13, 0));
        for bad in ["", "x", "0.x", "1..2", "0.10.5 beta"] {
            assert!(RuntimeVersion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn eras() {
        let p = |t| Profile::for_runtime(v(t), ProfileSource::Option);
        let digest_v1 = Some(kernels_cache::RuntimeReceiptFormat::DigestV1);
        for (runtime, receipts) in [
            ("0.17.2", None),
            ("0.18.0", digest_v1),
            ("0.19.1", digest_v1),
            ("0.20.0", None),
        ] {
            assert_eq!(p(runtime).runtime_receipts(), receipts, "{runtime}");
        }
        assert_eq!(Profile::default_profile().runtime_receipts(), None);
        let old = p("0.10.5");
        assert_eq!(old.lock_format, LockFormat::VariantHash);
        assert_eq!(old.repo_type, RepoType::Model);
        assert_eq!(
            old.variant_preference,
            VariantPreference::ExactBefore011 { noarch: true }
        );
        assert_eq!(
            p("0.10.4").variant_preference,
            VariantPreference::ExactBefore011 { noarch: false }
        );
        assert_eq!(
            p("0.11.1").variant_preference,
            VariantPreference::Exact { noarch: false }
        );
        assert_eq!(
            p("0.12.3").variant_preference,
            VariantPreference::Exact { noarch: true }
        );
        assert!(old.variant_preference.is_exact());
        assert_eq!(old.requirements, RequirementSupport::StringsOnly);
        assert!(!old.exclude_bytecode && !old.transitive);
        assert_eq!(p("0.13.0").variant_preference, VariantPreference::Resolver);
        assert_eq!(p("0.13.0").repo_type, RepoType::Model);
        assert_eq!(p("0.14.0").repo_type, RepoType::Kernel);
        assert_eq!(p("0.14.0").requirements, RequirementSupport::IntegersOnly);
        assert!(p("0.16.0").exclude_bytecode);
        assert_eq!(p("0.16.2").lock_format, LockFormat::VariantHash);
        let new = p("0.17.2");
        assert_eq!(new.lock_format, LockFormat::KernelLocks);
        assert!(new.transitive && new.check_trust);
        assert_eq!(
            new.variant_preference,
            VariantPreference::ResolverMetalMacos26
        );
        assert_eq!(
            p("0.16.2").variant_preference,
            VariantPreference::ResolverStableAbi
        );
    }

    #[test]
    fn generations_since_kernel_locks() {
        let p = |t| Profile::for_runtime(v(t), ProfileSource::Option);
        assert_eq!(p("0.16.2").generation, Generation::BeforeKernelLocks);
        assert_eq!(p("0.17.2").generation, Generation::V017);
        assert_eq!(p("0.18.3").generation, Generation::V018);
        assert_eq!(p("0.19.1").generation, Generation::V019);
        assert!(!Generation::V017.rocm_minor_fallback() && Generation::V018.rocm_minor_fallback());
        assert!(!Generation::V018.reads_dotted_names() && Generation::V019.reads_dotted_names());
        assert_eq!(Generation::V018.ascend_noarch(), "torch-npu");
        assert_eq!(Generation::V019.ascend_noarch(), "torch-cann");
        for release in ["0.18.3", "0.19.1"] {
            let profile = p(release);
            assert_eq!(profile.lock_format, LockFormat::KernelLocks);
            assert_eq!(profile.repo_type, RepoType::Kernel);
            assert!(profile.transitive && profile.check_trust && profile.exclude_bytecode);
            assert_eq!(profile.requirements, RequirementSupport::IntegersOnly);
            assert_eq!(profile.beyond_modelled(), None);
        }
        assert_eq!(p("0.19.7").beyond_modelled(), None);
        let future = p("0.25.0");
        assert_eq!(future.generation, Generation::V019);
        assert_eq!(
            future.beyond_modelled(),
            Some((v("0.25.0"), NEWEST_MODELLED))
        );
        assert_eq!(
            p("1.0").beyond_modelled(),
            Some((v("1.0"), NEWEST_MODELLED))
        );
        assert_eq!(Profile::default_profile().beyond_modelled(), None);
    }

    #[test]
    fn first_lock_is_for_the_newest_runtime_reading_the_manifest() {
        let integers = [Requirement::Branch(1), Requirement::Revision("main".into())];
        let forms = RequirementForms::of(&integers);
        let first = |forms| {
            detect(&DetectInputs {
                requirement_forms: Some(forms),
                first_lock: true,
                ..Default::default()
            })
            .unwrap()
        };
        let newest = first(forms);
        assert_eq!(newest.runtime, Some(NEWEST_MODELLED));
        assert_eq!(newest.lock_format, LockFormat::KernelLocks);
        assert!(newest.check_trust);
        assert_eq!(newest.source, ProfileSource::FirstLock(forms));
        let strings = [
            Requirement::Branch(1),
            Requirement::Pep440(">=0.1".parse().unwrap()),
        ];
        let old = first(RequirementForms::of(&strings));
        assert_eq!(old.runtime, Some(NEWEST_READING_STRINGS));
        assert_eq!(old.requirements, RequirementSupport::IntegersAndStrings);
        // An existing lock keeps its format.
        let locked = |forms, first_lock| {
            detect(&DetectInputs {
                requirement_forms: Some(forms),
                first_lock,
                lock_format: Some(LockFormat::VariantHash),
                ..Default::default()
            })
            .unwrap()
        };
        let integers_locked = locked(forms, true);
        assert_eq!(integers_locked.lock_format, LockFormat::VariantHash);
        assert_eq!(integers_locked.runtime, None);
        assert!(integers_locked.cache_is_ambiguous());
        // With specifier strings, every later command, writing or not,
        // chooses what the first lock chose: 0.13.0, `models--`.
        for first_lock in [true, false] {
            let later = locked(RequirementForms::of(&strings), first_lock);
            assert_eq!(later.runtime, Some(NEWEST_READING_STRINGS));
            assert_eq!(later.lock_format, LockFormat::VariantHash);
            assert_eq!(later.repo_type, RepoType::Model);
            assert_eq!(later.source, ProfileSource::LockFileAndStrings);
            assert!(!later.cache_is_ambiguous());
        }
        // Not for a command that does not write the lock and finds none.
        let reading = detect(&DetectInputs {
            requirement_forms: Some(forms),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(reading.source, ProfileSource::Default);
    }

    fn fake_env(prefix: &Path, version: &str) {
        let dist = prefix.join(format!(
            "lib/python3.12/site-packages/kernels-{version}.dist-info"
        ));
        fs_err::create_dir_all(&dist).unwrap();
        fs_err::write(
            dist.join("METADATA"),
            format!("Metadata-Version: 2.4\nName: kernels\nVersion: {version}\n\nbody\n"),
        )
        .unwrap();
    }

    #[test]
    fn detection_order() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("proj");
        let venv = tmp.path().join("active");
        fake_env(&project.join(".venv"), "0.10.5");
        fake_env(&venv, "0.17.2");
        let inputs = DetectInputs {
            installed: installed_kernels(&project, None, None),
            ..Default::default()
        };
        let found = detect(&inputs).unwrap();
        assert_eq!(found.runtime, Some(v("0.10.5")));
        assert!(
            matches!(&found.source, ProfileSource::Installed(i) if i.found.to_string() == ".venv")
        );
        let with_venv = DetectInputs {
            installed: installed_kernels(&project, Some(&venv), None),
            ..inputs.clone()
        };
        assert_eq!(detect(&with_venv).unwrap().runtime, Some(v("0.17.2")));
        // An existing variant-hash lock wins over an installed 0.17.
        let locked = DetectInputs {
            lock_format: Some(LockFormat::VariantHash),
            ..with_venv.clone()
        };
        let profile = detect(&locked).unwrap();
        assert_eq!(profile.lock_format, LockFormat::VariantHash);
        assert_eq!(profile.runtime, None);
        let ignored = profile.ignored_installed.as_ref().unwrap();
        assert_eq!(
            (ignored.version, ignored.found.to_string()),
            (v("0.17.2"), "VIRTUAL_ENV".to_owned())
        );
        // ... and is refined by an installed version that writes it.
        let refined = DetectInputs {
            lock_format: Some(LockFormat::VariantHash),
            ..inputs.clone()
        };
        assert_eq!(detect(&refined).unwrap().repo_type, RepoType::Model);
        let overridden = DetectInputs {
            repo_type: Some(RepoType::Kernel),
            ..refined.clone()
        };
        let overridden = detect(&overridden).unwrap();
        assert!(overridden.repo_type == RepoType::Kernel && overridden.repo_type_overridden);
        let manifest = DetectInputs {
            manifest: Some(("0.14", Path::new("pyproject.toml"))),
            ..locked.clone()
        };
        assert_eq!(detect(&manifest).unwrap().runtime, Some(v("0.14")));
        let option = DetectInputs {
            option: Some("0.13.0"),
            ..manifest
        };
        assert_eq!(detect(&option).unwrap().source, ProfileSource::Option);
        let nothing = DetectInputs {
            installed: installed_kernels(tmp.path(), None, None),
            ..Default::default()
        };
        assert_eq!(detect(&nothing).unwrap(), Profile::default_profile());
    }

    #[test]
    fn python_on_path_venv() {
        let tmp = tempfile::tempdir().unwrap();
        let env = tmp.path().join("env");
        fake_env(&env, "0.16.2");
        fs_err::create_dir_all(env.join("bin")).unwrap();
        fs_err::write(env.join("bin/python3"), "").unwrap();
        fs_err::write(env.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let path = std::env::join_paths([tmp.path().join("none"), env.join("bin")]).unwrap();
        let found = installed_kernels(tmp.path(), None, Some(&path)).unwrap();
        assert_eq!(found.version, v("0.16.2"));
        assert_eq!(found.found.to_string(), "python3 on PATH");
    }
}
