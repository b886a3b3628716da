//! `kernels info REPO_OR_PATH`: what reference 0.17.2's `kernels info` prints
//! (the same lines, or with `--format json` / `--json` the same keys), then
//! every build variant with its backend, archs and fit for the targets
//! (`--cuda-capability`, `--rocm-arch`, `--target-runtime`).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::ExitCode;

use kernels_types::fit::{FitContext, Target};
use kernels_types::metadata::{DependencyVersion, KernelDependency, KernelsVersion};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use super::args::{CacheArgs, EnvArgs, OutputFormat};
use super::args::{RepoTypeArgs, TargetArgs};
use super::json::{
    AbiVerdictDoc, DepTree, InfoDoc, InfoMetadataDoc, InfoRefusalDoc, InfoTargetsDoc,
    InfoVariantDoc,
};
use super::printer::Printer;
use super::settings::Settings;
use crate::info::{
    InfoError, KernelInfo, Origin, RevisionChoice, VariantFit, VariantInfo, describe_cached,
    describe_hub, describe_local, display_path,
};
use crate::lock::profile::{Profile, ProfileSource, RuntimeVersion};
use crate::variant::{ProjectPython, VariantRules};

/// Arguments of `kernels info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// A Hub repository (`owner/name`), or a local kernel repository (a
    /// directory holding `build/<variant>/`): an existing directory is read
    /// as one.
    #[arg(value_name = "REPO_OR_PATH")]
    pub kernel: String,

    /// Describe this branch, tag or commit (Hub only).
    #[arg(long, value_name = "REVISION", conflicts_with = "version")]
    pub revision: Option<String>,

    /// Describe version N, the branch `vN` (Hub only). Default: the highest
    /// `vN` branch, else `main`.
    #[arg(long, value_name = "N")]
    pub version: Option<u64>,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Same as `--format json` (the reference's flag).
    #[arg(long)]
    pub json: bool,

    /// `--cuda-capability`, `--rocm-arch`: the GPUs each variant's archs are
    /// checked against (none: archs not checked).
    #[command(flatten)]
    pub targets: TargetArgs,

    /// Check each variant's `kernels-minver` against this `kernels` runtime
    /// release (`X.Y.Z`, for example `0.17.2`); it also sets the repository
    /// type (`model` up to 0.13). Without it, `kernels-minver` is not checked.
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,

    /// `--repo-type` (default `kernel`, as reference 0.17.2).
    #[command(flatten)]
    pub repo: RepoTypeArgs,

    /// Make no network request: read the revision and the variants from the
    /// Hub cache (only the variants it holds). Same as `HF_HUB_OFFLINE=1`.
    #[arg(long)]
    pub offline: bool,

    /// `--cache-dir`.
    #[command(flatten)]
    pub cache: CacheArgs,

    /// Show the kernels it depends on (their `kernel-depends`, of every
    /// variant) as a tree (with `--json`, the nested `dependency_tree`).
    #[arg(long)]
    pub dep_tree: bool,

    /// The environment whose variant the `Variant:` line names, instead of
    /// the torch of the project's Python.
    #[command(flatten)]
    pub env: EnvArgs,

    /// The image the compiled files (ELF, Mach-O) of the `Variant:` must
    /// load on: `manylinux_2_28` (or `2.28`), or `host` for this machine's
    /// glibc. Checked from the files in the cache (or the local directory);
    /// "not checked" when they are not there (nothing is downloaded).
    /// Default: `manylinux` and `macos-min` under `[tool.kernels]` and its
    /// targets; without any, not checked.
    #[arg(long, value_name = "TARGET")]
    pub manylinux: Option<String>,
}

impl InfoArgs {
    fn choice(&self) -> RevisionChoice {
        match (&self.revision, self.version) {
            (Some(revision), _) => RevisionChoice::Revision(revision.clone()),
            (None, Some(n)) => RevisionChoice::Version(n),
            (None, None) => RevisionChoice::Latest,
        }
    }
}

