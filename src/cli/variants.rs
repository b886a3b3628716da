//! `kernels variants` (reference 0.19.1): every build variant of a kernel
//! version with whether each environment can load it, which one it prefers,
//! and why each other is rejected; and the deprecated `kernels versions`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

use super::args::{EnvArgs, OutputFormat, RepoTypeArgs, TargetRuntimeArgs};
use super::json::{
    AbiVerdictDoc, EnvironmentVariantDoc, ErrorDoc, Matching, VariantVerdictDoc, VariantsDoc,
    VariantsEnvironmentDoc, VariantsRevisionDoc, VersionDoc, VersionsDoc,
};
use super::printer::Printer;
use super::project::profile::query_profile;
use crate::abi::ImageTarget;
use crate::cli::settings::Settings;
use crate::lock::inspect;
use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
use crate::lock::profile::Profile;
use crate::variant::{
    EnvOverrides, Generation, ProjectPython, TorchEnv, VariantRules, VariantSelection,
};
use kernels_hub::HubClient;
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;

/// Arguments of `kernels variants`.
#[derive(Debug, clap::Args)]
pub struct VariantsArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// Show every version (default: the newest only).
    #[arg(long, conflicts_with_all = ["version", "revision"])]
    pub all_versions: bool,

    /// Show kernel version N (the branch `vN`), or `latest`.
    #[arg(long, value_name = "N|latest", value_parser = parse_version, conflicts_with = "revision")]
    pub version: Option<VersionChoice>,

    /// Show the variants at this branch, tag or commit.
    #[arg(long, value_name = "REVISION")]
    pub revision: Option<String>,

    /// Show only the variants an environment can load.
    #[arg(long)]
    pub only_compatible: bool,

    /// Print one JSON document (reference 0.19.1's keys, and `environments`).
    #[arg(long)]
    pub json: bool,

    /// The image the compiled files (ELF, Mach-O) must load on:
    /// `manylinux_2_28` (or `2.28`), or `host` for this machine's glibc.
    /// Each compatible variant whose files are in the cache gets an ABI
    /// verdict; the others are "not checked" (nothing is downloaded).
    /// Default: `manylinux` and `macos-min` under `[tool.kernels]` and its
    /// targets; without any, not checked.
    #[arg(long, value_name = "TARGET")]
    pub manylinux: Option<String>,

    /// `--target-runtime`: whose variant rules decide.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// The environment to decide for, instead of every
    /// `[[tool.kernels.targets]]` entry or the project's torch.
    #[command(flatten)]
    pub env: EnvArgs,
}

/// `--version` of `kernels variants`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionChoice {
    /// `latest`.
    Latest,
    /// `N`.
    Number(u64),
}

/// `3` or `latest`.
fn parse_version(text: &str) -> Result<VersionChoice, String> {
    if text == "latest" {
        return Ok(VersionChoice::Latest);
    }
    text.parse()
        .map(VersionChoice::Number)
        .map_err(|_| format!("`{text}` is neither a kernel version (an integer) nor `latest`"))
}

/// The version asked for does not exist.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{repo_id} has no version {version}; its versions: {available}")]
#[diagnostic(
    code(kernels::variants::no_such_version),
    help("give one of those versions, `--all-versions`, or `--revision REVISION`")
)]
struct NoSuchVersion {
    repo_id: String,
    version: u64,
    available: String,
}

/// The repository has no `vN` branch.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{repo_id} has no kernel versions (no `vN` branch)")]
#[diagnostic(
    code(kernels::variants::no_versions),
    help("name a branch, tag or commit: `kernels variants {repo_id} --revision main`")
)]
struct NoVersions {
    repo_id: String,
}

/// No environment to decide for.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("cannot tell which environment to decide for: {detail}")]
#[diagnostic(
    code(kernels::variants::no_environment),
    help(
        "name it with `--torch-version MAJOR.MINOR` and a backend (`--cuda-version`, `--rocm-version`, `--xpu-version`, `--metal` or `--cpu`), declare it in [[tool.kernels.targets]] of pyproject.toml, or install torch in the project's environment"
    )
)]
struct NoTargetEnvironment {
    detail: String,
}

/// One environment the verdicts are for.
struct Environment {
    env: TorchEnv,
    /// `flags`, `python` or `target N`.
    source: String,
}

