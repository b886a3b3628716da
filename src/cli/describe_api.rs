//! `kernels describe-api KERNEL` (reference 0.19.1): the public functions and
//! layers a build variant's `symbols.json` lists, without importing the
//! kernel. The variant is the one the environment (the flags, else the
//! project's torch) prefers, as `kernels variants` ranks them.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Map, Value};

use super::args::{EnvArgs, TargetRuntimeArgs};
use super::printer::Printer;
use super::project::profile::{ProfileInputs, choose_profile_with};
use crate::cli::settings::Settings;
use crate::lock::inspect;
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::variant::{ProbeScope, ProjectPython, VariantRules};
use kernels_hub::{HubClient, HubError, Target};
use kernels_types::repo_id::RepoId;

/// The file a variant lists its public symbols in (kernel-builder writes it).
const SYMBOLS_FILE: &str = "symbols.json";

/// Arguments of `kernels describe-api`.
#[derive(Debug, clap::Args)]
pub struct DescribeApiArgs {
    /// A Hub repository (`owner/name`), or a local kernel directory (holding
    /// `build/<variant>/`).
    #[arg(value_name = "KERNEL")]
    pub kernel: String,

    /// Describe this branch, tag or commit (Hub only).
    #[arg(long, value_name = "REVISION", conflicts_with = "version")]
    pub revision: Option<String>,

    /// Describe version N, the branch `vN` (Hub only). Default: the newest.
    #[arg(long, value_name = "N")]
    pub version: Option<u64>,

    /// Print the whole `symbols.json`, with `repo_id`, `revision` (or
    /// `path`) and `variant`, as one JSON document.
    #[arg(long)]
    pub json: bool,

    /// `--target-runtime`: whose variant rules choose the variant.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// The environment the variant is chosen for, instead of asking torch.
    #[command(flatten)]
    pub env: EnvArgs,
}

/// Why the symbols cannot be described.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DescribeError {
    /// The chosen variant has no `symbols.json`.
    #[error("no symbols.json in {location} (variant: {variant})")]
    #[diagnostic(
        code(kernels::describe_api::no_symbols),
        help("the kernel was built without it: rebuild it with a recent kernel-builder")
    )]
    NoSymbols {
        /// The repository and revision, or the path.
        location: String,
        /// The variant read.
        variant: String,
    },
    /// `symbols.json` is not the schema this command reads.
    #[error("{location}: build/{variant}/symbols.json is not readable: {problem}")]
    #[diagnostic(
        code(kernels::describe_api::bad_symbols),
        help("expected schema_version 1 with `functions` and `layers` lists of named symbols")
    )]
    BadSymbols {
        /// The repository and revision, or the path.
        location: String,
        /// The variant read.
        variant: String,
        /// What is wrong.
        problem: String,
    },
    /// No variant of the kernel fits the environment.
    #[error("no build variant of {location} fits {environment}")]
    #[diagnostic(
        code(kernels::describe_api::no_variant),
        help("`kernels variants {kernel}` lists each variant with why it does not fit")
    )]
    NoVariant {
        /// The repository and revision, or the path.
        location: String,
        /// The environment, described.
        environment: String,
        /// The kernel as given.
        kernel: String,
    },
    /// `--revision`/`--version` with a local directory.
    #[error("--revision and --version name Hub revisions; {path} is a local directory")]
    #[diagnostic(
        code(kernels::describe_api::local_revision),
        help("drop the flag, or give a Hub repository `owner/name`")
    )]
    LocalRevision {
        /// The directory.
        path: String,
    },
    /// The repository has no `vN` branch and no revision was given.
    #[error("{repo_id} has no kernel versions (no `vN` branch)")]
    #[diagnostic(
        code(kernels::describe_api::no_versions),
        help("name one: `kernels describe-api {repo_id} --revision main`")
    )]
    NoVersions {
        /// The repository.
        repo_id: String,
    },
}

