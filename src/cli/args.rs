//! Argument groups shared by several commands (`#[command(flatten)]`), so
//! that each flag is declared, documented and read in one place: the project
//! directory, the target runtime, the repository type, the environment
//! overrides and the signature trust settings.

use std::path::PathBuf;

use kernels_types::fit::{Capability, Target};
use kernels_types::wire::RepoType;

use crate::lock::trust_settings::TrustSettings;
use crate::variant::VariantRequest;

/// The positional `PROJECT_DIR` of the commands that work on a project.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProjectArgs {
    /// The project directory (holding `pyproject.toml` and `kernels.lock`).
    /// Default: `--project`, else the nearest directory from the current one
    /// upwards whose `pyproject.toml` has `[tool.kernels]`, else `.`.
    #[arg(value_name = "PROJECT_DIR")]
    pub project_arg: Option<PathBuf>,

    /// The project directory in use (set by [`ProjectArgs::resolve`] from
    /// `project_arg`, `--project` or discovery before the command runs).
    #[arg(skip)]
    pub project_dir: PathBuf,
}

impl ProjectArgs {
    /// The project `dir`, as if it had been given on the command line.
    pub fn at(dir: &std::path::Path) -> ProjectArgs {
        ProjectArgs {
            project_arg: None,
            project_dir: dir.to_owned(),
        }
    }

    /// Sets [`ProjectArgs::project_dir`] from the positional argument and
    /// `--project`, else discovery upwards from the current directory.
    ///
    /// # Errors
    /// Both are given and differ.
    pub fn resolve(&mut self, global: &super::GlobalArgs) -> miette::Result<()> {
        self.project_dir = project_dir(self.project_arg.take(), global)?;
        Ok(())
    }
}

/// `--trust-root` and `--require-signed`: which signatures are accepted, on
/// top of `[tool.kernels] trust-root` / `require-signed`
/// ([`crate::lock::trust_settings`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TrustArgs {
    /// Verify Sigstore signatures against this `trusted_root.json` (a private
    /// Sigstore, or an air-gapped copy). Default: `trust-root` under
    /// `[tool.kernels]`, else the Sigstore production root built into this
    /// binary (never refreshed online).
    #[arg(long, value_name = "FILE")]
    pub trust_root: Option<PathBuf>,

    /// Refuse variants that have no signature (`SignatureBundleMissing`)
    /// instead of accepting them with a warning. Default: `require-signed`
    /// under `[tool.kernels]`.
    #[arg(long)]
    pub require_signed: bool,
}

impl TrustArgs {
    /// `settings` (the project's, or the defaults) with these flags on top.
    pub fn apply(&self, settings: TrustSettings) -> TrustSettings {
        settings.overridden(self.trust_root.as_deref(), self.require_signed)
    }

    /// The trust root of `settings` (those [`TrustArgs::apply`] gave, of the
    /// project in `project_dir`); an error names where the file was given.
    ///
    /// # Errors
    /// The file cannot be read or is not a Sigstore trusted root.
    pub fn root(
        &self,
        settings: &TrustSettings,
        project_dir: &std::path::Path,
    ) -> Result<kernels_trust::TrustRoot, TrustRootSetting> {
        settings.trust_root().map_err(|source| {
            let from = if self.trust_root.is_some() {
                "--trust-root".to_owned()
            } else {
                let manifest = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
                format!(
                    "`trust-root` under [tool.kernels] of {}",
                    manifest.display()
                )
            };
            TrustRootSetting { from, source }
        })
    }
}

/// The trust root a command was given cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("the trust root named by {from} cannot be used")]
#[diagnostic(
    code(kernels::trust::root_setting),
    help(
        "point {from} at the trusted_root.json of your Sigstore instance, or remove it to use the Sigstore production root built into kernels"
    )
)]
pub struct TrustRootSetting {
    /// `--trust-root`, or the pyproject.toml key.
    from: String,
    /// Why the file cannot be used.
    #[source]
    #[diagnostic_source]
    source: kernels_trust::TrustRootError,
}

/// `--target-runtime`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TargetRuntimeArgs {
    /// Target this `kernels` runtime version (for example `0.10.5` or
    /// `0.17.2`): it decides the lock format, the repository type and cache
    /// folder prefix (`models--` up to 0.13, `kernels--` from 0.14), the
    /// variant order, bytecode handling and kernel dependencies. Default:
    /// `target-runtime` under `[tool.kernels]`, else the existing lock's
    /// format, refined by the `kernels` installed in the project's Python
    /// environment.
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,
}