/// `--revision`/`--version` with a local path.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("--revision and --version cannot be used with a local path ({path})")]
#[diagnostic(
    code(kernels::info::local_revision),
    help("a local directory has one state; drop the flag, or give a Hub repository `owner/name`")
)]
struct LocalRevision {
    path: String,
}

/// `REPO_OR_PATH` that is neither.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("`{given}` is no directory, and not a Hub repository id: {problem}")]
#[diagnostic(
    code(kernels::info::not_a_kernel),
    help(
        "give `owner/name` (for example `kernels-community/relu`) or the path of a kernel repository holding `build/`"
    )
)]
struct NotAKernel {
    given: String,
    problem: String,
}

/// A `--target-runtime` that is no `X.Y.Z`.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("--target-runtime `{value}` is not a version `X.Y.Z`")]
#[diagnostic(
    code(kernels::info::bad_runtime),
    help("for example `--target-runtime 0.17.2`")
)]
struct BadRuntime {
    value: String,
}

/// Runs `kernels info`.
pub fn run(
    args: InfoArgs,
    project_dir: &Path,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let runtime = args
        .target_runtime
        .as_deref()
        .map(|v| {
            let bad = || BadRuntime {
                value: v.to_owned(),
            };
            let release = v.parse::<KernelsVersion>().map_err(|_| bad())?;
            let profile = RuntimeVersion::parse(v).map_err(|_| bad())?;
            Ok::<_, BadRuntime>((
                release,
                Profile::for_runtime(profile, ProfileSource::Option),
            ))
        })
        .transpose()?;
    let repo_type = args
        .repo
        .repo_type
        .map(RepoType::from)
        .or(runtime.as_ref().map(|(_, p)| p.repo_type))
        .unwrap_or(RepoType::Kernel);
    let release = runtime.as_ref().map(|(release, _)| *release);
    let (info, warnings) = describe(&args, repo_type, release, settings, printer)?;
    for warning in warnings
        .iter()
        .cloned()
        .chain(info.skipped.iter().map(|name| skipped_warning(&info, name)))
        .chain(info.variants.iter().filter_map(invalid_warning))
    {
        printer.status(format_args!("warning: {warning}"));
    }
    let targets = args.targets.targets();
    let profile = runtime.as_ref().map(|(_, profile)| profile.clone());
    let context = FitContext {
        targets: &targets,
        runtime: runtime.map(|(release, _)| release),
        modules: None,
    };
    let tree = dependency_tree(&info, &args, repo_type, settings, printer)?;
    let loaded = loaded_variant(&info, &args, profile, project_dir, printer);
    if let Err(reason) = &loaded {
        printer.status(format_args!(
            "note: no variant for this environment (`Variant: -`): {reason}"
        ));
    }
    let loaded = loaded.ok();
    let images = super::project::fit::images(project_dir, args.manylinux.as_deref())?;
    let abi = loaded.as_deref().and_then(|variant| {
        variant_abi(&info, &args.kernel, (repo_type, variant), &images, settings)
    });
    if args.json || args.format == OutputFormat::Json {
        let mut doc = document(&info, &context);
        doc.variant = loaded.as_deref();
        doc.variant_abi = abi.as_ref();
        doc.kernel_depends = tree.repos();
        doc.dependency_tree = args.dep_tree.then_some(&tree);
        printer.json(&doc);
    } else {
        let text = Text {
            info: &info,
            context: &context,
            variant: (loaded.as_deref(), abi.as_ref()),
            tree: (&tree, args.dep_tree),
        };
        print_text(printer, &text);
    }
    Ok(ExitCode::SUCCESS)
}

