//! A project's `kernels.lock` as the commands that use it read it (`download`,
//! `verify`, `env`, `check`, `benchmark`, `export`, `audit`): the locked
//! kernels, the target profile, the variant selection and fit policy, the ref
//! each entry was locked from, and the trust settings a download runs under;
//! the error of a project without a lock.

use std::path::{Path, PathBuf};

use crate::cli::args::SelectArgs;
use crate::cli::printer::Printer;
use crate::cli::project::profile::{
    CACHE_HINT, ProfileInputs, choose_profile_with, describe_preference,
};
use crate::install::DownloadOptions;
use crate::lock::format::{LOCK_FILE_NAME, LockedKernel, Lockfile};
use crate::lock::manifest::ToolSettings;
use crate::lock::profile::ProfileSource;
use crate::variant::{FitPolicy, ProbeScope, ProjectPython, VariantSelection};
use kernels_types::wire::RepoType;

/// A project directory without `kernels.lock`.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("no kernels.lock in {}: expected {}", dir.display(), path.display())]
#[diagnostic(code(kernels::download::no_lock))]
struct NoLock {
    dir: PathBuf,
    path: PathBuf,
    #[help]
    help: String,
}

/// What `download`, `verify` and `env` take from a project's `kernels.lock`,
/// read once.
pub struct LockRead {
    /// The locked kernels, in lock order.
    pub kernels: Vec<LockedKernel>,
    /// The variant selection for them.
    pub selection: VariantSelection,
    /// The target runtime's repository type.
    pub repo_type: RepoType,
    /// The target profile chosen for the lock.
    pub profile: crate::lock::profile::Profile,
    /// The lock file's format.
    pub format: crate::lock::format::LockFormat,
    /// What the runtime's load-time rules check the variants against.
    pub fit: FitPolicy,
    /// The ref each entry was locked from, where the lock or `pyproject.toml`
    /// says (see [`lock_refs`]).
    pub refs: Vec<crate::install::KernelRef>,
    /// The target runtime's digest receipt format to write after a variant
    /// is verified: the profile's, unless `runtime-receipts = false` is set
    /// under `[tool.kernels]`.
    pub runtime_receipts: Option<kernels_cache::RuntimeReceiptFormat>,
    /// `download` only ([`read_lock_with`]): the declared targets to select
    /// for one after the other (each is the `selection` of one pass, the
    /// first one `selection` itself); empty for one environment.
    pub per_target: Vec<crate::cli::project::declared::DeclaredEnv>,
}

impl LockRead {
    /// The kernels, the lock's format and the options of a run over them: the
    /// lock's repository type, variant selection, refs and fit policy, and
    /// `trust` for the signatures (`None` checks none); every other option at
    /// its default ([`DownloadOptions::new`]).
    pub fn into_options(
        self,
        trust: Option<std::sync::Arc<crate::install::signature::Trust>>,
    ) -> (
        Vec<LockedKernel>,
        crate::lock::format::LockFormat,
        DownloadOptions,
    ) {
        let options = DownloadOptions {
            refs: self.refs,
            fit: self.fit,
            trust,
            runtime_receipts: self.runtime_receipts,
            ..DownloadOptions::new(self.repo_type, self.selection)
        };
        (self.kernels, self.format, options)
    }
}

/// Reads `<project>/kernels.lock`, chooses the target profile (which prints
/// its `Target runtime: …` line unless the printer is quiet; an installed
/// runtime that cannot read the lock fails) and resolves the variant
/// selection (detecting torch only when the lock has kernels and no variant
/// flag is given). `python` is the project's interpreter: it is started at
/// most once, for the installed runtime and torch together, and its probe
/// stays with the caller ([`ProjectPython::probed`]).
pub fn read_lock(
    project_dir: &Path,
    select: &SelectArgs,
    python: &ProjectPython,
    printer: &Printer,
    frozen: bool,
) -> miette::Result<LockRead> {
    read_lock_with(project_dir, select, python, printer, frozen, false)
}