impl TargetRuntimeArgs {
    /// The version given, if any.
    pub fn version(&self) -> Option<&str> {
        self.target_runtime.as_deref()
    }
}

/// `--repo-type`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct RepoTypeArgs {
    /// Override the target runtime's Hub repository type (`kernel` from
    /// runtime 0.14, `model` before), which is also the cache folder prefix
    /// (`kernels--` or `models--`).
    #[arg(long, value_enum)]
    pub repo_type: Option<RepoTypeArg>,
}

/// `--repo-type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RepoTypeArg {
    /// Kernel repositories (reference 0.14+).
    Kernel,
    /// Model repositories (reference ≤0.13).
    Model,
}

impl From<RepoTypeArg> for RepoType {
    fn from(arg: RepoTypeArg) -> Self {
        match arg {
            RepoTypeArg::Kernel => RepoType::Kernel,
            RepoTypeArg::Model => RepoType::Model,
        }
    }
}

impl From<RepoType> for RepoTypeArg {
    fn from(repo_type: RepoType) -> Self {
        match repo_type {
            RepoType::Kernel => RepoTypeArg::Kernel,
            RepoType::Model => RepoTypeArg::Model,
        }
    }
}

/// The `--help` section of the [`EnvArgs`] flags (set per flag, so that the
/// options after them keep their own section).
const ENV_HEADING: &str = "Environment overrides";

/// Environment overrides: choose variants for an image built on a machine
/// without a GPU or without torch (`kernels env` shows the result).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EnvArgs {
    /// Choose for this torch version (`MAJOR.MINOR`, e.g. `2.8`) without asking
    /// Python; needs a backend (`--cuda-version`, `--rocm-version`,
    /// `--xpu-version`, `--metal` or `--cpu`, or the declared target's); the
    /// platform is this machine unless given.
    #[arg(long, help_heading = ENV_HEADING, value_name = "VERSION", value_parser = parse_torch)]
    pub torch_version: Option<(u32, u32)>,
    /// Choose for this CUDA version (e.g. `12.6`).
    #[arg(long, help_heading = ENV_HEADING, value_name = "VERSION", group = "backend")]
    pub cuda_version: Option<String>,
    /// Choose for this ROCm version (e.g. `6.3`).
    #[arg(long, help_heading = ENV_HEADING, value_name = "VERSION", group = "backend")]
    pub rocm_version: Option<String>,
    /// Choose for this Intel XPU (oneAPI) version (e.g. `2025.0`).
    #[arg(long, help_heading = ENV_HEADING, value_name = "VERSION", group = "backend")]
    pub xpu_version: Option<String>,
    /// Choose for Apple Metal (implies `--os darwin --arch aarch64` unless given).
    #[arg(long, help_heading = ENV_HEADING, group = "backend")]
    pub metal: bool,
    /// Choose for no accelerator.
    #[arg(long, help_heading = ENV_HEADING, group = "backend")]
    pub cpu: bool,
    /// Choose for this C++ ABI of torch (Linux).
    #[arg(long, help_heading = ENV_HEADING, value_name = "ABI", value_parser = ["cxx11", "cxx98"])]
    pub cxx_abi: Option<String>,
    /// Choose for this OS (`linux`, `darwin`, `windows`).
    #[arg(long, help_heading = ENV_HEADING, value_name = "OS")]
    pub os: Option<String>,
    /// Choose for this CPU architecture (`x86_64`, `aarch64`).
    #[arg(long, help_heading = ENV_HEADING, value_name = "ARCH")]
    pub arch: Option<String>,
    /// Choose for this Python version (`MAJOR.MINOR`, e.g. `3.12`). Default:
    /// `python` of `[[tool.kernels.targets]]`, else the project's
    /// interpreter, else the lower bound of `requires-python`.
    #[arg(long, help_heading = ENV_HEADING, value_name = "VERSION", value_parser = crate::lock::declared::PythonVersion::parse)]
    pub python_version: Option<crate::lock::declared::PythonVersion>,
    /// Choose for a free-threaded (no-GIL) Python build. Default:
    /// `free-threaded` of `[[tool.kernels.targets]]`, else the project's
    /// interpreter.
    #[arg(long, help_heading = ENV_HEADING)]
    pub free_threaded: bool,
}