/// The variant this environment would load, reference 0.19.1's `Variant:`:
/// among `info`'s variants, the one preferred for the `--torch-version` …
/// flags, else for the torch of the project's Python, under the rules of
/// `profile` (`--target-runtime`), else of the runtime `kernels lock` would
/// target. `Err` says why there is none (0.19.1 fails instead).
fn loaded_variant(
    info: &KernelInfo,
    args: &InfoArgs,
    profile: Option<Profile>,
    project_dir: &Path,
    printer: &Printer,
) -> Result<String, String> {
    let python = ProjectPython::for_project(project_dir, super::settings::virtual_env().as_deref());
    let overrides = args.env.overrides();
    let profile = match profile {
        Some(profile) => profile,
        None => super::project::profile::query_profile(
            project_dir,
            None,
            args.repo.repo_type,
            overrides.needs_python(),
            &python,
            printer,
        )
        .map_err(|err| err.to_string())?,
    };
    let rules = VariantRules::of_profile(&profile);
    let (env, _) = overrides
        .resolve_for(&python, rules.generation)
        .map_err(|err| err.to_string())?;
    // Every `build/` name: the runtime's own grammar decides which it reads
    // (0.19's `mlx-metal`, new-grammar names), not the 0.17.2 listing.
    let available: BTreeSet<String> = info
        .variants
        .iter()
        .map(|v| v.name.clone())
        .chain(info.skipped.iter().cloned())
        .collect();
    env.explain(&available, rules)
        .into_iter()
        .find(|v| v.rank == Some(0))
        .map(|v| v.name)
        .ok_or_else(|| {
            format!(
                "none of its {} variants is for {}",
                available.len(),
                env.describe()
            )
        })
}

/// The ABI verdict on the compiled files of `variant` of `info` (a Hub
/// repository of `repo_type`, or the local directory `kernel` as given)
/// for `images` ([`super::project::fit::images`]): from the cached
/// snapshot of its commit, or from the local directory; `None` without an
/// image.
fn variant_abi(
    info: &KernelInfo,
    kernel: &str,
    (repo_type, variant): (RepoType, &str),
    images: &[crate::abi::ImageTarget],
    settings: &Settings,
) -> Option<AbiVerdictDoc> {
    let root = match &info.origin {
        Origin::Hub {
            repo_id, commit, ..
        } => settings
            .cache()
            .repo(repo_id, repo_type)
            .snapshot_dir(commit.as_str()),
        Origin::Path(_) => Path::new(kernel).to_owned(),
    };
    super::project::fit::variant_abi(&root, variant, images)
}

/// The `kernel-depends` of every variant of `info`.
fn depends_of(info: &KernelInfo) -> BTreeSet<KernelDependency> {
    info.variants
        .iter()
        .filter_map(VariantInfo::metadata)
        .flat_map(|m| m.kernel_depends.iter().cloned())
        .collect()
}

