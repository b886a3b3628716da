//! `kernels tree` and `kernels outdated`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::process::ExitCode;

use super::GlobalArgs;
use super::args::OutputFormat;
use super::args::ProjectArgs;
use super::json::{LockedNode, OutdatedDoc, TreeDoc, TreeNode};
use super::printer::Printer;
use super::project::profile::{ProfileInputs, choose_profile_with};
use crate::cli::settings::Settings;
use crate::lock::cooldown::Use;
use crate::lock::format::{KernelDependency, KernelVersion, LOCK_FILE_NAME, Lockfile};
use crate::lock::inspect::{self, Entry, EntryStatus, Freshness};
use crate::lock::manifest::Manifest;
use crate::lock::profile::Profile;
use crate::lock::requirement::Requirement;
use kernels_hub::{HubClient, HubError};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::GitRefs;

/// Arguments of `kernels tree`.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// Show dependencies down to this depth (0: only the project's own).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,

    /// Also show, for each outdated entry, the newest version its requirement
    /// allows and the newest version overall; an entry whose refs cannot be
    /// read is marked `[not checked]` (with one warning per cause).
    #[arg(long)]
    pub outdated: bool,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// Arguments of `kernels outdated`.
#[derive(Debug, clap::Args)]
pub struct OutdatedArgs {
    /// `PROJECT_DIR`.
    #[command(flatten)]
    pub project: ProjectArgs,

    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    /// Then benchmark every outdated kernel against the version it could
    /// move to, on this machine, in one run (`kernels benchmark REPO…
    /// --against`, the defaults of `kernels benchmark`): the candidate is
    /// downloaded first; exit 1 when a workload fails or does not match.
    #[arg(long, conflicts_with = "format")]
    pub benchmark: bool,
}

/// The lock (checked against the manifest first, as `kernels download` does),
/// its entries and the profile it was written for.
fn read_project(
    command: &str,
    project_dir: &Path,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<(Manifest, Lockfile, Vec<Entry>, Profile)> {
    super::project::stale::ensure_current(
        command,
        project_dir,
        super::project::stale::LockTarget::default(),
        settings,
        global,
        printer,
        super::project::stale::OnStale::Lock,
    )?;
    let manifest = Manifest::read(project_dir)?;
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(miette::miette!(
            code = "kernels::tree::no_lock",
            help = "run `kernels lock` first",
            "{} does not exist",
            lock_path.display()
        ));
    }
    let lock = Lockfile::read(&lock_path)?;
    // Shows the lock whatever runtime is installed (no gate).
    let python = crate::variant::ProjectPython::for_project(
        project_dir,
        crate::cli::settings::virtual_env().as_deref(),
    );
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: None,
            manifest: manifest.target_runtime(),
            lock_format: Some(lock.format()),
            repo_type: None,
            python: &python,
            scope: crate::variant::ProbeScope::Runtime,
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )?;
    let cache = settings.cache();
    let entries = inspect::entries(&lock, &manifest, Some(&cache), profile.repo_type);
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
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<ExitCode> {
    let (manifest, _lock, entries, profile) =
        read_project("tree", &args.project.project_dir, settings, global, printer)?;
    let client = HubClient::new(&settings.client_config(printer))?;
    let runtime = super::project::client::runtime()?;
    let children = runtime.block_on(inspect::depends_of(
        &client,
        Some(kernels_cache::HubCache::new(&settings.cache_dir)),
        profile.repo_type,
        &entries,
        crate::variant::VariantRules::of_profile(&profile)
            .generation
            .reads_dotted_names(),
    ))?;
    let statuses = if args.outdated {
        let found = runtime.block_on(outdated_statuses(&client, &profile, &entries));
        for cause in not_checked(&found.0, found.1, &settings.endpoint) {
            printer.status(format_args!(
                "warning: {}",
                cause.warning(&settings.endpoint)
            ));
        }
        found
            .0
            .into_iter()
            .zip(&entries)
            .map(|(s, e)| (key(e), s))
            .collect()
    } else {
        HashMap::new()
    };
    let refs = if args.outdated || settings.offline {
        HashMap::new()
    } else {
        runtime.block_on(unnamed_refs(&client, &profile, &entries))
    };
    let by_key: HashMap<String, &Entry> = entries.iter().map(|e| (key(e), e)).collect();
    let mut tree = TreePrinter {
        by_key,
        children,
        statuses,
        refs,
        depth: args.depth,
        shown: HashSet::new(),
        text: String::new(),
    };
    let mut json = Vec::new();
    for dep in &manifest.dependencies {
        let k = match &dep.requirement {
            Requirement::Branch(n) => dep_key(dep.repo_id.as_str(), &KernelVersion::Version(*n)),
            Requirement::Revision(r) => {
                dep_key(dep.repo_id.as_str(), &KernelVersion::Revision(r.clone()))
            }
            _ => dep.repo_id.to_string(),
        };
        let k = if tree.by_key.contains_key(&k) {
            k
        } else {
            dep.repo_id.to_string()
        };
        json.push(tree.node(&k, dep.repo_id.as_str(), "", "", 0));
    }
    if args.format == OutputFormat::Json {
        printer.json_line(&TreeDoc {
            schema: 1,
            command: "tree",
            dependencies: json,
        });
    } else {
        printer.data_raw(&tree.text);
    }
    Ok(ExitCode::SUCCESS)
}