/// `kernels variants REPO`.
pub fn run_variants(
    args: VariantsArgs,
    project_dir: &Path,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let profile = choose_profile_for(
        (&args.runtime, args.repo, &args.env),
        project_dir,
        &python,
        printer,
    )?;
    let rules = VariantRules::of_profile(&profile);
    let environments = environments_or_none(
        &args,
        tool.as_ref(),
        &manifest_path,
        &python,
        rules.generation,
        printer,
    )?;
    let images = super::project::fit::images(project_dir, args.manylinux.as_deref())?;
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    let runtime = super::project::client::runtime()?;
    let revisions = runtime
        .block_on(selected_revisions(
            &client,
            &profile,
            &args,
            !images.is_empty(),
        ))
        .map_err(|err| match err {
            Selection::Hub(err) => super::project::causes::hub_failure(err, settings),
            Selection::Other(report) => report,
        })?;
    if environments.is_empty() {
        // No environment, no verdict: neither the variants' nor their ABI's.
        print_names(printer, &revisions);
        return Ok(ExitCode::SUCCESS);
    }
    print_images(printer, &images);
    let repo = settings.cache().repo(&args.repo_id, profile.repo_type);
    let docs = revision_docs(
        revisions,
        &environments,
        rules,
        args.only_compatible,
        &repo,
        &images,
    );
    if args.json {
        printer.json(&VariantsDoc {
            repo_id: args.repo_id.to_string(),
            revisions: docs,
        });
    } else {
        print_text(printer, &docs, args.only_compatible);
    }
    Ok(ExitCode::SUCCESS)
}

/// [`environments`] for `kernels variants`; where there is nothing to decide
/// for and no flag asks for verdicts (`--json`, `--only-compatible`), a note
/// on stderr and no environment, so that the variants are listed alone and
/// the hints which send users here work wherever they are printed.
///
/// # Errors
///
/// Those of [`environments`], [`NoTargetEnvironment`] included when a flag
/// asks for verdicts.
fn environments_or_none(
    args: &VariantsArgs,
    tool: Option<&ToolSettings>,
    manifest_path: &Path,
    python: &ProjectPython,
    generation: Generation,
    printer: &Printer,
) -> miette::Result<Vec<Environment>> {
    match environments(&args.env, tool, manifest_path, python, generation) {
        Err(report)
            if !args.json
                && !args.only_compatible
                && report.downcast_ref::<NoTargetEnvironment>().is_some() =>
        {
            printer.status(format_args!(
                "note: {report}; the variants are listed without verdicts (give `--torch-version MAJOR.MINOR` and a backend flag for them)"
            ));
            Ok(Vec::new())
        }
        other => other,
    }
}

/// The manylinux images line on stderr: always when images are known (they
/// come from the cache), else only in verbose mode.
fn print_images(printer: &Printer, images: &[ImageTarget]) {
    if !images.is_empty() {
        let line = super::project::fit::images_line(images);
        printer.status(format_args!("{line} (from the cache)"));
    } else if printer.is_verbose() {
        printer.status(super::project::fit::images_line(images));
    }
}

/// One document per listed revision: the verdicts of every environment
/// under `rules` (`only_compatible`: the compatible variants alone), and,
/// where `images` is not empty and the revision's commit is known, the ABI
/// verdicts read from its snapshot in `repo`.
fn revision_docs(
    revisions: Vec<Listed>,
    environments: &[Environment],
    rules: VariantRules,
    only_compatible: bool,
    repo: &kernels_cache::RepoCache,
    images: &[ImageTarget],
) -> Vec<VariantsRevisionDoc> {
    revisions
        .into_iter()
        .map(|listed| {
            let mut doc = revision_doc(listed.version, listed.revision, environments, |env| {
                verdicts(env, &listed.names, rules, only_compatible)
            });
            if !images.is_empty()
                && let Some(commit) = listed.commit
            {
                let snapshot = repo.snapshot_dir(commit.as_str());
                add_abi(&mut doc.environments, &snapshot, images);
            }
            doc
        })
        .collect()
}

