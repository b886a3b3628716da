//! `kernels env`: the environment the variant choice is made from, and where
//! each value came from (like `hf env`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::OutputFormat;
use super::download::EnvArgs;
use super::lock::RepoTypeArg;
use super::profile::{choose_profile, describe, describe_preference};
use crate::cli::settings::Settings;
use crate::lock::format::{LOCK_FILE_NAME, Lockfile};
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::lock::profile::VariantPreference;
use crate::variant::project_python;

/// At most this many rejected variants are named per kernel in text.
const ENV_REJECTED: usize = 5;

/// The `schema` of `kernels env --format json` (`docs/json-output.md`).
pub const ENV_SCHEMA: u32 = 1;

/// Arguments of `kernels env`.
#[derive(Debug, clap::Args)]
pub struct EnvCmdArgs {
    /// The project directory (set from the global `--project`, else found
    /// upwards from the current directory).
    #[arg(skip)]
    pub project_dir: PathBuf,

    /// Target this `kernels` runtime version (as `kernels download`).
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,

    /// Override the Hub repository type (as `kernels download`).
    #[arg(long, value_enum)]
    pub repo_type: Option<RepoTypeArg>,

    /// The environment overrides of `kernels download`.
    #[command(flatten)]
    pub env: EnvArgs,

    /// Output format (on stdout).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: super::CacheArgs,
}

/// The variant explanation of every kernel of the project's lock (as
/// `kernels download --explain`): `None` without a `kernels.lock`, `Err` with
/// the reason when no choice can be made (torch not found, unreadable lock).
fn explain_lock(
    args: &EnvCmdArgs,
    settings: &Settings,
) -> Option<Result<super::explain::Explained, String>> {
    let dir = &args.project_dir;
    if !dir.join(LOCK_FILE_NAME).is_file() {
        return None;
    }
    let select = super::download::SelectArgs {
        variants: Vec::new(),
        all_variants: false,
        target_runtime: args.target_runtime.clone(),
        repo_type: args.repo_type,
        env: args.env.clone(),
    };
    let explained = (|| {
        let read = super::download::read_lock(dir, &select, true)?;
        let options = crate::install::DownloadOptions {
            repo_type: read.repo_type,
            selection: read.selection,
            concurrency: crate::install::DEFAULT_CONCURRENCY,
            refs: read.refs,
            refresh: false,
        };
        let client = super::download::client_showing_retries(settings, false)?;
        super::explain::collect(
            &client,
            &settings.cache(),
            dir,
            read.format,
            &read.kernels,
            &options,
        )
    })();
    Some(explained.map_err(|err: miette::Report| err.to_string()))
}