impl EnvArgs {
    /// The overrides for the variant layer.
    pub fn overrides(&self) -> crate::variant::EnvOverrides {
        crate::variant::EnvOverrides {
            torch: self.torch_version,
            cuda: self.cuda_version.clone(),
            rocm: self.rocm_version.clone(),
            xpu: self.xpu_version.clone(),
            metal: self.metal,
            cpu: self.cpu,
            cxx11_abi: self.cxx_abi.as_deref().map(|abi| abi == "cxx11"),
            os: self.os.clone(),
            arch: self.arch.clone(),
            python: self.python_version,
            free_threaded: self.free_threaded,
            declared: None,
            requires_python: None,
        }
    }

    /// The same overrides as flags, for hints.
    pub fn flags(&self) -> String {
        let mut out = String::new();
        if let Some((major, minor)) = self.torch_version {
            out.push_str(&format!(" --torch-version {major}.{minor}"));
        }
        for (flag, value) in [
            ("--cuda-version", &self.cuda_version),
            ("--rocm-version", &self.rocm_version),
            ("--xpu-version", &self.xpu_version),
            ("--cxx-abi", &self.cxx_abi),
            ("--os", &self.os),
            ("--arch", &self.arch),
        ] {
            if let Some(value) = value {
                out.push_str(&format!(" {flag} {value}"));
            }
        }
        if let Some(python) = self.python_version {
            out.push_str(&format!(" --python-version {python}"));
        }
        if self.free_threaded {
            out.push_str(" --free-threaded");
        }
        if self.metal {
            out.push_str(" --metal");
        }
        if self.cpu {
            out.push_str(" --cpu");
        }
        out
    }
}

/// The GPUs to check variants against (`--cuda-capability`, `--rocm-arch`),
/// shared by lock, download, verify and env; they take the place of
/// `[tool.kernels] cuda-capabilities`/`rocm-archs` and of the GPU torch sees.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TargetArgs {
    /// Check variants against a CUDA compute capability (`X.Y`, e.g. `9.0`;
    /// repeatable) instead of the GPU torch sees.
    #[arg(long = "cuda-capability", value_name = "X.Y", value_parser = parse_capability, action = clap::ArgAction::Append, help_heading = TARGET_HEADING)]
    pub cuda_capability: Vec<Capability>,
    /// Check variants against a ROCm GPU arch (e.g. `gfx942`; repeatable)
    /// instead of the GPU torch sees.
    #[arg(long = "rocm-arch", value_name = "ARCH", value_parser = Target::rocm, action = clap::ArgAction::Append, help_heading = TARGET_HEADING)]
    pub rocm_arch: Vec<Target>,
}

/// Help heading of [`TargetArgs`].
const TARGET_HEADING: &str = "Target GPUs";

impl TargetArgs {
    /// The targets given, CUDA then ROCm (empty when none is).
    pub fn targets(&self) -> Vec<Target> {
        self.cuda_capability
            .iter()
            .map(|c| Target::Cuda(*c))
            .chain(self.rocm_arch.iter().cloned())
            .collect()
    }
}

/// `9.0` → a capability; the error says what is expected.
fn parse_capability(s: &str) -> Result<Capability, String> {
    s.parse()
        .map_err(|err: kernels_types::fit::BadTarget| err.to_string())
}

/// `2.8` → `(2, 8)`.
fn parse_torch(s: &str) -> Result<(u32, u32), String> {
    let (major, minor) = s
        .split_once('.')
        .ok_or_else(|| format!("`{s}` is not MAJOR.MINOR (for example `2.8`)"))?;
    let minor = minor.split('.').next().unwrap_or(minor);
    match (major.parse(), minor.parse()) {
        (Ok(major), Ok(minor)) => Ok((major, minor)),
        _ => Err(format!("`{s}` is not MAJOR.MINOR (for example `2.8`)")),
    }
}

/// `--locked` and `--frozen`, on the commands that read `kernels.lock`.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct LockModeArgs {
    /// Require an up-to-date lock: fail, without changing anything, when
    /// `kernels.lock` is missing or when resolving `pyproject.toml` again would change
    /// it. Also set by a true `KERNELS_LOCKED`.
    #[arg(long, conflicts_with = "frozen")]
    pub locked: bool,

    /// Use `kernels.lock` as it is: no check that it still matches `pyproject.toml`,
    /// and no update of it; fail when it is missing. Also set by a true
    /// `KERNELS_FROZEN` (which `kernels lock --check` ignores).
    #[arg(long)]
    pub frozen: bool,
}