/// [`read_lock`]; with `every_target` (`kernels download`), a
/// `pyproject.toml` declaring several targets that are environments
/// ([`crate::cli::project::declared`]) and no environment flag selects for
/// each of them ([`LockRead::per_target`]), unless the project's torch is
/// one of them: then for that one alone.
pub fn read_lock_with(
    project_dir: &Path,
    select: &SelectArgs,
    python: &ProjectPython,
    printer: &Printer,
    frozen: bool,
    every_target: bool,
) -> miette::Result<LockRead> {
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    if !crate::lock::format::lock_file_exists(&lock_path)? {
        return Err(no_lock_error(project_dir));
    }
    let lockfile = Lockfile::read(&lock_path)?;
    let kernels = lockfile.locked_kernels(&lock_path)?;
    let tool = ToolSettings::read(project_dir)?;
    let manifest_path = project_dir.join(crate::lock::manifest::MANIFEST_FILE_NAME);
    let request = select.request();
    let overrides = select
        .env
        .overrides()
        .with_declared(ToolSettings::declared_target_at(
            tool.as_ref(),
            &manifest_path,
        ))
        .with_requires_python(tool.as_ref().and_then(|t| t.requires_python));
    // Nothing to select from: do not require torch for an empty lock.
    let needs_torch = !kernels.is_empty() && request.needs_torch(&overrides);
    let profile = choose_profile_with(
        &ProfileInputs {
            project_dir,
            option: select.runtime.version(),
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format: Some(lockfile.format()),
            repo_type: select.repo.repo_type,
            python,
            scope: ProbeScope::torch_if(needs_torch),
            unreadable_fails: true,
        },
        printer,
    )?;
    warn_unreadable_by_named_runtime(&profile, lockfile.format(), &lock_path, printer);
    if profile.cache_is_ambiguous() && !kernels.is_empty() && printer.is_verbose() {
        printer.status(format_args!("note: {CACHE_HINT}"));
    }
    let (selection, mut fit, per_target) = select_variants(
        &Selecting {
            select,
            tool: tool.as_ref(),
            manifest_path: &manifest_path,
            python,
            profile: &profile,
            overrides: &overrides,
            needs_torch,
            has_kernels: !kernels.is_empty(),
            every_target,
        },
        printer,
    )?;
    fit.images = crate::cli::project::fit::images(project_dir, None)?;
    let receipts_on = tool.as_ref().is_none_or(|t| t.runtime_receipts);
    Ok(LockRead {
        runtime_receipts: profile.runtime_receipts().filter(|_| receipts_on),
        refs: lock_refs(project_dir, &lockfile, &kernels, frozen),
        format: lockfile.format(),
        kernels,
        selection,
        repo_type: profile.repo_type,
        profile,
        fit,
        per_target,
    })
}

/// The inputs of [`select_variants`]: what [`read_lock_with`] read and chose.
struct Selecting<'a> {
    select: &'a SelectArgs,
    tool: Option<&'a ToolSettings>,
    manifest_path: &'a Path,
    python: &'a ProjectPython,
    profile: &'a crate::lock::profile::Profile,
    /// The flags with the one declared target under them.
    overrides: &'a crate::variant::EnvOverrides,
    /// Whether the selection needs torch (the project's Python was asked).
    needs_torch: bool,
    /// Whether the lock has kernels (else every variant: nothing to select).
    has_kernels: bool,
    /// `download`: select for each of several declared targets.
    every_target: bool,
}

/// The variant selection, the fit policy and `download`'s declared targets
/// ([`LockRead::per_target`]), with their status lines (the GPUs under `-v`,
/// the several-targets note, the environment).
fn select_variants(
    s: &Selecting<'_>,
    printer: &Printer,
) -> miette::Result<(
    VariantSelection,
    FitPolicy,
    Vec<crate::cli::project::declared::DeclaredEnv>,
)> {
    let rules = crate::variant::VariantRules::of_profile(s.profile);
    // `None`: the run selects for one environment as the other commands do.
    let several = match s.tool {
        Some(tool) if s.every_target && s.needs_torch && s.select.env.overrides().is_empty() => {
            several_targets(tool, s.manifest_path, s.python, printer)
        }
        _ => None,
    };
    let per_target = several.clone().unwrap_or_default();
    let selection = if !s.has_kernels {
        VariantSelection::All
    } else if let Some(first) = per_target.first() {
        VariantSelection::Detected {
            env: Box::new(first.env.clone()),
            rules,
        }
    } else {
        s.select
            .request()
            .resolve_with(s.python, rules, s.overrides)?
    };
    let fit = crate::cli::project::fit::policy(
        &s.select.targets.targets(),
        s.tool.map(|t| (t.targets.as_slice(), s.manifest_path)),
        s.needs_torch.then(|| s.python.probed()).flatten(),
        s.profile.runtime,
    );
    if fit.targets.is_checked() && printer.is_verbose() {
        let gpus = crate::cli::project::fit::attributed_gpus(&fit.targets, s.tool);
        printer.status(format_args!("Target GPUs: {gpus}"));
    }
    if let Some(note) = ToolSettings::several_targets_note(s.tool, s.manifest_path)
        .filter(|_| matches!(selection, VariantSelection::Detected { .. }))
        .filter(|_| several.is_none())
    {
        printer.status(format_args!("note: {note}"));
    }
    if per_target.is_empty() {
        print_environment(&selection, s.profile.runtime, printer);
    }
    Ok((selection, fit, per_target))
}

