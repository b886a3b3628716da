//! `kernels tree`, `kernels outdated` and `kernels versions`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use super::lock::RepoTypeArg;
use super::profile::choose_profile;
use super::{GlobalArgs, OutputFormat};
use crate::cli::settings::Settings;
use crate::lock::format::{KernelDependency, KernelVersion, LOCK_FILE_NAME, Lockfile};
use crate::lock::inspect::{self, Entry, EntryStatus};
use crate::lock::manifest::{Manifest, ToolSettings};
use crate::lock::profile::Profile;
use crate::variant::{VariantSelection, project_python};
use kernels_hub::HubClient;
use kernels_types::commit::short;
use kernels_types::repo_id::RepoId;

/// Arguments of `kernels tree`.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// Project directory (default: `--project`, else the nearest project upwards, else `.`).
    #[arg(value_name = "PROJECT_DIR")]
    pub project_arg: Option<std::path::PathBuf>,

    /// Show dependencies down to this depth (0: only the project's own).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,

    /// Also show, for each outdated entry, the newest version its requirement
    /// allows and the newest version overall.
    #[arg(long)]
    pub outdated: bool,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// Arguments of `kernels outdated`.
#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// Project directory (default: `--project`, else the nearest project upwards, else `.`).
    #[arg(value_name = "PROJECT_DIR")]
    pub project_arg: Option<std::path::PathBuf>,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// Arguments of `kernels versions`.
#[derive(Debug, clap::Args)]
pub struct VersionsArgs {
    /// Kernel repository, `owner/name`.
    pub repo_id: RepoId,

    /// Rank variants and choose the repository type as this `kernels` runtime
    /// does (default as for `kernels lock`).
    #[arg(long, value_name = "VERSION")]
    pub target_runtime: Option<String>,

    /// Override the target runtime's Hub repository type.
    #[arg(long, value_enum)]
    pub repo_type: Option<RepoTypeArg>,

    /// Also list every build variant of each version: `✅ NAME (compatible,
    /// preferred)`, `✅ NAME (compatible)` or the bare name, as the reference
    /// 0.13–0.14 `kernels versions` does.
    #[arg(long)]
    pub variants: bool,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// The lock (checked against the manifest first, as `kernels download` does),
/// its entries and the profile it was written for.
fn read_project(
    command: &str,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
) -> miette::Result<(Manifest, Lockfile, Vec<Entry>, Profile)> {
    super::stale::ensure_current(command, project_dir, None, settings, global, true)?;
    let manifest = Manifest::read(project_dir)?;
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if !lock_path.is_file() {
        return Err(miette::miette!(
            code = "kernels::tree::no_lock",
            help = "run `kernels lock` first",
            "{} does not exist",
            lock_path.display()
        ));
    }
    let lock = Lockfile::read(&lock_path)?;
    let profile = choose_profile(
        project_dir,
        None,
        manifest.target_runtime(),
        Some(lock.format()),
        None,
        true,
    )?;
    let entries = inspect::entries(&lock, &manifest);
    Ok((manifest, lock, entries, profile))
}

fn status_line(status: &EntryStatus) -> String {
    let show = |r: &Option<inspect::RefAt>| r.as_ref().map_or("-".to_owned(), |r| r.to_string());
    format!(
        "newest compatible: {}, newest: {}",
        show(&status.compatible),
        show(&status.newest)
    )
}

/// `kernels tree`.
pub fn run_tree(
    args: TreeArgs,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
) -> miette::Result<ExitCode> {
    let (manifest, _lock, entries, profile) = read_project("tree", project_dir, settings, global)?;
    let client = HubClient::new(&settings.client_config())?;
    let runtime = super::runtime()?;
    let children = runtime.block_on(inspect::depends_of(
        &client,
        Some(kernels_cache::HubCache::new(&settings.cache_dir)),
        profile.repo_type,
        &entries,
    ))?;
    let statuses: HashMap<String, EntryStatus> = if args.outdated {
        let refs = runtime.block_on(inspect::refs_of(
            &client,
            profile.repo_type,
            entries.iter().map(|e| e.repo_id.clone()),
        ));
        inspect::statuses(&entries, &refs)
            .into_iter()
            .zip(&entries)
            .map(|(s, e)| (key(e), s))
            .collect()
    } else {
        HashMap::new()
    };
    let by_key: HashMap<String, &Entry> = entries.iter().map(|e| (key(e), e)).collect();
    let mut printer = TreePrinter {
        by_key,
        children,
        statuses,
        depth: args.depth,
        shown: HashSet::new(),
        text: String::new(),
    };
    let mut json = Vec::new();
    for dep in &manifest.dependencies {
        let k = match &dep.requirement {
            crate::lock::requirement::Requirement::Branch(n) => {
                dep_key(dep.repo_id.as_str(), &KernelVersion::Version(*n))
            }
            crate::lock::requirement::Requirement::Revision(r) => {
                dep_key(dep.repo_id.as_str(), &KernelVersion::Revision(r.clone()))
            }
            _ => dep.repo_id.to_string(),
        };
        let k = if printer.by_key.contains_key(&k) {
            k
        } else {
            dep.repo_id.to_string()
        };
        json.push(printer.node(&k, dep.repo_id.as_str(), "", "", 0));
    }
    if args.format == OutputFormat::Json {
        println!(
            "{}",
            serde_json::json!({"schema": 1, "command": "tree", "dependencies": json})
        );
    } else {
        print!("{}", printer.text);
    }
    Ok(ExitCode::SUCCESS)
}

/// The key of an entry: the repo id for variant-hash entries, repo id and
/// version for 0.17 entries (a repository can be locked at two versions).
fn key(e: &Entry) -> String {
    match &e.dependency {
        Some(d) => dep_key(&d.repo_id, &d.version),
        None => e.repo_id.to_string(),
    }
}

fn dep_key(repo: &str, version: &KernelVersion) -> String {
    match version {
        KernelVersion::Version(n) => format!("{repo}@{n}"),
        KernelVersion::Revision(r) => format!("{repo}@rev:{r}"),
    }
}

struct TreePrinter<'a> {
    by_key: HashMap<String, &'a Entry>,
    children: HashMap<KernelDependency, Vec<KernelDependency>>,
    statuses: HashMap<String, EntryStatus>,
    depth: Option<usize>,
    shown: HashSet<String>,
    text: String,
}