/// Prints the environment and, when the project has a `kernels.lock`, the
/// variant each locked kernel gets in it and why every other is rejected;
/// exit 0 even without torch (that is reported).
pub fn run(args: EnvCmdArgs, settings: &Settings) -> miette::Result<ExitCode> {
    let dir = &args.project_dir;
    let lock_path = dir.join(LOCK_FILE_NAME);
    let lock_format = Lockfile::read(&lock_path).ok().map(|l| l.format());
    let tool = ToolSettings::read(dir).ok().flatten();
    let manifest_path = dir.join(MANIFEST_FILE_NAME);
    let profile = choose_profile(
        dir,
        args.target_runtime.as_deref(),
        tool.as_ref()
            .and_then(|t| t.target_runtime.as_deref())
            .map(|v| (v, manifest_path.as_path())),
        lock_format,
        args.repo_type,
        true,
    )?;
    let python = project_python(dir, crate::cli::settings::virtual_env().as_deref());
    let overrides = args.env.overrides();
    let resolved = overrides.resolve(&python);
    let noarch = !matches!(
        profile.variant_preference,
        VariantPreference::Exact { noarch: false }
    );
    let runtime = describe(&profile);
    let runtime = runtime.strip_prefix("Target runtime: ").unwrap_or(&runtime);
    let cache = settings.display_path(&settings.cache_dir);
    match args.format {
        OutputFormat::Json => {
            let explained = explain_lock(&args, settings);
            let torch = match &resolved {
                Ok((env, sources)) => serde_json::json!({
                    "version": format!("{}.{}", env.major, env.minor),
                    "backend": env.compute(),
                    "cuda": env.cuda,
                    "rocm": env.hip,
                    "xpu": env.xpu,
                    "metal": env.mps,
                    "cxx11_abi": env.cxx11_abi,
                    "os": env.system.to_lowercase(),
                    "arch": env.machine,
                    "arch_variant": env.arch_variant(),
                    "preference": env.preference(noarch),
                    "sources": sources,
                }),
                Err(_) => serde_json::Value::Null,
            };
            let doc = serde_json::json!({
                "schema": ENV_SCHEMA,
                "command": "env",
                "kernels_version": env!("CARGO_PKG_VERSION"),
                "python": python,
                "torch": torch,
                "torch_error": resolved.as_ref().err().map(|e| e.to_string()),
                "target_runtime": {
                    "version": profile.runtime.map(|v| v.to_string()),
                    "lock_format": profile.lock_format.id(),
                    "repo_type": profile.repo_type.as_str(),
                    "cache_prefix": profile.cache_prefix(),
                    "description": runtime,
                },
                "cache_dir": settings.cache_dir,
                "endpoint": settings.endpoint,
                "offline": settings.offline,
                "token": settings.token.is_some(),
                "lock": explained.as_ref().map(|e| match e {
                    Ok(e) => serde_json::json!({
                        "path": lock_path,
                        "kernels": e.kernels,
                        "failed": e.failed,
                        "error": null,
                    }),
                    Err(err) => serde_json::json!({
                        "path": lock_path,
                        "kernels": [],
                        "failed": [],
                        "error": err,
                    }),
                }),
            });
            println!("{doc:#}");
        }
        OutputFormat::Text => {
            let row = |name: &str, value: &str, from: &str| {
                if from.is_empty() {
                    println!("{name:<16}{value}");
                } else {
                    println!("{name:<16}{value}  (from {from})");
                }
            };
            row("kernels", env!("CARGO_PKG_VERSION"), "");
            let from = if crate::cli::settings::virtual_env()
                .is_some_and(|venv| python.starts_with(venv))
            {
                "VIRTUAL_ENV"
            } else if python.starts_with(dir) {
                "the project's .venv"
            } else {
                "PATH"
            };
            row("Python", &python.display().to_string(), from);
            match &resolved {
                Ok((env, sources)) => {
                    row(
                        "torch",
                        &format!("{}.{}", env.major, env.minor),
                        &sources.torch.to_string(),
                    );
                    let backend = env.describe();
                    let backend = backend.split(", ").nth(1).unwrap_or_default().to_owned();
                    row("Backend", &backend, &sources.backend.to_string());
                    if env.system.eq_ignore_ascii_case("linux") {
                        row(
                            "C++ ABI",
                            if env.cxx11_abi { "cxx11" } else { "cxx98" },
                            &sources.cxx_abi.to_string(),
                        );
                    }
                    row(
                        "Platform",
                        &format!("{}-{}", env.machine, env.system.to_lowercase()),
                        &sources.platform.to_string(),
                    );
                    row("Preferred", &env.preference(noarch).join(", "), "");
                }
                Err(err) => row("torch", &format!("not found: {err}"), ""),
            }
            row(
                "Variant order",
                describe_preference(profile.variant_preference),
                "",
            );
            row("Target runtime", runtime, "");
            let source = match settings.cache_dir_source {
                "default" => "",
                other => other,
            };
            row("Cache", &cache, source);
            row("Endpoint", &settings.endpoint, "");
            if settings.offline {
                row("Offline", "yes", "");
            }
            row(
                "Token",
                if settings.token.is_some() {
                    "set"
                } else {
                    "none"
                },
                "",
            );
            // Printed after the rows, which need no request.
            match explain_lock(&args, settings) {
                None => {}
                Some(Ok(e)) => {
                    println!("\nVariants for {}:", lock_path.display());
                    for kernel in &e.kernels {
                        super::explain::print_text(kernel, Some(ENV_REJECTED));
                    }
                    if !e.failed.is_empty() {
                        println!(
                            "  {} could not be listed (the error is above)",
                            super::progress::plural(e.failed.len(), "kernel")
                        );
                    }
                }
                Some(Err(err)) => {
                    println!(
                        "\nVariants for {}: cannot choose: {err}",
                        lock_path.display()
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