/// The declared targets `download` selects for one after the other: every
/// target of `tool` that is an environment, when there are several, unless
/// the project's torch (asked through `python`) is one of them, which is
/// then selected for alone (said once; empty). `None` for fewer than two.
fn several_targets(
    tool: &ToolSettings,
    path: &Path,
    python: &ProjectPython,
    printer: &Printer,
) -> Option<Vec<crate::cli::project::declared::DeclaredEnv>> {
    use crate::cli::project::declared::{declared_envs, is_local};
    let (envs, _) = declared_envs(tool, path);
    if envs.len() < 2 {
        return None;
    }
    if let Ok(local) = python.torch()
        && let Some(target) = envs.iter().find(|t| is_local(&local, t))
    {
        printer.status(format_args!(
            "note: the project's torch ({}) is {} of {}: downloading for it alone; `--torch-version` with a backend flag selects another target",
            local.describe(),
            target.key,
            path.display()
        ));
        return Some(Vec::new());
    }
    Some(envs)
}

/// Warns when a runtime the user named (flag or `pyproject.toml`) reads
/// another lock format than the lock's (`format`): it would fail on this lock
/// at run time, whatever the cache holds.
fn warn_unreadable_by_named_runtime(
    profile: &crate::lock::profile::Profile,
    format: crate::lock::format::LockFormat,
    lock_path: &Path,
    printer: &Printer,
) {
    if let (Some(runtime), ProfileSource::Option | ProfileSource::Manifest) =
        (profile.runtime, &profile.source)
        && profile.lock_format != format
    {
        printer.status(format_args!(
            "warning: {} is in the {} format, which kernels {runtime} cannot read (it reads {}); re-lock it for that runtime before shipping it: `kernels lock --target-runtime {runtime}`",
            shell_path(lock_path),
            format.name(),
            profile.lock_format.name(),
        ));
    }
}

/// The `Environment: …` status line of a detected selection; with `-v` it
/// names the target runtime's ranking too (`kernels env` shows it), like
/// the `Target runtime: …` line.
fn print_environment(
    selection: &VariantSelection,
    runtime: Option<crate::lock::profile::RuntimeVersion>,
    printer: &Printer,
) {
    if let VariantSelection::Detected { env, rules } = selection {
        if printer.is_verbose() {
            printer.status(format_args!(
                "Environment: {}; variants ranked by {}",
                env.describe(),
                describe_preference(rules.preference, runtime)
            ));
        } else {
            printer.status(format_args!("Environment: {}", env.describe()));
        }
    }
}

/// The error of a project directory `dir` without `kernels.lock`, with
/// the command that creates it.
pub fn no_lock_error(dir: &Path) -> miette::Report {
    NoLock {
        dir: dir.to_owned(),
        path: dir.join(LOCK_FILE_NAME),
        help: no_lock_help(dir),
    }
    .into()
}

/// How to get a `kernels.lock` in `dir`: lock the project, or, without a
/// `pyproject.toml` there, go to the project (or name it) first.
pub fn no_lock_help(dir: &Path) -> String {
    if dir
        .join(crate::lock::manifest::MANIFEST_FILE_NAME)
        .is_file()
    {
        format!("create it with `kernels lock {}`", shell_path(dir))
    } else {
        format!(
            "{} has no pyproject.toml either: run the command in the project directory or name it (`--project DIR`); a project declares its kernels under `[tool.kernels.dependencies]` and `kernels lock` writes the lock",
            shell_path(dir)
        )
    }
}