/// `kernels tree --outdated`: each entry's status, in `entries` order, and
/// the refs they were read from (for the warnings about those not checked).
async fn outdated_statuses(
    client: &HubClient,
    profile: &Profile,
    entries: &[Entry],
) -> (
    Vec<EntryStatus>,
    BTreeMap<RepoId, Result<GitRefs, HubError>>,
) {
    let refs = inspect::refs_of(
        client,
        profile.repo_type,
        entries.iter().map(|e| e.repo_id.clone()),
    )
    .await;
    (inspect::statuses(entries, &refs), refs)
}

/// The Hub's refs of the repositories whose entries only the Hub can name (a
/// specifier whose tag the cache's `refs/` do not know, as before any
/// download), so that the tree shows the version `kernels lock` printed. A
/// repository whose refs cannot be read is left out: its line shows the commit
/// and the requirement.
async fn unnamed_refs(
    client: &HubClient,
    profile: &Profile,
    entries: &[Entry],
) -> HashMap<RepoId, GitRefs> {
    let unnamed = entries.iter().filter(|e| {
        e.label.is_none()
            && matches!(
                e.requirement,
                Requirement::Pep440(_) | Requirement::Semver(_)
            )
    });
    inspect::refs_of(
        client,
        profile.repo_type,
        unnamed.map(|e| e.repo_id.clone()),
    )
    .await
    .into_iter()
    .filter_map(|(repo, refs)| Some((repo, refs.ok()?)))
    .collect()
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
    /// The Hub's refs of entries only the Hub can name ([`unnamed_refs`]).
    refs: HashMap<RepoId, GitRefs>,
    depth: Option<usize>,
    shown: HashSet<String>,
    text: String,
}

/// Where a node of the tree is drawn: the lines above it and its own branch.
#[derive(Clone, Copy)]
struct At<'a> {
    /// The indentation of the parent's children (`│   `, `    `).
    prefix: &'a str,
    /// `├── `, `└── ` or nothing for a top-level entry.
    branch: &'a str,
    /// 0 for the project's own dependencies.
    depth: usize,
}