/// The environments to decide for: the flags (on top of a single declared
/// target), else every `[[tool.kernels.targets]]` entry, else the project's
/// torch, or where it has none the MLX-only environment a runtime of
/// `generation` selects for ([`EnvOverrides::resolve_for`]).
///
/// # Errors
/// A flag or a declared target cannot make an environment, or none is given
/// and torch cannot be asked.
fn environments(
    flags: &EnvArgs,
    tool: Option<&ToolSettings>,
    manifest_path: &Path,
    python: &ProjectPython,
    generation: Generation,
) -> miette::Result<Vec<Environment>> {
    let overrides = flags.overrides();
    let declared = tool.map_or(&[][..], |t| t.declared.as_slice());
    if overrides.is_empty() && !declared.is_empty() {
        return declared
            .iter()
            .enumerate()
            .map(|(i, target)| {
                let (env, _) = EnvOverrides::default()
                    .with_declared(Some((target, manifest_path)))
                    .resolve_for(python, generation)?;
                Ok(Environment {
                    env,
                    source: format!("target {}", i + 1),
                })
            })
            .collect();
    }
    let source = if overrides.is_empty() {
        "python"
    } else {
        "flags"
    };
    match overrides.resolve_for(python, generation) {
        Ok((env, _)) => Ok(vec![Environment {
            env,
            source: source.to_owned(),
        }]),
        Err(err @ crate::variant::VariantError::NoTorch { .. })
        | Err(err @ crate::variant::VariantError::PythonFailed { .. }) => {
            Err(NoTargetEnvironment {
                detail: err.to_string(),
            }
            .into())
        }
        Err(err) => Err(err.into()),
    }
}

/// One revision's document: the verdicts of `verdicts` for each of
/// `environments`, the first environment's also under the reference's key.
fn revision_doc(
    version: Option<u64>,
    revision: String,
    environments: &[Environment],
    verdicts: impl Fn(&TorchEnv) -> Vec<VariantVerdictDoc>,
) -> VariantsRevisionDoc {
    let environments: Vec<VariantsEnvironmentDoc> = environments
        .iter()
        .map(|e| VariantsEnvironmentDoc {
            environment: e.env.describe(),
            source: e.source.clone(),
            variants: verdicts(&e.env)
                .into_iter()
                .map(|verdict| EnvironmentVariantDoc { verdict, abi: None })
                .collect(),
        })
        .collect();
    VariantsRevisionDoc {
        version,
        revision,
        variants: environments[0]
            .variants
            .iter()
            .map(|v| v.verdict.clone())
            .collect(),
        environments,
    }
}

/// Gives each compatible variant of `environments` the ABI verdict of its
/// files under `snapshot` (the revision's cached snapshot) for `images`,
/// reading each variant's files once; nothing is fetched.
fn add_abi(environments: &mut [VariantsEnvironmentDoc], snapshot: &Path, images: &[ImageTarget]) {
    let mut judged: BTreeMap<String, Option<AbiVerdictDoc>> = BTreeMap::new();
    let compatible = environments
        .iter_mut()
        .flat_map(|e| e.variants.iter_mut())
        .filter(|v| v.verdict.compatible);
    for v in compatible {
        let name = &v.verdict.variant;
        v.abi = judged
            .entry(name.clone())
            .or_insert_with(|| super::project::fit::variant_abi(snapshot, name, images))
            .clone();
    }
}

/// Every variant of `available` with its verdict for `env` under `rules`:
/// the compatible ones first, best first, then the others by name (the
/// reference's order); with `only_compatible`, the compatible ones alone.
fn verdicts(
    env: &TorchEnv,
    available: &BTreeSet<String>,
    rules: VariantRules,
    only_compatible: bool,
) -> Vec<VariantVerdictDoc> {
    let mut verdicts = env.explain(available, rules);
    verdicts.sort_by_key(|v| (v.rank.is_none(), v.rank));
    verdicts
        .into_iter()
        .filter(|v| !only_compatible || v.rank.is_some())
        .map(|v| VariantVerdictDoc {
            compatible: v.rank.is_some(),
            preferred: v.rank == Some(0),
            reason: if v.rank.is_some() { None } else { v.reason },
            variant: v.name,
        })
        .collect()
}

/// Why no revision could be listed.
enum Selection {
    /// The Hub failed.
    Hub(kernels_hub::HubError),
    /// The selection names nothing.
    Other(miette::Report),
}

impl From<kernels_hub::HubError> for Selection {
    fn from(err: kernels_hub::HubError) -> Self {
        Selection::Hub(err)
    }
}

