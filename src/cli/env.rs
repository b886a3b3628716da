//! `kernels env`: the environment the variant choice is made from, and where
//! each value came from (like `hf env`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::OutputFormat;
use super::args::{EnvArgs, RepoTypeArgs, TargetRuntimeArgs};
use super::json::{
    EnvDoc, EnvLockDoc, MlxMetalDoc, NewerThanModelledDoc, PythonTargetDoc, TargetRuntimeDoc,
    TargetsDoc, TorchDoc,
};
use super::printer::Printer;
use super::progress::ProgressMode;
use super::project::profile::{
    ProfileInputs, beyond_modelled_note, choose_profile_with, describe, describe_preference,
};
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::lock::profile::{Profile, VariantPreference};
use crate::variant::python_target::{PythonInputs, PythonTarget};

use crate::variant::{EnvSources, FitPolicy, ProbeScope, ProjectPython, TorchEnv, VariantError};

/// At most this many rejected variants are named per kernel in text.
const ENV_REJECTED: usize = 5;

/// Arguments of `kernels env`.
#[derive(Debug, clap::Args)]
pub struct EnvCmdArgs {
    /// `[PROJECT_DIR]`, as `kernels download` takes it.
    #[command(flatten)]
    pub project: super::args::ProjectArgs,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// The environment overrides of `kernels download`.
    #[command(flatten)]
    pub env: EnvArgs,

    /// Output format (on stdout).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::args::CacheArgs,

    /// `--cuda-capability` / `--rocm-arch`.
    #[command(flatten)]
    pub targets: super::args::TargetArgs,
}

/// The variant explanation of every kernel of the project's lock (as
/// `kernels download --explain`): `None` without a `kernels.lock`, `Err` with
/// the reason when no choice can be made (torch not found, unreadable lock).
fn explain_lock(
    args: &EnvCmdArgs,
    settings: &Settings,
    python: &ProjectPython,
    printer: &Printer,
    policy: &FitPolicy,
) -> Option<Result<super::project::explain::Explained, String>> {
    let dir = &args.project.project_dir;
    if !dir.join(LOCK_FILE_NAME).is_file() {
        return None;
    }
    let select = super::args::SelectArgs {
        variants: Vec::new(),
        all_variants: false,
        runtime: args.runtime.clone(),
        repo: args.repo,
        env: args.env.clone(),
        targets: super::args::TargetArgs::default(),
    };
    let explained = (|| {
        let read =
            super::project::read::read_lock(dir, &select, python, &printer.quiet_if(true), false)?;
        let (kernels, lock_format, options) = read.into_options(None);
        // Retries are shown even with `--quiet`, as the failures are.
        let client =
            super::project::client::client_showing_retries(settings, printer, ProgressMode::Lines)?;
        super::project::explain::collect(&super::project::explain::ExplainRun {
            client: &client,
            cache: &settings.cache(),
            project_dir: dir,
            lock_format,
            kernels: &kernels,
            options: &options,
            printer,
            // Offline and cheap: the metadata the cache has.
            fit: Some(crate::install::explain::FitRequest {
                policy,
                fetch: false,
            }),
            local: None,
        })
    })();
    Some(explained.map_err(|err: miette::Report| err.to_string()))
}