/// `kernels describe-api KERNEL`.
pub fn run(
    args: DescribeApiArgs,
    project_dir: &Path,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    let rules = rules(&args, project_dir, &python, printer)?;
    let (env, _) = args
        .env
        .overrides()
        .resolve_for(&python, rules.generation)?;
    let local = Path::new(&args.kernel);
    let mut doc = Map::new();
    let (symbols, variant) = if local.is_dir() {
        if args.revision.is_some() || args.version.is_some() {
            return Err(DescribeError::LocalRevision {
                path: args.kernel.clone(),
            }
            .into());
        }
        doc.insert("path".into(), Value::from(args.kernel.clone()));
        local_symbols(local, &args.kernel, &env, rules)?
    } else {
        let repo_id: RepoId = args
            .kernel
            .parse()
            .map_err(|err| miette::miette!("{err}"))?;
        let client = super::project::client::client_showing_retries(
            settings,
            printer,
            printer.lines_mode(),
        )?;
        let runtime = super::project::client::runtime()?;
        let (revision, symbols, variant) = runtime
            .block_on(hub_symbols(&client, &repo_id, &args, &env, rules))
            .map_err(|err| match err {
                Failure::Hub(err) => super::project::causes::hub_failure(err, settings),
                Failure::Describe(err) => err.into(),
            })?;
        doc.insert("repo_id".into(), Value::from(repo_id.to_string()));
        doc.insert("revision".into(), Value::from(revision));
        (symbols, variant)
    };
    doc.insert("variant".into(), Value::from(variant));
    let mut out = symbols;
    out.extend(doc);
    if args.json {
        printer.json(&out);
    } else {
        print_text(printer, &out);
    }
    Ok(ExitCode::SUCCESS)
}

/// The variant rules of the target runtime, chosen as `kernels lock` does.
fn rules(
    args: &DescribeApiArgs,
    project_dir: &Path,
    python: &ProjectPython,
    printer: &Printer,
) -> miette::Result<VariantRules> {
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: args.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format: None,
            repo_type: None,
            python,
            scope: ProbeScope::torch_if(args.env.overrides().needs_python()),
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )?;
    Ok(VariantRules::of_profile(&profile))
}

/// The variant of `names` the environment prefers.
fn preferred(
    names: impl IntoIterator<Item = String>,
    env: &crate::variant::TorchEnv,
    rules: VariantRules,
    location: &str,
    kernel: &str,
) -> Result<String, DescribeError> {
    let available: BTreeSet<String> = names.into_iter().collect();
    env.explain(&available, rules)
        .into_iter()
        .find(|v| v.rank == Some(0))
        .map(|v| v.name)
        .ok_or_else(|| DescribeError::NoVariant {
            location: location.to_owned(),
            environment: env.describe(),
            kernel: kernel.to_owned(),
        })
}

/// The symbols of the preferred variant of the local kernel `dir`.
fn local_symbols(
    dir: &Path,
    given: &str,
    env: &crate::variant::TorchEnv,
    rules: VariantRules,
) -> miette::Result<(Map<String, Value>, String)> {
    let build = crate::info::build_dir(dir);
    let names = fs_err::read_dir(&build)
        .map_err(|err| miette::miette!("{err}"))?
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned());
    let variant = preferred(names, env, rules, given, given)?;
    let file = build.join(&variant).join(SYMBOLS_FILE);
    let body = match fs_err::read(&file) {
        Ok(body) => body,
        Err(_) if !file.is_file() => {
            return Err(DescribeError::NoSymbols {
                location: given.to_owned(),
                variant,
            }
            .into());
        }
        Err(err) => return Err(miette::miette!("{err}")),
    };
    let symbols = parse_symbols(&body, given, &variant)?;
    Ok((symbols, variant))
}

/// A failure on the Hub or of the description.
enum Failure {
    Hub(HubError),
    Describe(DescribeError),
}

impl From<HubError> for Failure {
    fn from(err: HubError) -> Self {
        Failure::Hub(err)
    }
}

impl From<DescribeError> for Failure {
    fn from(err: DescribeError) -> Self {
        Failure::Describe(err)
    }
}