impl TreePrinter<'_> {
    fn node(
        &mut self,
        k: &str,
        repo: &str,
        prefix: &str,
        branch: &str,
        depth: usize,
    ) -> serde_json::Value {
        let Some(entry) = self.by_key.get(k).copied() else {
            self.text
                .push_str(&format!("{prefix}{branch}{repo} (not locked)\n"));
            return serde_json::json!({"repo_id": repo, "locked": null});
        };
        let label = match (&entry.dependency, &entry.requirement) {
            (Some(d), _) => match &d.version {
                KernelVersion::Version(n) => format!("v{n}"),
                KernelVersion::Revision(r) => r.clone(),
            },
            (None, _) => self
                .statuses
                .get(k)
                .map(|s| s.locked.label.clone())
                .unwrap_or_else(|| inspect::requirement_text(&entry.requirement)),
        };
        let mut line = format!("{prefix}{branch}{repo} {label} ({})", short(&entry.commit));
        let status = self.statuses.get(k).cloned();
        if let Some(status) = status.as_ref().filter(|s| s.outdated) {
            line.push_str(&format!(" [{}]", status_line(status)));
        }
        let kids: Vec<KernelDependency> = entry
            .dependency
            .as_ref()
            .and_then(|d| self.children.get(d))
            .cloned()
            .unwrap_or_default();
        let repeated = !kids.is_empty() && !self.shown.insert(k.to_owned());
        if repeated {
            line.push_str(" (*)");
        }
        self.text.push_str(&line);
        self.text.push('\n');
        let mut json_children = Vec::new();
        let deeper = self.depth.is_none_or(|d| depth < d);
        if !repeated && deeper {
            let child_prefix = format!(
                "{prefix}{}",
                match branch {
                    "" => "",
                    "└── " => "    ",
                    _ => "│   ",
                }
            );
            for (i, kid) in kids.iter().enumerate() {
                let last = i + 1 == kids.len();
                let kk = dep_key(&kid.repo_id, &kid.version);
                json_children.push(self.node(
                    &kk,
                    &kid.repo_id,
                    &child_prefix,
                    if last { "└── " } else { "├── " },
                    depth + 1,
                ));
            }
        }
        let mut doc = serde_json::json!({
            "repo_id": repo,
            "requirement": inspect::requirement_text(&entry.requirement),
            "locked": {"label": label, "commit": entry.commit},
            "dependencies": json_children,
        });
        if let Some(status) = status {
            doc["compatible"] = serde_json::to_value(&status.compatible).unwrap_or_default();
            doc["newest"] = serde_json::to_value(&status.newest).unwrap_or_default();
            doc["outdated"] = status.outdated.into();
        }
        if repeated {
            doc["repeated"] = true.into();
        }
        doc
    }
}