/// One revision [`selected_revisions`] lists.
struct Listed {
    /// The kernel version (`None`: `--revision`).
    version: Option<u64>,
    /// `refs/heads/vN`, or the `--revision` given.
    revision: String,
    /// The commit, when known (a version's ref; a `--revision` resolved
    /// only when asked for, one request).
    commit: Option<CommitId>,
    /// The directory names under `build/`.
    names: BTreeSet<String>,
}

/// Each revision the selectors name: `--revision`, `--version N`, every
/// version, or the newest; with `commits`, a `--revision` is resolved to
/// its commit too (where the ABI verdict reads the cached files).
async fn selected_revisions(
    client: &HubClient,
    profile: &Profile,
    args: &VariantsArgs,
    commits: bool,
) -> Result<Vec<Listed>, Selection> {
    let repo_id = &args.repo_id;
    if let Some(revision) = &args.revision {
        let commit = match commits {
            true => Some(
                client
                    .repo_info(profile.repo_type, repo_id, revision)
                    .await?
                    .sha,
            ),
            false => None,
        };
        let names = client
            .list_tree(profile.repo_type, repo_id, revision, "build", false)
            .await
            .or_else(|err| match err {
                kernels_hub::HubError::EntryNotFound { .. } => Ok(Vec::new()),
                err => Err(err),
            })?
            .into_iter()
            .filter(|e| !e.is_file())
            .map(|e| e.path.trim_start_matches("build/").to_owned())
            .collect();
        return Ok(vec![Listed {
            version: None,
            revision: revision.clone(),
            commit,
            names,
        }]);
    }
    let versions: Vec<inspect::VersionInfo> = inspect::versions(client, profile.repo_type, repo_id)
        .await?
        .into_iter()
        .filter(|v| v.version.is_some())
        .collect();
    let Some(newest) = versions.last().and_then(|v| v.version) else {
        return Err(Selection::Other(
            NoVersions {
                repo_id: repo_id.to_string(),
            }
            .into(),
        ));
    };
    let wanted: Vec<u64> = match args.version {
        _ if args.all_versions => versions.iter().filter_map(|v| v.version).collect(),
        Some(VersionChoice::Number(n)) => vec![n],
        Some(VersionChoice::Latest) | None => vec![newest],
    };
    let mut out = Vec::new();
    for n in wanted {
        let Some(info) = versions.iter().find(|v| v.version == Some(n)) else {
            let available: Vec<String> = versions
                .iter()
                .filter_map(|v| v.version.map(|n| n.to_string()))
                .collect();
            return Err(Selection::Other(
                NoSuchVersion {
                    repo_id: repo_id.to_string(),
                    version: n,
                    available: available.join(", "),
                }
                .into(),
            ));
        };
        out.push(Listed {
            version: Some(n),
            revision: format!("refs/heads/{}", info.name),
            commit: Some(info.commit.clone()),
            names: info.variants.iter().cloned().collect(),
        });
    }
    Ok(out)
}

/// The text output without an environment: per revision, its variant
/// names in name order.
fn print_names(printer: &Printer, revisions: &[Listed]) {
    for listed in revisions {
        match listed.version {
            Some(n) => printer.data(format_args!("Version {n}:\n")),
            None => printer.data(format_args!("Revision {}:\n", listed.revision)),
        }
        if listed.names.is_empty() {
            printer.data("No build variants found.");
        }
        for name in &listed.names {
            printer.data(name);
        }
    }
}

/// The text output: per revision (and per environment when there are
/// several), one line per variant, as the reference prints it.
fn print_text(printer: &Printer, docs: &[VariantsRevisionDoc], only_compatible: bool) {
    for doc in docs {
        let label = match doc.version {
            Some(n) => format!("Version {n}"),
            None => format!("Revision {}", doc.revision),
        };
        let several = doc.environments.len() > 1;
        for environment in &doc.environments {
            if several {
                printer.data(format_args!(
                    "{label}, {} ({}):\n",
                    environment.environment, environment.source
                ));
            } else {
                printer.status(format_args!("Environment: {}", environment.environment));
                printer.data(format_args!("{label}:\n"));
            }
            if environment.variants.is_empty() {
                printer.data(if only_compatible {
                    "No compatible variants found."
                } else {
                    "No build variants found."
                });
            }
            for v in &environment.variants {
                let abi = v.abi.as_ref().map_or_else(String::new, |abi| {
                    format!("; ABI: {}", super::project::fit::abi_text(abi))
                });
                let v = &v.verdict;
                match (&v.reason, v.preferred) {
                    (_, true) => {
                        printer.data(format_args!("{} compatible, preferred ✅{abi}", v.variant))
                    }
                    (None, false) => printer.data(format_args!("{} compatible ✅{abi}", v.variant)),
                    (Some(reason), false) => printer.data(format_args!("{}: {reason}", v.variant)),
                }
            }
        }
    }
}