/// Prints the environment and, when the project has a `kernels.lock`, the
/// variant each locked kernel gets in it and why every other is rejected;
/// exit 0 even without torch (that is reported).
pub fn run(args: EnvCmdArgs, settings: &Settings, printer: &Printer) -> miette::Result<ExitCode> {
    let dir = &args.project.project_dir;
    let lock_path = dir.join(LOCK_FILE_NAME);
    settings.note_runtime_overrides(printer);
    let tool = ToolSettings::read(dir).ok().flatten();
    let manifest_path = dir.join(MANIFEST_FILE_NAME);
    // One start of the project's interpreter answers the installed runtime,
    // torch, and the lock's variants below.
    let python = ProjectPython::for_project(dir, crate::cli::settings::virtual_env().as_deref())
        .with_modules(kernels_types::python_depends::ALL_MODULES);
    let overrides = args
        .env
        .overrides()
        .with_declared(ToolSettings::declared_target_at(
            tool.as_ref(),
            &manifest_path,
        ));
    let profile = env_profile(&args, tool.as_ref(), &python, &overrides, printer)?;
    let generation = crate::variant::VariantRules::of_profile(&profile).generation;
    let resolved = overrides.resolve_for(&python, generation);
    let noarch = !matches!(
        profile.variant_preference,
        VariantPreference::Exact { noarch: false }
    );
    let runtime = describe(&profile);
    if let Some(note) = beyond_modelled_note(&profile) {
        printer.status(format_args!("note: {note}"));
    }
    // The GPU and modules of the one probe (not asked when the environment
    // is given by flags).
    let probe = overrides
        .needs_python()
        .then(|| python.probe(ProbeScope::Torch).ok())
        .flatten();
    if let Some(note) = several_targets_note(tool.as_ref(), &manifest_path, &overrides) {
        printer.status(format_args!("note: {note}"));
    }
    let mut policy =
        super::project::fit::for_project(dir, &args.targets.targets(), probe, profile.runtime);
    // The declared images: each variant's compiled files are checked from the cache.
    policy.images = super::project::fit::images(dir, None)?;
    let python_target = python_target(&overrides, tool.as_ref(), &manifest_path, &python);
    let local = local_sources(settings, dir, &lock_path, &profile, &resolved)?;
    let gpus = super::project::fit::attributed_gpus(&policy.targets, tool.as_ref());
    let report = Report {
        local,
        gpus,
        python_target,
        policy,
        runtime: runtime
            .strip_prefix("Target runtime: ")
            .unwrap_or(&runtime)
            .to_owned(),
        args: &args,
        settings,
        printer,
        lock_path,
        python,
        resolved,
        profile,
        noarch,
    };
    match args.format {
        OutputFormat::Json => report.print_json(),
        OutputFormat::Text => report.print_text(),
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile `kernels env` describes for the project of `args`
/// ([`choose_profile_with`] with the `--target-runtime` flag, the manifest's
/// target runtime and the format of its `kernels.lock`, when readable);
/// the project's interpreter is probed for torch only when `overrides` need
/// it, and the choice's own notes are not printed.
///
/// # Errors
///
/// Those of [`choose_profile_with`].
fn env_profile(
    args: &EnvCmdArgs,
    tool: Option<&ToolSettings>,
    python: &ProjectPython,
    overrides: &crate::variant::EnvOverrides,
    printer: &Printer,
) -> miette::Result<Profile> {
    let dir = &args.project.project_dir;
    let lock_format = Lockfile::read(&dir.join(LOCK_FILE_NAME))
        .ok()
        .map(|l| l.format());
    choose_profile_with(
        &ProfileInputs {
            project_dir: dir,
            option: args.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool, &dir.join(MANIFEST_FILE_NAME)),
            lock_format,
            repo_type: args.repo.repo_type,
            python,
            scope: ProbeScope::torch_if(overrides.needs_python()),
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )
}

/// Which source each loading API uses per locked kernel of `lock_path` with
/// a local build ([`super::project::local::gather`]), for the environment
/// `resolved` when torch was found.
fn local_sources(
    settings: &Settings,
    dir: &Path,
    lock_path: &Path,
    profile: &Profile,
    resolved: &Result<(TorchEnv, EnvSources), VariantError>,
) -> miette::Result<super::json::LocalSourcesDoc> {
    let locked = Lockfile::read(lock_path)
        .and_then(|l| l.locked_kernels(lock_path))
        .unwrap_or_default();
    let rules = crate::variant::VariantRules::of_profile(profile);
    let choice_env = resolved.as_ref().ok().map(|(env, _)| (env, rules));
    Ok(super::project::local::gather(
        settings, dir, &locked, choice_env,
    )?)
}

/// The target's Python ([`PythonTarget::resolve`]): `--python-version`, the
/// declared target, the project's interpreter (asked for its version only
/// when neither gives it, reusing a probe already run), `requires-python`.
fn python_target(
    overrides: &crate::variant::EnvOverrides,
    tool: Option<&ToolSettings>,
    manifest_path: &Path,
    python: &ProjectPython,
) -> PythonTarget {
    let declared = ToolSettings::declared_target_at(tool, manifest_path);
    let ask_interpreter =
        overrides.python.is_none() && declared.is_none_or(|(t, _)| t.python.is_none());
    PythonTarget::resolve(&PythonInputs {
        flag: overrides.python,
        flag_free_threaded: overrides.free_threaded,
        declared,
        interpreter: ask_interpreter
            .then(|| python.probe(ProbeScope::Runtime).ok())
            .flatten()
            .and_then(|p| p.interpreter)
            .map(|found| (python.path(), found)),
        requires_python: tool
            .and_then(|t| t.requires_python)
            .map(|floor| (floor, manifest_path)),
    })
}

/// With several `[[tool.kernels.targets]]` and no environment flag, the one
/// note saying which environment `kernels env` shows (the project's
/// interpreter; `kernels download` fetches for each declared target) and
/// naming the targets; `None` otherwise.
fn several_targets_note(
    tool: Option<&ToolSettings>,
    manifest_path: &Path,
    overrides: &crate::variant::EnvOverrides,
) -> Option<String> {
    if !overrides.is_empty() {
        return None;
    }
    let note = ToolSettings::several_targets_note(tool, manifest_path)?;
    let (envs, _) = super::project::declared::declared_envs(tool?, manifest_path);
    let named: Vec<String> = envs
        .iter()
        .map(|env| format!("{} ({})", env.key, env.label))
        .collect();
    Some(if named.is_empty() {
        note
    } else {
        format!("{note}. Declared: {}", named.join(", "))
    })
}

/// What `kernels env` found, for printing.
struct Report<'a> {
    args: &'a EnvCmdArgs,
    settings: &'a Settings,
    printer: &'a Printer,
    lock_path: PathBuf,
    /// The project's Python interpreter (asked at most once).
    python: ProjectPython,
    /// The environment (and where each value came from), or why torch
    /// could not be asked.
    resolved: Result<(TorchEnv, EnvSources), VariantError>,
    profile: Profile,
    /// Whether the target runtime knows `noarch` variants.
    noarch: bool,
    /// The target runtime line without its `Target runtime: ` head.
    runtime: String,
    /// The targets and rules each locked variant's fit is checked against.
    policy: FitPolicy,
    /// The `Target GPUs` value, each GPU with its source ([`super::project::fit::attributed_gpus`]).
    gpus: String,
    /// The target's Python version and build.
    python_target: PythonTarget,
    /// The locked kernels with a local build and what loads what.
    local: super::json::LocalSourcesDoc,
}

impl Report<'_> {
    /// The `--format json` document.
    fn print_json(&self) {
        let (settings, profile) = (self.settings, &self.profile);
        let explained = explain_lock(
            self.args,
            settings,
            &self.python,
            self.printer,
            &self.policy,
        );
        let path = self.lock_path.as_path();
        self.printer.json(&EnvDoc {
            schema: EnvDoc::SCHEMA,
            command: "env",
            kernels_version: env!("CARGO_PKG_VERSION"),
            python: self.python.path(),
            torch: self
                .resolved
                .as_ref()
                .ok()
                .filter(|(env, _)| !env.no_torch)
                .map(|(env, sources)| TorchDoc::new(env, sources, self.noarch)),
            torch_error: match &self.resolved {
                Err(err) => Some(err.to_string()),
                Ok((env, _)) if env.no_torch => Some(format!(
                    "torch is not importable in {}; MLX reports a Metal device",
                    self.python.path().display()
                )),
                Ok(_) => None,
            },
            mlx_metal: self.resolved.as_ref().ok().and_then(|(env, sources)| {
                MlxMetalDoc::new(
                    env,
                    sources,
                    crate::variant::VariantRules::of_profile(profile),
                )
            }),
            target_runtime: TargetRuntimeDoc {
                version: profile.runtime.map(|v| v.to_string()),
                lock_format: profile.lock_format.id(),
                repo_type: profile.repo_type.as_str(),
                cache_prefix: profile.cache_prefix(),
                description: &self.runtime,
                newer_than_modelled: profile.beyond_modelled().map(|(runtime, modelled)| {
                    NewerThanModelledDoc {
                        version: runtime.to_string(),
                        assumed: modelled.to_string(),
                        note: beyond_modelled_note(profile).unwrap_or_default(),
                    }
                }),
            },
            targets: TargetsDoc {
                description: self.gpus.clone(),
                ..TargetsDoc::new(&self.policy.targets)
            },
            python_target: PythonTargetDoc {
                target: &self.python_target,
                description: self.python_target.to_string(),
            },
            cache_dir: &settings.cache_dir,
            runtime_overrides: &settings.runtime_overrides,
            local_sources: &self.local,
            endpoint: kernels_types::text::redact(&settings.endpoint),
            offline: settings.offline,
            token: settings.token.is_some(),
            lock: explained.as_ref().map(|e| match e {
                Ok(e) => EnvLockDoc {
                    path,
                    kernels: &e.kernels,
                    failed: &e.failed,
                    error: None,
                },
                Err(err) => EnvLockDoc {
                    path,
                    kernels: &[],
                    failed: &[],
                    error: Some(err),
                },
            }),
        });
    }

    /// `name            value  (from source)`.
    fn row(&self, name: &str, value: &str, from: &str) {
        if from.is_empty() {
            self.printer.data(format_args!("{name:<16}{value}"));
        } else {
            self.printer
                .data(format_args!("{name:<16}{value}  (from {from})"));
        }
    }

    /// The text report: one row per value, then the variants of the lock.
    fn print_text(&self) {
        let settings = self.settings;
        self.row("kernels", env!("CARGO_PKG_VERSION"), "");
        let from = if crate::cli::settings::virtual_env()
            .is_some_and(|venv| self.python.path().starts_with(venv))
        {
            "VIRTUAL_ENV"
        } else if self
            .python
            .path()
            .starts_with(&self.args.project.project_dir)
        {
            "the project's .venv"
        } else {
            "PATH"
        };
        let mut python = self.python.path().display().to_string();
        if let Err(VariantError::PythonFailed { .. }) = self.python.probe(ProbeScope::Runtime) {
            python.push_str(" (cannot be run)");
        }
        self.row("Python", &python, from);
        self.print_torch_rows();
        self.row(
            "Variant order",
            describe_preference(self.profile.variant_preference, self.profile.runtime),
            "",
        );
        self.row("Target runtime", &self.runtime, "");
        self.row("Target GPUs", &self.gpus, "");
        self.row("Target Python", &self.python_target.to_string(), "");
        let source = match settings.cache_dir_source {
            "default" => "",
            other => other,
        };
        self.row("Cache", &settings.display_path(&settings.cache_dir), source);
        self.row(
            "Endpoint",
            &kernels_types::text::redact(&settings.endpoint),
            "",
        );
        if settings.offline {
            self.row("Offline", "yes", "");
        }
        let token = if settings.token.is_some() {
            "set"
        } else {
            "none"
        };
        self.row("Token", token, "");
        // Printed after the rows, which need no request.
        self.print_lock_variants();
        super::project::local::print_text(self.printer, &self.local);
    }

    /// The rows of the torch environment, or why torch was not found.
    fn print_torch_rows(&self) {
        let (env, sources) = match &self.resolved {
            Ok(found) => found,
            Err(err) => return self.row("torch", &format!("not found: {err}"), ""),
        };
        let torch = if env.no_torch {
            "none (MLX on Metal)".to_owned()
        } else {
            format!("{}.{}", env.major, env.minor)
        };
        self.row("torch", &torch, &sources.torch.to_string());
        let backend = env.describe();
        let backend = backend.split(", ").nth(1).unwrap_or_default().to_owned();
        self.row("Backend", &backend, &sources.backend.to_string());
        if env.system.eq_ignore_ascii_case("linux") {
            self.row(
                "C++ ABI",
                if env.cxx11_abi { "cxx11" } else { "cxx98" },
                &sources.cxx_abi.to_string(),
            );
        }
        self.row(
            "Platform",
            &format!("{}-{}", env.machine, env.system.to_lowercase()),
            &sources.platform.to_string(),
        );
        let rules = crate::variant::VariantRules::of_profile(&self.profile);
        self.row(
            "Preferred",
            &env.preferred(rules, self.noarch).join(", "),
            "",
        );
    }

    /// The variant of each locked kernel, when the project has a lock.
    fn print_lock_variants(&self) {
        let printer = self.printer;
        let lock_path = self.lock_path.display();
        match explain_lock(
            self.args,
            self.settings,
            &self.python,
            printer,
            &self.policy,
        ) {
            None => {}
            Some(Ok(e)) => {
                printer.data(format_args!("\nVariants for {lock_path}:"));
                if !self.policy.images.is_empty() {
                    let line = super::project::fit::images_line(&self.policy.images);
                    printer.data(format_args!("  {line} (from the cache)"));
                }
                for kernel in &e.kernels {
                    super::project::explain::print_text(printer, kernel, Some(ENV_REJECTED));
                }
                if !e.failed.is_empty() {
                    printer.data(format_args!(
                        "  {} could not be listed (the error is above)",
                        super::progress::plural(e.failed.len(), "kernel")
                    ));
                }
            }
            Some(Err(err)) => {
                printer.data(format_args!(
                    "\nVariants for {lock_path}: cannot choose: {err}"
                ));
            }
        }
    }
}