impl TreePrinter<'_> {
    /// Draws the entry `k` (`repo`, for the `(not locked)` line) and, down to
    /// `--depth`, what it depends on; returns its JSON node.
    fn node(&mut self, k: &str, repo: &str, prefix: &str, branch: &str, depth: usize) -> TreeNode {
        let at = At {
            prefix,
            branch,
            depth,
        };
        let Some(entry) = self.by_key.get(k).copied() else {
            self.text
                .push_str(&format!("{prefix}{branch}{repo} (not locked)\n"));
            return TreeNode::NotLocked {
                repo_id: repo.to_owned(),
                locked: None,
            };
        };
        let status = self.statuses.get(k).cloned();
        let locked = status.as_ref().map_or_else(
            || entry.locked(self.refs.get(&entry.repo_id)),
            |s| s.locked.clone(),
        );
        let mut line = format!("{prefix}{branch}{repo} {}", entry_text(entry, &locked));
        match &status {
            Some(s) if s.status == Freshness::Outdated => {
                line.push_str(&format!(" [{}]", status_line(s)));
            }
            Some(s) if s.status == Freshness::Unknown => line.push_str(" [not checked]"),
            _ => {}
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
        let deeper = self.depth.is_none_or(|d| depth < d);
        let json_children = if !repeated && deeper {
            self.children_of(&kids, at)
        } else {
            Vec::new()
        };
        TreeNode::Locked(Box::new(LockedNode {
            repo_id: repo.to_owned(),
            requirement: inspect::requirement_plain(&entry.requirement),
            requirement_kind: inspect::requirement_kind(&entry.requirement),
            locked,
            dependencies: json_children,
            status: status.map(Into::into),
            repeated: repeated.then_some(true),
        }))
    }

    /// Draws `kids`, the dependencies of the node drawn `at`; returns their
    /// JSON nodes.
    fn children_of(&mut self, kids: &[KernelDependency], at: At<'_>) -> Vec<TreeNode> {
        let child_prefix = format!(
            "{}{}",
            at.prefix,
            match at.branch {
                "" => "",
                "└── " => "    ",
                _ => "│   ",
            }
        );
        kids.iter()
            .enumerate()
            .map(|(i, kid)| {
                let last = i + 1 == kids.len();
                let kk = dep_key(&kid.repo_id, &kid.version);
                self.node(
                    &kk,
                    &kid.repo_id,
                    &child_prefix,
                    if last { "└── " } else { "├── " },
                    at.depth + 1,
                )
            })
            .collect()
    }
}

/// What a tree line says after the repository: the version label and commit,
/// the commit alone for a revision requirement, or the commit and the
/// requirement for a specifier whose tag neither the cache nor the Hub named.
fn entry_text(entry: &Entry, locked: &inspect::RefAt) -> String {
    let commit = entry.commit.short();
    if locked.is_named() {
        format!("{} ({commit})", locked.label)
    } else if matches!(&entry.requirement, Requirement::Revision(_)) {
        commit.to_string()
    } else {
        format!(
            "{commit} (requirement {})",
            inspect::requirement_text(&entry.requirement)
        )
    }
}

/// Repositories whose refs could not be read, with the same cause (as
/// `kernels download` groups failures: see `download::cause_key`).
struct Cause {
    /// The repositories, in lock order.
    repos: Vec<String>,
    /// The lock entries these repositories stand for.
    kernels: usize,
    /// The first repository's error.
    error: HubError,
    /// The deepest cause when the Hub could not be connected to at all.
    connect: Option<String>,
}

impl Cause {
    /// The repositories, at most three named.
    fn who(&self) -> String {
        let named: Vec<&str> = self.repos.iter().take(3).map(String::as_str).collect();
        match self.repos.len() {
            n if n > 3 => format!("{} and {} more", named.join(", "), n - 3),
            _ => named.join(", "),
        }
    }

    /// One line for `kernels tree --outdated`.
    fn warning(&self, endpoint: &str) -> String {
        match &self.connect {
            Some(cause) => format!(
                "cannot reach the Hub at {} ({cause}); not checked for newer versions: {}",
                kernels_types::text::redact(endpoint),
                self.who()
            ),
            None => format!(
                "{} not checked for newer versions: {}",
                self.who(),
                self.error
            ),
        }
    }

    /// The error of `kernels outdated`.
    fn report(self, endpoint: &str, total: usize) -> miette::Report {
        let who = self.who();
        match self.connect {
            Some(cause) => miette::Report::new(Unreachable {
                endpoint: endpoint.to_owned(),
                cause,
                count: count_of(self.kernels, total),
                kernels: who,
            }),
            None => {
                miette::Report::new(self.error).wrap_err(format!("cannot read the refs of {who}"))
            }
        }
    }
}

/// `2 of 6 locked kernels`, `the 6 locked kernels`, `the locked kernel`.
fn count_of(n: usize, total: usize) -> String {
    match (n, total) {
        (1, 1) => "the locked kernel".to_owned(),
        (n, t) if n == t => format!("the {t} locked kernels"),
        (n, t) => format!("{n} of {t} locked kernel{}", if t == 1 { "" } else { "s" }),
    }
}

/// The Hub cannot be reached at all: nothing could be checked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "cannot reach the Hub at {} ({cause}); could not check {count}: {kernels}",
    kernels_types::text::redact(endpoint)
)]
#[diagnostic(
    code(kernels::outdated::unreachable),
    help("check HF_ENDPOINT and the network; timeouts are set with HF_HUB_ETAG_TIMEOUT (seconds)")
)]
struct Unreachable {
    endpoint: String,
    cause: String,
    /// `the 6 locked kernels`.
    count: String,
    /// The repositories, at most three named.
    kernels: String,
}