/// Arguments of `kernels versions`.
#[derive(Debug, clap::Args)]
pub struct VersionsArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// `--target-runtime`.
    #[command(flatten)]
    pub runtime: TargetRuntimeArgs,

    /// `--repo-type`.
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Also list every build variant of each version: `✅ NAME (compatible,
    /// preferred)`, `✅ NAME (compatible)` or the bare name, as the reference
    /// 0.13–0.14 `kernels versions` does.
    #[arg(long)]
    pub variants: bool,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// The environment the matching variants are marked for, instead of
    /// asking torch (as `kernels download`).
    #[command(flatten)]
    pub env: super::args::EnvArgs,
}

/// Environment overrides without `--torch-version`, and torch not found.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("cannot tell which variants match the given environment: {detail}")]
#[diagnostic(
    code(kernels::versions::no_torch),
    help(
        "give the torch version too (`--torch-version MAJOR.MINOR`), or install torch in the project's environment"
    )
)]
struct NoEnvironment {
    detail: String,
}

/// `kernels versions REPO`.
pub fn run_versions(
    args: VersionsArgs,
    project_dir: &Path,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    printer.status(format_args!(
        "warning: `kernels versions` is deprecated (reference 0.19.1 drops it in 0.20): `kernels variants {} --all-versions` shows every version's variants and their verdicts",
        args.repo_id
    ));
    // One start of the project's interpreter answers both the installed
    // runtime and torch.
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    let profile = choose_profile_for(
        (&args.runtime, args.repo, &args.env),
        project_dir,
        &python,
        printer,
    )?;
    // The environment first: a bad override fails before any request.
    let generation = VariantRules::of_profile(&profile).generation;
    let env = versions_env(&args, &python, generation, printer)?;
    // Retry lines are warnings: shown with JSON on stdout too.
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    let listed = super::project::client::runtime()?.block_on(inspect::versions(
        &client,
        profile.repo_type,
        &args.repo_id,
    ));
    let versions = listed.map_err(|err| {
        let report = super::project::causes::hub_failure(err, settings);
        if args.format == OutputFormat::Json {
            // Still one document, the failure typed.
            printer.json(&VersionsDoc {
                schema: 1,
                command: "versions",
                repo_id: args.repo_id.to_string(),
                environment: env.as_ref().map(|e| e.describe()),
                versions: Vec::new(),
                error: Some(ErrorDoc::of(&report)),
            });
        }
        report
    })?;
    let listing = Listing {
        selection: env.as_ref().map(|env| VariantSelection::Detected {
            env: Box::new(env.clone()),
            rules: VariantRules::of_profile(&profile),
        }),
        env,
        profile,
        args: &args,
    };
    if args.format == OutputFormat::Json {
        listing.print_json(printer, &versions);
    } else {
        listing.print_text(printer, &versions);
    }
    Ok(ExitCode::SUCCESS)
}

/// The target profile of `kernels versions` and `kernels variants`: as
/// `kernels lock` chooses it, from the options, `pyproject.toml` and the
/// project's lock.
fn choose_profile_for(
    (runtime, repo, env): (&TargetRuntimeArgs, RepoTypeArgs, &EnvArgs),
    project_dir: &Path,
    python: &ProjectPython,
    printer: &Printer,
) -> miette::Result<Profile> {
    query_profile(
        project_dir,
        runtime.version(),
        repo.repo_type,
        env.overrides().needs_python(),
        python,
        printer,
    )
}