/// `--no-progress`, on the commands that draw progress.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ProgressArgs {
    /// Show no progress bars or spinners, only plain status lines (also set
    /// by a true `HF_HUB_DISABLE_PROGRESS_BARS`).
    #[arg(long)]
    pub no_progress: bool,
}

/// `--cache-dir`, on the commands that use the Hub cache.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CacheArgs {
    /// The Hugging Face hub cache to read and write. Default: `HF_HUB_CACHE`,
    /// else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    #[arg(
        long,
        value_name = "DIR",
        env = "KERNELS_CACHE",
        global = true,
        hide_env_values = true
    )]
    pub cache_dir: Option<std::path::PathBuf>,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text.
    #[default]
    Text,
    /// One JSON document on stdout.
    Json,
}

/// Variant selection and repository type, shared by `download` and `verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct SelectArgs {
    /// Use this build variant (a directory under `build/`); repeatable. Each
    /// kernel takes the named variants it has, and a kernel with none of them
    /// is an error. Without it, the variant is chosen for the project's torch.
    #[arg(long = "variant", value_name = "NAME", conflicts_with = "all_variants")]
    pub variants: Vec<String>,

    /// Use every build variant of every kernel.
    #[arg(long)]
    pub all_variants: bool,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// The environment the variant is chosen for, instead of asking torch.
    #[command(flatten)]
    pub env: EnvArgs,

    /// The GPUs the variants must load on (`--cuda-capability`, `--rocm-arch`).
    #[command(flatten)]
    pub targets: TargetArgs,
}

impl SelectArgs {
    /// The variants asked for: `--all-variants`, the `--variant` names, or
    /// detection from torch.
    pub fn request(&self) -> VariantRequest {
        if self.all_variants {
            VariantRequest::All
        } else if !self.variants.is_empty() {
            VariantRequest::Named(self.variants.clone())
        } else {
            VariantRequest::Detect
        }
    }

    /// The same selection as command-line flags, for hints (`--all-variants`,
    /// `--variant A --variant B`, `--repo-type model`, or nothing).
    pub fn flags(&self) -> String {
        let mut out = String::new();
        if self.all_variants {
            out.push_str(" --all-variants");
        }
        for v in &self.variants {
            out.push_str(&format!(" --variant {v}"));
        }
        if let Some(version) = self.runtime.version() {
            out.push_str(&format!(" --target-runtime {version}"));
        }
        match self.repo.repo_type {
            Some(RepoTypeArg::Model) => out.push_str(" --repo-type model"),
            Some(RepoTypeArg::Kernel) => out.push_str(" --repo-type kernel"),
            None => {}
        }
        out.push_str(&self.env.flags());
        for capability in &self.targets.cuda_capability {
            out.push_str(&format!(" --cuda-capability {capability}"));
        }
        for arch in &self.targets.rocm_arch {
            if let kernels_types::fit::Target::Rocm(arch) = arch {
                out.push_str(&format!(" --rocm-arch {arch}"));
            }
        }
        out
    }
}

/// The project directory of a command: the positional `PROJECT_DIR`, else
/// `--project`, else the nearest directory upwards from the current one whose
/// `pyproject.toml` has `[tool.kernels]`, else `.` (whose missing
/// `pyproject.toml` the command then reports).
pub fn project_dir(
    positional: Option<PathBuf>,
    global: &super::GlobalArgs,
) -> miette::Result<PathBuf> {
    match (positional, &global.project) {
        (Some(dir), Some(project)) if dir != *project => Err(miette::miette!(
            code = "kernels::project::twice",
            help = "give the project directory once, either as PROJECT_DIR or with --project",
            "two project directories given: {} (PROJECT_DIR) and {} (--project)",
            dir.display(),
            project.display()
        )),
        (Some(dir), _) => Ok(dir),
        (None, Some(dir)) => Ok(dir.clone()),
        // Named relative to the current directory (`.`, `..`, `../..`), as
        // messages named it before discovery.
        (None, None) => Ok(std::env::current_dir()
            .ok()
            .and_then(|cwd| {
                let found = crate::lock::manifest::discover_project(&cwd)?;
                let up = cwd.components().count() - found.components().count();
                Some(match up {
                    0 => PathBuf::from("."),
                    n => std::iter::repeat_n("..", n).collect(),
                })
            })
            .unwrap_or_else(|| PathBuf::from("."))),
    }
}