/// `kernels outdated`: one row per outdated lock entry; exit 0 either way.
pub fn run_outdated(
    args: OutdatedArgs,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
) -> miette::Result<ExitCode> {
    let (_manifest, _lock, entries, profile) =
        read_project("outdated", project_dir, settings, global)?;
    let client = HubClient::new(&settings.client_config())?.with_retry_observer(
        super::download::retry_observer(
            &retries(global.quiet || args.format == OutputFormat::Json),
            &settings.endpoint,
        ),
    );
    let refs = super::runtime()?.block_on(inspect::refs_of(
        &client,
        profile.repo_type,
        entries.iter().map(|e| e.repo_id.clone()),
    ));
    let unread: Vec<&RepoId> = unique(entries.iter().map(|e| &e.repo_id))
        .filter(|repo| refs.get(*repo).is_some_and(Result::is_err))
        .collect();
    if !global.quiet {
        for line in refs_warnings(&unread, &refs, settings) {
            eprintln!("warning: {line}");
        }
    }
    let statuses = inspect::statuses(&entries, &refs);
    if args.format == OutputFormat::Json {
        println!(
            "{}",
            serde_json::json!({"schema": 1, "command": "outdated", "kernels": statuses})
        );
        return Ok(ExitCode::SUCCESS);
    }
    let show = |r: &Option<inspect::RefAt>| r.as_ref().map_or("-".to_owned(), |r| r.to_string());
    let rows: Vec<[String; 4]> = statuses
        .iter()
        .filter(|s| s.outdated)
        .map(|s| {
            [
                s.repo_id.clone(),
                s.locked.to_string(),
                show(&s.compatible),
                show(&s.newest),
            ]
        })
        .collect();
    if rows.is_empty() {
        if !global.quiet {
            let unchecked = statuses
                .iter()
                .filter(|s| unread.iter().any(|r| r.as_str() == s.repo_id))
                .count();
            let checked = statuses.len() - unchecked;
            match (checked, unchecked) {
                (n, 0) => eprintln!(
                    "All {} locked kernel{} are up to date",
                    n,
                    if n == 1 { "" } else { "s" }
                ),
                (0, n) => eprintln!(
                    "No locked kernel could be checked ({} not read, above)",
                    super::progress::plural(n, "kernel")
                ),
                (c, n) => eprintln!(
                    "{} checked {} up to date; {} could not be checked (above)",
                    super::progress::plural(c, "locked kernel"),
                    if c == 1 { "is" } else { "are" },
                    n
                ),
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "Repository".to_owned(),
        "Locked".to_owned(),
        "Compatible".to_owned(),
        "Newest".to_owned(),
    ];
    let mut widths = [0usize; 4];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

/// Retry lines of metadata requests on stderr, unless `quiet`.
fn retries(quiet: bool) -> super::progress::Progress {
    super::progress::Progress::new(
        if quiet {
            super::progress::ProgressMode::Quiet
        } else {
            super::progress::ProgressMode::Lines
        },
        false,
    )
}

/// Each item once, in order.
fn unique<'a>(items: impl Iterator<Item = &'a RepoId>) -> impl Iterator<Item = &'a RepoId> {
    let mut seen = HashSet::new();
    items.filter(move |r| seen.insert(*r))
}

/// One warning per cause for the repositories whose refs could not be read
/// (in `unread` order): the Hub unreachable once, naming the endpoint;
/// otherwise the first error, naming the repositories it stands for.
fn refs_warnings(
    unread: &[&RepoId],
    refs: &HashMap<RepoId, Result<kernels_types::wire::GitRefs, kernels_hub::HubError>>,
    settings: &Settings,
) -> Vec<String> {
    use super::causes::{cause_key, connect_failure, name_kernels, root_cause};
    let mut groups: Vec<(String, Vec<String>, &kernels_hub::HubError)> = Vec::new();
    for repo in unread {
        let Some(Err(err)) = refs.get(*repo) else {
            continue;
        };
        let key = cause_key(err);
        match groups.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, repos, _)) => repos.push(repo.to_string()),
            None => groups.push((key, vec![repo.to_string()], err)),
        }
    }
    groups
        .into_iter()
        .map(
            |(_, repos, err)| match connect_failure(err, &settings.endpoint) {
                Some(source) => format!(
                    "cannot reach the Hub at {} ({}); not checked: {}",
                    settings.endpoint,
                    root_cause(source),
                    name_kernels(&repos)
                ),
                None if repos.len() == 1 => format!("cannot read the refs of {}: {err}", repos[0]),
                None => format!("cannot read the refs of {}: {err}", name_kernels(&repos)),
            },
        )
        .collect()
}