/// The environment the variants are marked for: the overrides, else torch of
/// the project's Python; `None` (with a note) when neither is there.
fn versions_env(
    args: &VersionsArgs,
    python: &ProjectPython,
    generation: Generation,
    printer: &Printer,
) -> miette::Result<Option<crate::variant::TorchEnv>> {
    let overrides = args.env.overrides();
    match overrides.resolve_for(python, generation) {
        Ok((env, _)) => Ok(Some(env)),
        // Asked for explicitly: an error, as for `kernels download`.
        Err(err @ crate::variant::VariantError::BadOverride { .. }) => Err(err.into()),
        Err(err) if !overrides.is_empty() => Err(NoEnvironment {
            detail: err.to_string(),
        }
        .into()),
        Err(err) => {
            printer.status(format_args!(
                "note: cannot tell which variants match this environment: {err}\n\
                 give the environment instead (the overrides of `kernels download`):\n\n    \
                 kernels variants {} --all-versions --torch-version MAJOR.MINOR --cuda-version VERSION",
                args.repo_id
            ));
            Ok(None)
        }
    }
}

/// The versions of one kernel as `kernels versions` lists them, with the
/// variant that matches the environment when it is known.
struct Listing<'a> {
    env: Option<crate::variant::TorchEnv>,
    selection: Option<VariantSelection>,
    profile: Profile,
    args: &'a VersionsArgs,
}

impl Listing<'_> {
    /// The variant of `v` chosen for the environment, if one matches.
    fn matching(&self, v: &inspect::VersionInfo) -> Option<String> {
        let available: BTreeSet<String> = v.variants.iter().cloned().collect();
        self.selection
            .as_ref()?
            .choose(&self.args.repo_id, &v.commit, &available)
            .ok()?
            .into_iter()
            .next()
    }

    /// The `--format json` document.
    fn print_json(&self, printer: &Printer, versions: &[inspect::VersionInfo]) {
        let versions = versions
            .iter()
            .map(|info| VersionDoc {
                info,
                variant_count: info.variants.len(),
                matching: match (&self.selection, self.matching(info)) {
                    (None, _) => Matching::Unknown,
                    (Some(_), None) => Matching::None,
                    (Some(_), Some(name)) => Matching::Variant(name),
                },
            })
            .collect();
        printer.json_line(&VersionsDoc {
            schema: 1,
            command: "versions",
            repo_id: self.args.repo_id.to_string(),
            environment: self.env.as_ref().map(|e| e.describe()),
            versions,
            error: None,
        });
    }

    /// One line per version (with `--variants`, one per build variant below it).
    fn print_text(&self, printer: &Printer, versions: &[inspect::VersionInfo]) {
        if versions.is_empty() {
            printer.data(format_args!(
                "Repository does not support kernel versions: {}",
                self.args.repo_id
            ));
            return;
        }
        if let Some(env) = &self.env {
            printer.status(format_args!("Environment: {}", env.describe()));
        }
        for v in versions {
            let head = match v.version {
                Some(n) => format!("Version {n} (branch {}, {})", v.name, v.commit.short()),
                None => format!("Tag {} ({})", v.name, v.commit.short()),
            };
            let count = v.variants.len();
            let fit = match (&self.selection, self.matching(v)) {
                (None, _) => String::new(),
                (Some(_), Some(m)) => format!(", ✅ {m} matches this environment"),
                (Some(_), None) => ", none matches this environment".to_owned(),
            };
            printer.data(format_args!(
                "{head}: {count} build variant{}{fit}",
                if count == 1 { "" } else { "s" }
            ));
            if self.args.variants {
                self.print_variants(printer, v);
            }
        }
    }

    /// `--variants`: every build variant of `v`, marked when it suits the
    /// environment (and when it is the one chosen).
    fn print_variants(&self, printer: &Printer, v: &inspect::VersionInfo) {
        let parsed: Vec<kernels_types::variant_name::BuildVariant> = v
            .variants
            .iter()
            .map(|n| kernels_types::variant_name::BuildVariant::parse(n))
            .collect();
        let accepted: Vec<String> = self
            .env
            .as_ref()
            .map(|env| {
                env.resolve(&parsed, VariantRules::of_profile(&self.profile))
                    .into_iter()
                    .map(|b| b.name().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let best = self.matching(v);
        for name in &v.variants {
            if best.as_ref() == Some(name) {
                printer.data(format_args!("  ✅ {name} (compatible, preferred)"));
            } else if accepted.contains(name) {
                printer.data(format_args!("  ✅ {name} (compatible)"));
            } else {
                printer.data(format_args!("  {name}"));
            }
        }
    }
}