/// The kernels `info` depends on, each described (from the Hub, or the
/// cache offline) for its own `kernel-depends`; a kernel on its own path
/// is not followed again. No request when it depends on none.
fn dependency_tree(
    info: &KernelInfo,
    args: &InfoArgs,
    repo_type: RepoType,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<DepTree> {
    let roots = depends_of(info);
    if roots.is_empty() {
        return Ok(DepTree::default());
    }
    // Already checked as `X.Y.Z` by `run`.
    let release: Option<KernelsVersion> =
        args.target_runtime.as_deref().and_then(|v| v.parse().ok());
    let cache = settings.cache();
    let offline = settings.offline || args.offline;
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    let runtime = super::project::client::runtime()?;
    let mut children: HashMap<KernelDependency, BTreeSet<KernelDependency>> = HashMap::new();
    let mut queue: Vec<KernelDependency> = roots.iter().cloned().collect();
    while let Some(dep) = queue.pop() {
        if children.contains_key(&dep) {
            continue;
        }
        let choice = match &dep.version {
            DependencyVersion::Version(n) => RevisionChoice::Version(*n),
            DependencyVersion::Revision(r) => RevisionChoice::Revision(r.clone()),
        };
        let described = if offline {
            describe_cached(&cache, &dep.repo_id, &choice, release)
        } else {
            runtime.block_on(describe_hub(
                &client,
                &cache,
                repo_type,
                &dep.repo_id,
                &choice,
                release,
            ))
        };
        let (found, _) = described.map_err(|err| match err {
            InfoError::Hub(err) => super::project::causes::hub_failure(err, settings),
            other => other.into(),
        })?;
        let kids = depends_of(&found);
        queue.extend(kids.iter().cloned());
        children.insert(dep, kids);
    }
    Ok(nest(&roots, &children, &mut Vec::new()))
}

/// The tree below `deps`, leaving out a kernel already on `path` (a cycle).
fn nest(
    deps: &BTreeSet<KernelDependency>,
    children: &HashMap<KernelDependency, BTreeSet<KernelDependency>>,
    path: &mut Vec<KernelDependency>,
) -> DepTree {
    let mut tree = DepTree::default();
    for dep in deps {
        if path.contains(dep) {
            continue;
        }
        path.push(dep.clone());
        let below = children
            .get(dep)
            .map(|kids| nest(kids, children, path))
            .unwrap_or_default();
        path.pop();
        tree.0.insert(dep.repo_id.to_string(), below);
    }
    tree
}

/// The `Kernel dependencies` line, or with `--dep-tree` the tree under the
/// kernel's own name (`|-- ` and `` `-- `` branches, as 0.19.1 draws it).
fn print_dependencies(printer: &Printer, info: &KernelInfo, (tree, as_tree): (&DepTree, bool)) {
    if !as_tree {
        let all = tree.repos();
        let line = (!all.is_empty()).then(|| all.join(", "));
        printer.data(format_args!("Kernel dependencies: {}", or_dash(line)));
        return;
    }
    printer.data("Kernel dependencies:");
    match &info.origin {
        Origin::Hub { repo_id, .. } => printer.data(repo_id),
        Origin::Path(path) => printer.data(path),
    }
    fn draw(printer: &Printer, tree: &DepTree, prefix: &str) {
        for (i, (repo, below)) in tree.0.iter().enumerate() {
            let last = i + 1 == tree.0.len();
            printer.data(format_args!(
                "{prefix}{}{repo}",
                if last { "`-- " } else { "|-- " }
            ));
            draw(
                printer,
                below,
                &format!("{prefix}{}", if last { "    " } else { "|   " }),
            );
        }
    }
    draw(printer, tree, "");
}

/// Reads the kernel: a local directory, the cache (offline) or the Hub.
fn describe(
    args: &InfoArgs,
    repo_type: RepoType,
    runtime: Option<KernelsVersion>,
    settings: &Settings,
    printer: &Printer,
) -> miette::Result<(KernelInfo, Vec<String>)> {
    let path = Path::new(&args.kernel);
    if path.is_dir() {
        let shown = display_path(&args.kernel);
        if args.revision.is_some() || args.version.is_some() {
            return Err(LocalRevision { path: shown }.into());
        }
        let info = describe_local(path, Origin::Path(shown), runtime)?;
        if info.variants.is_empty() {
            return Err(InfoError::NoLocalVariants {
                build_dir: crate::info::build_dir(Path::new(&display_path(&args.kernel))),
            }
            .into());
        }
        return Ok((info, Vec::new()));
    }
    let repo_id: RepoId = args.kernel.parse().map_err(|err| NotAKernel {
        given: args.kernel.clone(),
        problem: format!("{err}"),
    })?;
    let cache = settings.cache();
    if settings.offline || args.offline {
        return Ok(describe_cached(&cache, &repo_id, &args.choice(), runtime)?);
    }
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    super::project::client::runtime()?
        .block_on(describe_hub(
            &client,
            &cache,
            repo_type,
            &repo_id,
            &args.choice(),
            runtime,
        ))
        .map_err(|err| match err {
            InfoError::Hub(err) => super::project::causes::hub_failure(err, settings),
            other => other.into(),
        })
}

/// The warning for a directory under `build/` that is no variant.
fn skipped_warning(info: &KernelInfo, name: &str) -> String {
    match &info.origin {
        Origin::Hub {
            repo_id, revision, ..
        } => format!(
            "{repo_id} (revision: {revision}) contains invalid build variant {name:?}; skipped"
        ),
        Origin::Path(path) => format!("{path}/build/{name} is no build variant; skipped"),
    }
}

/// The warning for a variant whose `metadata.json` cannot be read.
fn invalid_warning(variant: &VariantInfo) -> Option<String> {
    match &variant.metadata {
        crate::info::MetadataState::Invalid(problem) => Some(format!(
            "build/{}/metadata.json is invalid: {problem}",
            variant.name
        )),
        _ => None,
    }
}

/// `None` as `-`, as the reference prints a missing value.
fn or_dash(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// What the text output shows.
struct Text<'a> {
    info: &'a KernelInfo,
    context: &'a FitContext<'a>,
    /// The variant this environment would load, and the ABI verdict on its
    /// compiled files when an image is declared.
    variant: (Option<&'a str>, Option<&'a AbiVerdictDoc>),
    /// The dependencies, and whether to draw them as a tree.
    tree: (&'a DepTree, bool),
}

/// The reference's lines, then the targets and the variant table.
fn print_text(printer: &Printer, text: &Text<'_>) {
    let Text {
        info,
        context,
        variant,
        tree,
    } = *text;
    match &info.origin {
        Origin::Hub {
            repo_id, revision, ..
        } => {
            printer.data(format_args!("Repository: {repo_id}"));
            printer.data(format_args!("Revision: {revision}"));
        }
        Origin::Path(path) => printer.data(format_args!("Path: {path}")),
    }
    printer.data(format_args!("Variant: {}", or_dash(variant.0)));
    if let Some(abi) = variant.1 {
        printer.data(format_args!("ABI: {}", super::project::fit::abi_text(abi)));
    }
    let metadata = info.metadata();
    printer.data(format_args!(
        "Name: {}",
        or_dash(metadata.and_then(|m| m.name.as_deref()))
    ));
    printer.data(format_args!(
        "Version: {}",
        or_dash(metadata.and_then(|m| m.version))
    ));
    printer.data(format_args!(
        "Minimum kernels version: {}",
        or_dash(metadata.and_then(|m| m.kernels_minver))
    ));
    printer.data(format_args!(
        "License: {}",
        or_dash(metadata.and_then(|m| m.license.as_deref()))
    ));
    printer.data(format_args!(
        "Upstream: {}",
        or_dash(metadata.and_then(|m| m.upstream.as_deref()))
    ));
    printer.data(format_args!(
        "Source: {}",
        or_dash(metadata.and_then(|m| m.source.as_deref()))
    ));
    print_dependencies(printer, info, tree);
    let depends = metadata
        .map(|m| m.python_depends.join(", "))
        .filter(|d| !d.is_empty());
    printer.data(format_args!("Python dependencies: {}", or_dash(depends)));
    printer.data(format_args!("Backends: {}", info.backends().join(", ")));
    printer.data("");
    printer.data(format_args!("Targets: {}", targets_line(context)));
    printer.data(format_args!("Variants ({}):", info.variants.len()));
    let rows: Vec<[String; 4]> = info
        .variants
        .iter()
        .map(|v| {
            let archs = if v.archs().is_empty() {
                "-".to_owned()
            } else {
                v.archs().join(", ")
            };
            [
                v.name.clone(),
                v.backend.clone(),
                archs,
                verdict(&v.fit(context)),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [name, backend, archs, verdict] in rows {
        printer.data(format_args!(
            "  {name:w0$}  {backend:w1$}  {archs:w2$}  {verdict}"
        ));
    }
}

/// What the archs and `kernels-minver` were checked against.
fn targets_line(context: &FitContext<'_>) -> String {
    let mut parts = Vec::new();
    if context.targets.is_empty() {
        parts.push("archs not checked (no --cuda-capability or --rocm-arch)".to_owned());
    } else {
        let targets: Vec<String> = context.targets.iter().map(ToString::to_string).collect();
        parts.push(targets.join(", "));
    }
    match context.runtime {
        Some(runtime) => parts.push(format!("kernels {runtime}")),
        None => parts.push("kernels-minver not checked (no --target-runtime)".to_owned()),
    }
    parts.join("; ")
}

/// One variant's verdict for the table.
fn verdict(fit: &VariantFit) -> String {
    match fit {
        VariantFit::Checked(fit) if fit.fits() => {
            let warnings: Vec<String> = fit
                .warnings
                .iter()
                .map(|w| format!(" (warning: {w})"))
                .collect();
            format!("fits{}", warnings.concat())
        }
        VariantFit::Checked(fit) => {
            let reasons: Vec<String> = fit.refusals.iter().map(ToString::to_string).collect();
            format!("refused: {}", reasons.join("; "))
        }
        VariantFit::Unreadable(_) => "refused: metadata.json cannot be read".to_owned(),
        VariantFit::Unknown => "not checked: no metadata.json".to_owned(),
    }
}

/// The `--format json` document.
fn document<'a>(info: &'a KernelInfo, context: &FitContext<'_>) -> InfoDoc<'a> {
    let (repo_id, revision, commit, path) = match &info.origin {
        Origin::Hub {
            repo_id,
            revision,
            commit,
        } => (
            Some(repo_id.to_string()),
            Some(revision.as_str()),
            Some(commit),
            None,
        ),
        Origin::Path(path) => (None, None, None, Some(path.as_str())),
    };
    InfoDoc {
        schema: InfoDoc::SCHEMA,
        command: "info",
        repo_id,
        revision,
        path,
        metadata: info.metadata().map(|m| InfoMetadataDoc {
            name: m.name.as_deref(),
            version: m.version,
            kernels_minver: m.kernels_minver.map(|v| v.to_string()),
            license: m.license.as_deref(),
            upstream: m.upstream.as_deref(),
            source: m.source.as_deref(),
            python_depends: &m.python_depends,
        }),
        backends: info.backends(),
        commit,
        targets: InfoTargetsDoc {
            cuda_capabilities: context
                .targets
                .iter()
                .filter_map(|t| match t {
                    Target::Cuda(c) => Some(c.to_string()),
                    Target::Rocm(_) => None,
                })
                .collect(),
            rocm_archs: context
                .targets
                .iter()
                .filter_map(|t| match t {
                    Target::Rocm(arch) => Some(arch.clone()),
                    Target::Cuda(_) => None,
                })
                .collect(),
            runtime: context.runtime.map(|v| v.to_string()),
        },
        variants: info
            .variants
            .iter()
            .map(|v| variant_doc(v, context))
            .collect(),
        variant: None,
        kernel_depends: Vec::new(),
        dependency_tree: None,
        variant_abi: None,
    }
}

/// One variant of [`InfoDoc`].
fn variant_doc<'a>(variant: &'a VariantInfo, context: &FitContext<'_>) -> InfoVariantDoc<'a> {
    let fit = variant.fit(context);
    let (refusals, warnings, problem) = match &fit {
        VariantFit::Checked(fit) => (
            fit.refusals
                .iter()
                .map(|r| InfoRefusalDoc {
                    rule: r.rule(),
                    message: r.to_string(),
                })
                .collect(),
            fit.warnings.iter().map(ToString::to_string).collect(),
            None,
        ),
        VariantFit::Unreadable(problem) => (
            vec![InfoRefusalDoc {
                rule: "metadata",
                message: format!("metadata.json is invalid: {problem}"),
            }],
            Vec::new(),
            Some(problem.clone()),
        ),
        VariantFit::Unknown => (Vec::new(), Vec::new(), None),
    };
    InfoVariantDoc {
        name: &variant.name,
        backend: &variant.backend,
        archs: variant.archs(),
        metadata: match &variant.metadata {
            crate::info::MetadataState::Read(_) => "ok",
            crate::info::MetadataState::Missing => "missing",
            crate::info::MetadataState::Invalid(_) => "invalid",
        },
        problem,
        fits: fit.fits(),
        refusals,
        warnings,
    }
}