/// The revision described (`vN` or as given), the symbols and the variant
/// of `repo_id` on the Hub.
async fn hub_symbols(
    client: &HubClient,
    repo_id: &RepoId,
    args: &DescribeApiArgs,
    env: &crate::variant::TorchEnv,
    rules: VariantRules,
) -> Result<(String, Map<String, Value>, String), Failure> {
    let repo_type = kernels_types::wire::RepoType::Kernel;
    let (revision, location) = match (&args.revision, args.version) {
        (Some(revision), _) => (
            revision.clone(),
            format!("{repo_id} (revision: {revision})"),
        ),
        (None, version) => {
            let version = match version {
                Some(n) => n,
                None => inspect::versions(client, repo_type, repo_id)
                    .await?
                    .iter()
                    .filter_map(|v| v.version)
                    .max()
                    .ok_or_else(|| DescribeError::NoVersions {
                        repo_id: repo_id.to_string(),
                    })?,
            };
            (
                format!("v{version}"),
                format!("{repo_id} (version: {version}, revision: v{version})"),
            )
        }
    };
    let names = client
        .list_tree(repo_type, repo_id, &revision, "build", false)
        .await?
        .into_iter()
        .filter(|e| !e.is_file())
        .map(|e| e.path.trim_start_matches("build/").to_owned());
    let variant = preferred(names, env, rules, &location, repo_id.as_str())?;
    let file = format!("build/{variant}/{SYMBOLS_FILE}");
    let url = client.resolve_url(repo_type, repo_id, &revision, &file);
    let target = Target::repo(repo_type, repo_id).at(&revision).path(&file);
    let body = match client.get_document(&url, Some(&target)).await {
        Ok(body) => body,
        Err(HubError::EntryNotFound { .. }) => {
            return Err(DescribeError::NoSymbols { location, variant }.into());
        }
        Err(err) => return Err(err.into()),
    };
    let symbols = parse_symbols(&body, &location, &variant)?;
    Ok((revision, symbols, variant))
}

/// `symbols.json` checked as reference 0.19.1 checks it: `schema_version`
/// 1, `functions` and `layers` lists of objects with a string `name`, each
/// layer's `attributes` an object of booleans or nulls.
fn parse_symbols(
    body: &[u8],
    location: &str,
    variant: &str,
) -> Result<Map<String, Value>, DescribeError> {
    let bad = |problem: &str| DescribeError::BadSymbols {
        location: location.to_owned(),
        variant: variant.to_owned(),
        problem: problem.to_owned(),
    };
    let value: Value = serde_json::from_slice(body).map_err(|err| bad(&err.to_string()))?;
    let Value::Object(map) = value else {
        return Err(bad("not a JSON object"));
    };
    if map.get("schema_version") != Some(&Value::from(1)) {
        return Err(bad("schema_version is not 1"));
    }
    for group in ["functions", "layers"] {
        let named = map
            .get(group)
            .and_then(Value::as_array)
            .is_some_and(|list| {
                list.iter()
                    .all(|s| s.get("name").is_some_and(Value::is_string))
            });
        if !named {
            return Err(bad(&format!("{group} is not a list of named symbols")));
        }
    }
    let flags_ok = map["layers"].as_array().into_iter().flatten().all(|layer| {
        layer
            .get("attributes")
            .and_then(Value::as_object)
            .is_some_and(|a| a.values().all(|v| v.is_null() || v.is_boolean()))
    });
    if !flags_ok {
        return Err(bad("a layer's attributes are not booleans or null"));
    }
    Ok(map)
}

/// The text output, line for line as reference 0.19.1 prints it.
fn print_text(printer: &Printer, doc: &Map<String, Value>) {
    let text = |key: &str| doc.get(key).and_then(Value::as_str).unwrap_or_default();
    if doc.contains_key("repo_id") {
        printer.data(format_args!("Repository: {}", text("repo_id")));
        printer.data(format_args!("Revision: {}", text("revision")));
    } else {
        printer.data(format_args!("Path: {}", text("path")));
    }
    printer.data(format_args!("Variant: {}", text("variant")));
    let list = |key: &str| {
        doc.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    printer.data("\nFunctions:");
    let functions = list("functions");
    for function in &functions {
        printer.data(format_args!(
            "  {}",
            function["name"].as_str().unwrap_or_default()
        ));
    }
    if functions.is_empty() {
        printer.data("  (none)");
    }
    printer.data("\nLayers:");
    let layers = list("layers");
    for layer in &layers {
        let flags: Vec<String> = ["has_backward", "can_torch_compile"]
            .iter()
            .map(|name| {
                let value = match layer["attributes"].get(*name) {
                    Some(Value::Bool(true)) => "True",
                    Some(Value::Bool(false)) => "False",
                    _ => "unknown",
                };
                format!("{name}={value}")
            })
            .collect();
        printer.data(format_args!(
            "  {}  {}",
            layer["name"].as_str().unwrap_or_default(),
            flags.join("  ")
        ));
    }
    if layers.is_empty() {
        printer.data("  (none)");
    }
}