/// Some entries could not be checked; the causes were printed before.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("could not check {count} (the causes are above){rest}")]
#[diagnostic(
    code(kernels::outdated::not_checked),
    help("fix the causes above and run `kernels outdated` again")
)]
struct NotChecked {
    /// `2 of 6 locked kernels`.
    count: String,
    /// `; the other 4: 1 outdated (listed above), 3 up to date`, `; the
    /// other is up to date`.
    rest: String,
}

/// The failed answers of `refs`, one [`Cause`] per cause, in the order of
/// the entries of `statuses`.
fn not_checked(
    statuses: &[EntryStatus],
    refs: BTreeMap<RepoId, Result<GitRefs, HubError>>,
    endpoint: &str,
) -> Vec<Cause> {
    let mut failed: BTreeMap<String, HubError> = refs
        .into_iter()
        .filter_map(|(repo, answer)| Some((repo.to_string(), answer.err()?)))
        .collect();
    let mut causes: Vec<(String, Cause)> = Vec::new();
    for status in statuses.iter().filter(|s| s.status == Freshness::Unknown) {
        if let Some((_, cause)) = causes
            .iter_mut()
            .find(|(_, c)| c.repos.contains(&status.repo_id))
        {
            cause.kernels += 1;
            continue;
        }
        let Some(error) = failed.remove(&status.repo_id) else {
            continue;
        };
        let connect = super::project::causes::connect_failure(&error, endpoint)
            .map(|s| super::project::causes::root_cause(s));
        let key = match &connect {
            Some(_) => "connect".to_owned(),
            None => super::project::causes::cause_key(&error),
        };
        match causes.iter_mut().find(|(k, _)| *k == key) {
            Some((_, cause)) => {
                cause.repos.push(status.repo_id.clone());
                cause.kernels += 1;
            }
            None => causes.push((
                key,
                Cause {
                    repos: vec![status.repo_id.clone()],
                    kernels: 1,
                    error,
                    connect,
                },
            )),
        }
    }
    causes.into_iter().map(|(_, c)| c).collect()
}

/// What `kernels outdated` leaves to do: nothing more (its exit code), or,
/// with `--benchmark`, benchmarking the outdated kernels against the versions
/// they could move to (which the dispatch hands to `kernels benchmark`).
pub enum Outdated {
    /// Done, with this exit code.
    Done(ExitCode),
    /// `--benchmark`: these outdated kernels are to be benchmarked.
    Benchmark(Vec<kernels_types::repo_id::RepoId>),
}

/// `kernels outdated`: one row per outdated lock entry. Exit 0 when every
/// entry was checked (outdated or not), 1 when the refs of any could not be
/// read: those are unknown, never up to date, and each cause is named once.
pub fn run_outdated(
    args: OutdatedArgs,
    settings: &Settings,
    global: &GlobalArgs,
    printer: &Printer,
) -> miette::Result<Outdated> {
    let (manifest, _lock, entries, profile) = read_project(
        "outdated",
        &args.project.project_dir,
        settings,
        global,
        printer,
    )?;
    // Retry lines are warnings: shown with JSON on stdout too.
    let client =
        super::project::client::client_showing_retries(settings, printer, printer.lines_mode())?;
    let refs = super::project::client::runtime()?.block_on(inspect::refs_of(
        &client,
        profile.repo_type,
        entries.iter().map(|e| e.repo_id.clone()),
    ));
    let mut statuses = inspect::statuses(&entries, &refs);
    note_held_back(&manifest, &client, &profile, &mut statuses)?;
    let causes = not_checked(&statuses, refs, &settings.endpoint);
    let count = |f: Freshness| statuses.iter().filter(|s| s.status == f).count();
    let tally = Tally {
        outdated: count(Freshness::Outdated),
        up_to_date: count(Freshness::UpToDate),
        unknown: count(Freshness::Unknown),
        total: statuses.len(),
    };
    if args.format == OutputFormat::Json {
        printer.json_line(&OutdatedDoc {
            schema: 1,
            command: "outdated",
            kernels: &statuses,
        });
    } else {
        print_outdated_table(printer, &statuses);
        print_held_back(printer, &statuses);
    }
    if tally.unknown > 0 {
        return Err(tally.error(causes, &settings.endpoint, args.format, printer));
    }
    if args.benchmark && tally.outdated > 0 {
        let repos = statuses
            .iter()
            .filter(|s| s.status == Freshness::Outdated)
            .filter_map(|s| s.repo_id.parse().ok())
            .collect();
        return Ok(Outdated::Benchmark(repos));
    }
    if tally.outdated == 0 && args.format == OutputFormat::Text {
        printer.status(format_args!(
            "All {} locked kernel{} are up to date",
            tally.total,
            if tally.total == 1 { "" } else { "s" }
        ));
    }
    Ok(Outdated::Done(ExitCode::SUCCESS))
}