/// The trust a download of the project in `dir` runs under: its
/// `[tool.kernels]` trust settings with `flags` applied, and the file hashes
/// and signers its `kernels.lock.provenance` records. Errors: an unreadable manifest, or
/// a trust root that cannot be used (`kernels::trust::root_setting`, naming
/// where it was given, as `verify --signatures` and `verify-signature` do).
pub fn project_trust(
    dir: &Path,
    flags: &crate::cli::args::TrustArgs,
) -> miette::Result<crate::install::signature::Trust> {
    let tool = ToolSettings::read(dir)?.unwrap_or_default();
    let pins = crate::install::check::provenance::file_pins(dir);
    let settings = flags.apply(tool.signing);
    let root = flags.root(&settings, dir)?;
    Ok(crate::install::signature::Trust {
        root,
        settings,
        pins,
        recorded: crate::install::check::provenance::Recorded::read(dir),
    })
}

/// The `refs/<name>` each locked entry was resolved from, when the lock or
/// `pyproject.toml` says: a `KernelLocks` entry's `version = N` is branch `vN`
/// and its `revision` a branch or tag; for a variant-hash lock, the
/// `pyproject.toml` requirement (`N` → `vN`, a `revision` name as is). Commit
/// ids and version specifiers (whose tag the lock does not record) give none.
fn lock_refs(
    project_dir: &Path,
    lockfile: &Lockfile,
    kernels: &[LockedKernel],
    frozen: bool,
) -> Vec<crate::install::KernelRef> {
    use crate::install::KernelRef;
    use crate::lock::format::kernel_locks::KernelVersion;
    use crate::lock::requirement::Requirement;
    let is_commit = kernels_types::CommitId::is_commit_like;
    let mut out = Vec::new();
    if let Lockfile::KernelLocks(locks) = lockfile {
        for (dep, commit) in locks.iter() {
            let name = match &dep.version {
                KernelVersion::Version(n) => format!("v{n}"),
                KernelVersion::Revision(r) if !is_commit(r) => r.clone(),
                KernelVersion::Revision(_) => continue,
            };
            if let Ok(repo_id) = dep.repo_id.parse() {
                out.push(KernelRef {
                    repo_id,
                    commit: commit.clone(),
                    name,
                });
            }
        }
        return out;
    }
    // Under `--frozen` nothing checked that `pyproject.toml` still asks for
    // what was locked: a locked commit goes by the Hub's (or the cache's) refs
    // at that commit, never by an edited requirement.
    if frozen {
        return out;
    }
    let Ok(manifest) = crate::lock::manifest::Manifest::read(project_dir) else {
        return out;
    };
    for dep in &manifest.dependencies {
        let name = match &dep.requirement {
            Requirement::Branch(n) => format!("v{n}"),
            Requirement::Revision(r) if !is_commit(r) => r.clone(),
            _ => continue,
        };
        for kernel in kernels.iter().filter(|k| k.repo_id == dep.repo_id) {
            out.push(KernelRef {
                repo_id: kernel.repo_id.clone(),
                commit: kernel.commit.clone(),
                name: name.clone(),
            });
        }
    }
    out
}

/// A path as it can be pasted into a shell (quoted when it has special characters).
pub fn shell_path(path: &Path) -> String {
    let text = path.display().to_string();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:@,".contains(c))
    {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The project's interpreter as the commands that read the lock ask it
/// (`download`, `verify`): with the `python-depends` modules, and with the
/// stored probes under the cache (`<cache>/.locks/kernels-probes/`), so that
/// a warm run starts no interpreter.
pub fn lock_reader_python(
    project_dir: &Path,
    settings: &crate::cli::settings::Settings,
) -> ProjectPython {
    ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref())
        .with_modules(kernels_types::python_depends::ALL_MODULES)
        .with_receipts(crate::variant::ProbeReceipts::new(
            &settings.cache_dir,
            crate::cli::settings::interpreter_context(),
            crate::cli::settings::path_var(),
        ))
}
