//! `kernels lock`.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::fs::write_atomic;
use crate::hub::HubClient;
use crate::hub::types::RepoType;
use crate::lockfile::{LOCK_FILE_NAME, LockFormat, Lockfile};
use crate::locking::{LockOptions, lock_project};
use crate::manifest::Manifest;
use crate::profile::{DetectInputs, Profile, detect};
use crate::repo_id::RepoId;
use crate::settings::Settings;

/// Arguments of `kernels lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Project directory holding `pyproject.toml`.
    #[arg(default_value = ".")]
    pub project_dir: PathBuf,

    /// Write the lock for this `kernels` runtime version (for example `0.10.5`
    /// or `0.17.2`): it decides the lock format, repository type, bytecode
    /// handling and kernel dependencies. Default: `target-runtime` under
    /// `[tool.kernels]`, else the existing lock's format, else the `kernels`
    /// installed in the project's Python environment.
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,

    /// Override the target runtime's Hub repository type (`kernel` from
    /// runtime 0.14, `model` before).
    #[arg(long, value_enum)]
    pub repo_type: Option<RepoTypeArg>,

    /// Lock this repository even if its publisher is not a trusted kernel
    /// publisher (runtime 0.17+ checks trust); repeatable. Also `trust = [...]`
    /// under `[tool.kernels]`.
    #[arg(long = "trust", value_name = "REPO_ID")]
    pub trust: Vec<RepoId>,

    /// Lock repositories that exist only as `model` repositories through the
    /// `model` API (runtimes ≥0.14 cannot load them).
    #[arg(long)]
    pub allow_model_repos: bool,
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

/// Chooses the profile of a command from its option, the `[tool.kernels]`
/// settings, the existing lock and the installed `kernels`, applies the
/// `--repo-type` override and prints the one `Target runtime: …` line.
pub(crate) fn choose_profile(
    project_dir: &std::path::Path,
    option: Option<&str>,
    manifest_version: Option<(&str, &std::path::Path)>,
    lock_format: Option<LockFormat>,
    repo_type: Option<RepoTypeArg>,
    quiet: bool,
) -> miette::Result<Profile> {
    let virtual_env = crate::settings::virtual_env();
    let path_var = crate::settings::path_var();
    let mut profile = detect(&DetectInputs {
        option,
        manifest: manifest_version,
        lock_format,
        project_dir: Some(project_dir),
        virtual_env: virtual_env.as_deref(),
        path_var: path_var.as_deref(),
    })?;
    if let Some(repo_type) = repo_type {
        profile = profile.with_repo_type(repo_type.into());
    }
    if !quiet {
        eprintln!("{}", profile.describe());
        if let Some(warning) = profile.warning() {
            eprintln!("warning: {warning}");
        }
    }
    Ok(profile)
}

/// Resolves `[tool.kernels.dependencies]` for the target profile and writes
/// `kernels.lock` in its format, atomically and only when its bytes change.
/// Nothing is written unless every dependency resolved. Status goes to stderr.
pub fn run(args: LockArgs, settings: &Settings, quiet: bool) -> miette::Result<ExitCode> {
    let manifest = Manifest::read(&args.project_dir)?;
    let lock_path = args.project_dir.join(LOCK_FILE_NAME);
    let old = std::fs::read(&lock_path).ok();
    let old_format = old
        .as_deref()
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(|text| Lockfile::parse(text, &lock_path).ok())
        .map(|lock| lock.format());
    let profile = choose_profile(
        &args.project_dir,
        args.target_runtime.as_deref(),
        manifest
            .settings
            .target_runtime
            .as_deref()
            .map(|v| (v, manifest.path.as_path())),
        old_format,
        args.repo_type,
        quiet,
    )?;
    let mut trust = args.trust.clone();
    trust.extend(manifest.settings.trust.iter().cloned());
    let options = LockOptions {
        trust,
        allow_model_repos: args.allow_model_repos,
    };
    let client = HubClient::new(settings)?;
    let outcome =
        super::runtime()?.block_on(lock_project(&client, &profile, &manifest, &options))?;
    let json = outcome.lockfile.to_json();

    if !quiet {
        for warning in &outcome.warnings {
            eprintln!("warning: {warning}");
        }
        for line in &outcome.locked {
            eprintln!("{line}");
        }
        if let Some(old_format) = old_format
            && old_format != profile.lock_format
        {
            eprintln!(
                "warning: {} was in the {} format; it is rewritten in the {} format",
                lock_path.display(),
                format_name(old_format),
                format_name(profile.lock_format)
            );
        }
    }
    if old.as_deref() == Some(json.as_bytes()) {
        if !quiet {
            eprintln!("{} is up to date", lock_path.display());
        }
    } else {
        write_atomic(&lock_path, json.as_bytes()).map_err(|err| {
            miette::miette!(
                code = "kernels::lock::write",
                help = "check that the project directory is writable",
                "cannot write {}: {err}",
                lock_path.display()
            )
        })?;
        if !quiet {
            eprintln!("Wrote {}", lock_path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn format_name(format: LockFormat) -> &'static str {
    match format {
        LockFormat::VariantHash => "variant-hash (kernels ≤0.16)",
        LockFormat::KernelLocks => "KernelLocks (kernels 0.17)",
    }
}