/// What `kernels lock -U` would hold back now under the manifest's release
/// cooldown (`exclude-newer`, measured from now), noted in each status.
fn note_held_back(
    manifest: &Manifest,
    client: &HubClient,
    profile: &Profile,
    statuses: &mut [EntryStatus],
) -> miette::Result<()> {
    let cooldown = manifest
        .settings
        .cooldown
        .in_force(None, Use::Lock, jiff::Timestamp::now())
        .map_err(|err| {
            miette::miette!(
                code = "kernels::outdated::exclude_newer",
                "{}: exclude-newer: {err}",
                manifest.path.display()
            )
        })?;
    if let Some(cooldown) = &cooldown {
        super::project::client::runtime()?.block_on(inspect::held_back(
            client,
            profile.repo_type,
            cooldown,
            statuses,
        ));
    }
    Ok(())
}

/// One note per entry the cooldown holds back: what, by which setting, and
/// until when.
fn print_held_back(printer: &Printer, statuses: &[EntryStatus]) {
    for held in statuses.iter().filter_map(|s| s.held_back.as_ref()) {
        let until = held
            .until
            .map_or_else(|| "the cut-off moves past it".to_owned(), |u| u.to_string());
        printer.status(format_args!(
            "note: {} {} ({}) is held back by {} until {until}",
            held.repo_id,
            held.chosen,
            held.newest.id.short(),
            held.setting,
        ));
    }
}

/// How many lock entries `kernels outdated` found outdated, up to date and
/// not checkable.
struct Tally {
    outdated: usize,
    up_to_date: usize,
    unknown: usize,
    total: usize,
}

impl Tally {
    /// The error when some entries could not be checked: one cause for all
    /// of them is the error itself; several are printed, then summed up.
    fn error(
        &self,
        causes: Vec<Cause>,
        endpoint: &str,
        format: OutputFormat,
        printer: &Printer,
    ) -> miette::Report {
        let (unknown, total) = (self.unknown, self.total);
        if causes.len() == 1 && unknown == total {
            // One cause for everything: one error.
            let cause = causes.into_iter().next().expect("one");
            if cause.connect.is_some() {
                return cause.report(endpoint, total);
            }
            let report = cause.report(endpoint, total);
            return report.wrap_err(format!("could not check {}", count_of(unknown, total)));
        }
        for cause in causes {
            printer.error(format_args!("{:?}", cause.report(endpoint, total)));
        }
        let listed = if format == OutputFormat::Text {
            " (listed above)"
        } else {
            ""
        };
        let rest = match (self.outdated, self.up_to_date) {
            (0, 0) => String::new(),
            (1, 0) => format!("; the other is outdated{listed}"),
            (0, 1) => "; the other is up to date".to_owned(),
            (o, 0) => format!("; the other {o} are outdated{listed}"),
            (0, u) => format!("; the other {u} are up to date"),
            (o, u) => format!(
                "; of the other {}, {o} {} outdated{listed} and {u} up to date",
                o + u,
                if o == 1 { "is" } else { "are" }
            ),
        };
        NotChecked {
            count: count_of(unknown, total),
            rest,
        }
        .into()
    }
}

/// The table of outdated entries on stdout (nothing when none is).
fn print_outdated_table(printer: &Printer, statuses: &[EntryStatus]) {
    let show = |r: &Option<inspect::RefAt>| r.as_ref().map_or("-".to_owned(), |r| r.to_string());
    let rows: Vec<[String; 4]> = statuses
        .iter()
        .filter(|s| s.status == Freshness::Outdated)
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
        return;
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
        printer.data(cells.join("  ").trim_end());
    }
}