/// `kernels versions REPO`.
pub fn run_versions(
    args: VersionsArgs,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
) -> miette::Result<ExitCode> {
    let manifest_path = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let lock_format = std::fs::read_to_string(&lock_path)
        .ok()
        .and_then(|t| Lockfile::parse(&t, &lock_path).ok())
        .map(|l| l.format());
    let profile = choose_profile(
        project_dir,
        args.target_runtime.as_deref(),
        tool.as_ref()
            .and_then(|t| t.target_runtime.as_deref())
            .map(|v| (v, manifest_path.as_path())),
        lock_format,
        args.repo_type,
        true,
    )?;
    let client = HubClient::new(&settings.client_config())?.with_retry_observer(
        super::download::retry_observer(
            &retries(global.quiet || args.format == OutputFormat::Json),
            &settings.endpoint,
        ),
    );
    let versions = super::runtime()?
        .block_on(inspect::versions(&client, profile.repo_type, &args.repo_id))
        .map_err(|err| super::causes::hub_failure(err, settings))?;
    let python = project_python(project_dir, crate::cli::settings::virtual_env().as_deref());
    let env = match crate::variant::TorchEnv::detect(&python) {
        Ok(env) => Some(env),
        Err(err) => {
            if !global.quiet {
                eprintln!("note: cannot tell which variants match this environment: {err}");
            }
            None
        }
    };
    let selection = env.as_ref().map(|env| VariantSelection::Detected {
        env: env.clone(),
        preference: profile.variant_preference,
    });
    let matching = |v: &inspect::VersionInfo| -> Option<String> {
        let available: BTreeSet<String> = v.variants.iter().cloned().collect();
        selection
            .as_ref()?
            .choose(&args.repo_id, &v.commit, &available)
            .ok()?
            .into_iter()
            .next()
    };
    if args.format == OutputFormat::Json {
        let list: Vec<serde_json::Value> = versions
            .iter()
            .map(|v| {
                let mut doc = serde_json::to_value(v).unwrap_or_default();
                doc["variant_count"] = v.variants.len().into();
                doc["matching"] = match (&selection, matching(v)) {
                    (None, _) => serde_json::Value::Null,
                    (Some(_), m) => m.map_or(false.into(), Into::into),
                };
                doc
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "schema": 1,
                "command": "versions",
                "repo_id": args.repo_id.to_string(),
                "environment": env.as_ref().map(|e| e.describe()),
                "versions": list,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    if versions.is_empty() {
        println!(
            "Repository does not support kernel versions: {}",
            args.repo_id
        );
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(env) = &env
        && !global.quiet
    {
        eprintln!("Environment: {}", env.describe());
    }
    for v in &versions {
        let head = match v.version {
            Some(n) => format!("Version {n} (branch {}, {})", v.name, short(&v.commit)),
            None => format!("Tag {} ({})", v.name, short(&v.commit)),
        };
        let count = v.variants.len();
        let fit = match (&selection, matching(v)) {
            (None, _) => String::new(),
            (Some(_), Some(m)) => format!(", ✅ {m} matches this environment"),
            (Some(_), None) => ", none matches this environment".to_owned(),
        };
        println!(
            "{head}: {count} build variant{}{fit}",
            if count == 1 { "" } else { "s" }
        );
        if args.variants {
            let parsed: Vec<kernels_types::variant_name::BuildVariant> = v
                .variants
                .iter()
                .map(|n| kernels_types::variant_name::BuildVariant::parse(n))
                .collect();
            let accepted: Vec<String> = env
                .as_ref()
                .map(|env| {
                    env.resolve(&parsed, profile.variant_preference)
                        .into_iter()
                        .map(|b| b.name().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            let best = matching(v);
            for name in &v.variants {
                if best.as_ref() == Some(name) {
                    println!("  ✅ {name} (compatible, preferred)");
                } else if accepted.contains(name) {
                    println!("  ✅ {name} (compatible)");
                } else {
                    println!("  {name}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
