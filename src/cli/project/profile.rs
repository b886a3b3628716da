//! The target runtime of a command as the CLI sees it: gathering the inputs of
//! [`crate::lock::profile::detect`] (the policy) and rendering its choice.

use std::path::{Path, PathBuf};

use crate::cli::args::RepoTypeArg;
use crate::cli::printer::Printer;
use crate::lock::format::{LOCK_FILE_NAME, LockFormat};
use crate::lock::profile::{
    DetectInputs, Installed, Profile, ProfileSource, detect, installed_kernels,
};
use crate::lock::profile::{Generation, RequirementForms, RuntimeVersion, VariantPreference};
use crate::variant::{ProbeScope, ProjectPython};
use kernels_types::CommitId;
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

/// What a command knows when it chooses its target runtime
/// ([`choose_profile_with`]).
pub struct ProfileInputs<'a> {
    /// The project directory (`.venv`, `kernels.lock`).
    pub project_dir: &'a Path,
    /// `--target-runtime`.
    pub option: Option<&'a str>,
    /// `target-runtime` under `[tool.kernels]`, with the pyproject path.
    pub manifest: Option<(&'a str, &'a Path)>,
    /// The existing lock's format.
    pub lock_format: Option<LockFormat>,
    /// `--repo-type`.
    pub repo_type: Option<RepoTypeArg>,
    /// The project's interpreter, asked for its `kernels` when neither the
    /// option, the manifest key nor the files of the environment name a
    /// runtime; the command reuses its probe for torch.
    pub python: &'a ProjectPython,
    /// How much that first question asks: [`ProbeScope::Torch`] when the
    /// command detects torch next, so that the interpreter starts once.
    pub scope: ProbeScope,
    /// Whether an installed runtime that cannot read the existing lock fails
    /// the command (every gate: `lock`, `add`, `lock --check`, `download`,
    /// `verify`) rather than being a warning (`env`, `tree`, `variants`).
    pub unreadable_fails: bool,
}

/// [`choose_profile_with`] for commands that detect no torch: the project's
/// interpreter is asked only for its `kernels` (no `import torch`), and only
/// when nothing else names the runtime; an installed runtime that cannot read
/// the lock fails the command ([`RuntimeCannotReadLock`]), as it fails every
/// gate (`lock`, `lock --check`, `--locked`, `download`, `verify`).
///
/// `first_lock` is given by the commands that write `kernels.lock` (`lock`,
/// `add`, and `download` through them), with the manifest's requirement
/// forms: with no lock and no runtime named or installed, the profile is that
/// of the newest runtime modelled that reads every form, said once, instead
/// of the default ([`DetectInputs::first_lock`]).
pub fn choose_profile(
    project_dir: &Path,
    option: Option<&str>,
    manifest_version: Option<(&str, &Path)>,
    lock_format: Option<LockFormat>,
    repo_type: Option<RepoTypeArg>,
    first_lock: Option<RequirementForms>,
    printer: &Printer,
) -> miette::Result<Profile> {
    let python =
        ProjectPython::for_project(project_dir, crate::cli::settings::virtual_env().as_deref());
    choose(
        &ProfileInputs {
            project_dir,
            option,
            manifest: manifest_version,
            lock_format,
            repo_type,
            python: &python,
            scope: ProbeScope::Runtime,
            unreadable_fails: true,
        },
        first_lock,
        printer,
    )
}

/// Chooses the profile of a command from its option, the `[tool.kernels]`
/// key, the existing lock's format and the installed `kernels` (its files,
/// else what the project's interpreter reports), with the `--repo-type`
/// override, and prints the one `Target runtime: …` line unless the printer
/// is quiet. The line is printed only with `-v`, unless an installed `kernels`
/// decided the profile (then it changes the result without any file saying so).
///
/// An installed runtime that cannot read the existing lock is one rule
/// however it was found: a warning, or with
/// [`ProfileInputs::unreadable_fails`] the [`RuntimeCannotReadLock`] error.
pub fn choose_profile_with(
    inputs: &ProfileInputs<'_>,
    printer: &Printer,
) -> miette::Result<Profile> {
    choose(inputs, None, printer)
}

/// [`choose_profile_with`], with the manifest's requirement forms when the
/// command writes a first lock ([`DetectInputs::first_lock`]).
fn choose(
    inputs: &ProfileInputs<'_>,
    first_lock: Option<RequirementForms>,
    printer: &Printer,
) -> miette::Result<Profile> {
    let installed = if inputs.option.is_some() || inputs.manifest.is_some() {
        None
    } else {
        let virtual_env = crate::cli::settings::virtual_env();
        let path_var = crate::cli::settings::path_var();
        installed_kernels(
            inputs.project_dir,
            virtual_env.as_deref(),
            path_var.as_deref(),
        )
        .or_else(|| interpreter_runtime(inputs.python, inputs.scope, printer))
    };
    let profile = detect(&DetectInputs {
        option: inputs.option,
        manifest: inputs.manifest,
        lock_format: inputs.lock_format,
        installed,
        repo_type: inputs.repo_type.map(Into::into),
        requirement_forms: first_lock.or_else(|| lock_requirement_forms(inputs)),
        first_lock: first_lock.is_some(),
    })?;
    // An installed runtime or a first lock's choice changes the result
    // without any file saying so: always said.
    let unsaid = matches!(
        profile.source,
        ProfileSource::Installed(_)
            | ProfileSource::LockFileAndInstalled(..)
            | ProfileSource::FirstLock(_)
    );
    if unsaid || printer.is_verbose() {
        printer.status(describe(&profile));
    }
    if let Some(note) = beyond_modelled_note(&profile) {
        printer.status(format_args!("note: {note}"));
    }
    if let (Some(installed), Some(format)) = (&profile.ignored_installed, inputs.lock_format) {
        if inputs.unreadable_fails {
            return Err(RuntimeCannotReadLock {
                lock: inputs.project_dir.join(LOCK_FILE_NAME),
                format: format.name(),
                runtime: installed.version.to_string(),
                found: installed.found.to_string(),
                help: relock_help(inputs.project_dir, installed.version),
            }
            .into());
        }
        printer.status(format_args!("warning: {}", cannot_read_lock(installed)));
    }
    Ok(profile)
}

/// The requirement forms of the project's manifest when they decide the
/// profile of an existing lock ([`DetectInputs::requirement_forms`]): a
/// variant-hash lock, and nothing but the lock to name the runtime. `None`
/// otherwise, and for a manifest that cannot be read (the command reports it).
fn lock_requirement_forms(inputs: &ProfileInputs<'_>) -> Option<RequirementForms> {
    let decides = inputs.lock_format == Some(LockFormat::VariantHash)
        && inputs.option.is_none()
        && inputs.manifest.is_none();
    if !decides {
        return None;
    }
    let manifest = crate::lock::manifest::Manifest::read(inputs.project_dir).ok()?;
    Some(RequirementForms::of(
        manifest.dependencies.iter().map(|d| &d.requirement),
    ))
}

/// The `kernels` the project's interpreter imports (one probe, reused by the
/// command), or `None` when it has none or cannot run (a command that needs
/// the interpreter reports that itself). A version this tool cannot read is a
/// warning.
fn interpreter_runtime(
    python: &ProjectPython,
    scope: ProbeScope,
    printer: &Printer,
) -> Option<Installed> {
    let runtime = python.probe(scope).ok()?.kernels.as_ref()?;
    match Installed::from_interpreter(&runtime.version, python.path(), &runtime.location) {
        Ok(installed) => Some(installed),
        Err(err) => {
            printer.status(format_args!(
                "warning: {} imports kernels from {}, but {err}; pass `--target-runtime VERSION` to name the runtime",
                python.path().display(),
                runtime.location.display()
            ));
            None
        }
    }
}

/// The lock is in a format the installed runtime cannot read: what
/// `download` and `verify` would fill the cache for could not be loaded.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "{} is in the {format} format, which kernels {runtime} (installed in {found}) cannot read",
    lock.display()
)]
#[diagnostic(code(kernels::profile::runtime_cannot_read_lock))]
pub struct RuntimeCannotReadLock {
    lock: PathBuf,
    format: &'static str,
    runtime: String,
    found: String,
    #[help]
    help: String,
}

/// The fix of [`RuntimeCannotReadLock`] for the project in `dir`: lock again
/// for `runtime`, after changing the first requirement that runtime does not
/// read (`kernels lock --target-runtime` would fail on it), or name the
/// runtime that does load the kernels.
fn relock_help(dir: &Path, runtime: RuntimeVersion) -> String {
    let relock = format!(
        "lock again for that runtime: `kernels lock --target-runtime {runtime}`; if another runtime loads these kernels, name it with `--target-runtime VERSION` or `target-runtime` under [tool.kernels]"
    );
    let profile = Profile::for_runtime(runtime, ProfileSource::Option);
    let unread = crate::lock::manifest::Manifest::read(dir)
        .ok()
        .and_then(|manifest| crate::lock::support::check_requirements(&profile, &manifest).err());
    match unread {
        Some(err) => format!(
            "kernels {runtime} reads integer versions only: first change the requirement of `{}` ({}) in {} to an integer version (`\"{}\" = N` for branch `vN`), then {relock}",
            err.repo_id, err.requirement, err.path, err.repo_id
        ),
        None => relock,
    }
}

/// The one status line `kernels lock` and `kernels download` print, e.g.
/// `Target runtime: kernels 0.10.5 (installed in .venv) — variant-hash lock, model repos, models-- cache`.
pub fn describe(profile: &Profile) -> String {
    let runtime = match profile.runtime {
        Some(version) => format!("kernels {version}"),
        None => "unknown".to_owned(),
    };
    let format = match profile.lock_format {
        LockFormat::VariantHash => "variant-hash lock",
        LockFormat::KernelLocks => "KernelLocks lock",
    };
    let repos = if profile.repo_type_overridden {
        format!("{} repos (--repo-type)", profile.repo_type.as_str())
    } else {
        format!("{} repos", profile.repo_type.as_str())
    };
    let why = match (&profile.source, &profile.ignored_installed) {
        (ProfileSource::LockFile(format), Some(installed)) => format!(
            "the existing kernels.lock is in the {} format, which kernels {} installed in {} cannot read",
            match format {
                LockFormat::VariantHash => "variant-hash",
                LockFormat::KernelLocks => "KernelLocks",
            },
            installed.version,
            installed.found
        ),
        (source, _) => why(source),
    };
    format!(
        "Target runtime: {runtime} ({why}) — {format}, {repos}, {} cache",
        profile.cache_prefix()
    )
}

/// Why the profile was chosen, as [`describe`] puts it in parentheses.
fn why(source: &ProfileSource) -> String {
    match source {
        ProfileSource::Option => "from --target-runtime".to_owned(),
        ProfileSource::Manifest => {
            "from `target-runtime` in [tool.kernels] of pyproject.toml".to_owned()
        }
        ProfileSource::LockFile(LockFormat::KernelLocks) => {
            "the existing kernels.lock is in the KernelLocks format".to_owned()
        }
        ProfileSource::LockFile(LockFormat::VariantHash) => {
            "the existing kernels.lock is in the variant-hash format; no matching kernels installed"
                .to_owned()
        }
        ProfileSource::LockFileAndStrings => {
            "the existing kernels.lock is in the variant-hash format and pyproject.toml has specifier strings: the newest runtime modelled that reads both".to_owned()
        }
        ProfileSource::LockFileAndInstalled(_, installed) => format!(
            "format of the existing kernels.lock, installed in {}",
            installed.found
        ),
        ProfileSource::Installed(installed) => {
            format!("installed in {}", installed.found)
        }
        ProfileSource::FirstLock(forms) if forms.strings => {
            "no kernels.lock and no runtime named or installed: the newest runtime modelled that reads the specifier strings in pyproject.toml".to_owned()
        }
        ProfileSource::FirstLock(_) => {
            "no kernels.lock and no runtime named or installed: the newest runtime modelled".to_owned()
        }
        ProfileSource::Default => {
            "no --target-runtime, [tool.kernels] target-runtime, kernels.lock or installed kernels found"
                .to_owned()
        }
    }
}

/// The one note for a target runtime of a later minor line than the newest
/// modelled ([`Profile::beyond_modelled`]): both versions, what is assumed,
/// and `kernels check` as the way to confirm. `None` for a modelled runtime.
pub fn beyond_modelled_note(profile: &Profile) -> Option<String> {
    let (runtime, modelled) = profile.beyond_modelled()?;
    Some(format!(
        "kernels {runtime} is newer than the newest runtime this tool models ({modelled}); assuming it behaves as {modelled} ({}, {} repos, {} cache, the variant rules of {modelled}); run `kernels check` after `kernels download` to confirm that {runtime} loads the kernels",
        match profile.lock_format {
            LockFormat::VariantHash => "variant-hash lock",
            LockFormat::KernelLocks => "KernelLocks lock",
        },
        profile.repo_type.as_str(),
        profile.cache_prefix()
    ))
}

/// The warning about an installed `kernels` that cannot read the lock format
/// in use ([`Profile::ignored_installed`]).
fn cannot_read_lock(installed: &Installed) -> String {
    format!(
        "kernels {} installed in {} cannot read this lock format; pass `--target-runtime {}` to write for it",
        installed.version, installed.found, installed.version
    )
}

/// The note for commands that use the cache when [`Profile::cache_is_ambiguous`].
pub const CACHE_HINT: &str = "a variant-hash kernels.lock does not say which runtime reads it; runtimes up to 0.13 read `models--` cache folders: pass `--target-runtime VERSION` or set `target-runtime` under [tool.kernels] if yours is one of them";

/// The note for a kernel whose locked commit is not in the cache folder of
/// `repo_type` but is in the other one (`models--` is read by runtimes up to
/// 0.13, `kernels--` from 0.14): the folder found, and how to name the runtime
/// that reads it. `None` when the other folder lacks the commit too.
pub fn other_folder_note(
    cache: &kernels_cache::HubCache,
    repo_type: RepoType,
    repo_id: &RepoId,
    commit: &CommitId,
) -> Option<String> {
    let (other, readers) = match repo_type {
        RepoType::Kernel => (RepoType::Model, "runtimes up to 0.13"),
        RepoType::Model => (RepoType::Kernel, "runtimes from 0.14"),
    };
    let repo = cache.repo(repo_id, other);
    if !repo.snapshot_dir(commit.as_str()).is_dir() {
        return None;
    }
    Some(format!(
        "{repo_id}@{} is in the cache only in {} (the `{}--` folder that {readers} read): if such a runtime loads this project, pass `--target-runtime VERSION` or set `target-runtime` under [tool.kernels]",
        commit.short(),
        repo.dir().display(),
        other.api_segment()
    ))
}

/// How `preference` ranks variants, for the `Environment: …` status line and
/// the `Variant order` row of `kernels env`. Without a named `runtime` (the
/// default profile) the order is the tool's own default, and no release range
/// is claimed for it.
pub fn describe_preference(
    preference: VariantPreference,
    runtime: Option<RuntimeVersion>,
) -> &'static str {
    if runtime.is_none() && preference == (VariantPreference::Exact { noarch: true }) {
        return "exact names [arch, noarch, universal] (the default: no target runtime is named)";
    }
    match preference {
        VariantPreference::Exact { noarch: true } => {
            "exact names [arch, noarch, universal] (kernels ≤0.12)"
        }
        VariantPreference::Exact { noarch: false } => {
            "exact names [arch, universal] (kernels before the noarch back-port)"
        }
        VariantPreference::ExactBefore011 { noarch: true } => {
            "exact names [arch, noarch, universal] (kernels ≤0.10: no CPU builds)"
        }
        VariantPreference::ExactBefore011 { noarch: false } => {
            "exact names [arch, universal] (kernels ≤0.10 before the noarch back-port: no CPU builds)"
        }
        VariantPreference::Resolver => "resolver of kernels 0.13–0.14",
        VariantPreference::ResolverStableAbi => "resolver of kernels 0.15+",
        VariantPreference::ResolverMetalMacos26 => match runtime.map(Generation::of) {
            Some(Generation::V018) => "resolver of kernels 0.18 (Metal builds need macOS 26)",
            Some(Generation::V019) => "resolver of kernels 0.19 (Metal builds need macOS 26)",
            _ => "resolver of kernels 0.17 (Metal builds need macOS 26)",
        },
    }
}

/// The target profile of the commands that describe a kernel for an
/// environment (`variants`, `versions`, `info`): as `kernels lock` chooses it
/// from `option` (`--target-runtime`), `target-runtime` of `pyproject.toml`,
/// the project's lock and the installed runtime; `needs_torch` asks the
/// interpreter for torch in the same probe. Notes are not shown.
///
/// # Errors
/// A `--target-runtime` or `target-runtime` that is no release.
pub fn query_profile(
    project_dir: &Path,
    option: Option<&str>,
    repo_type: Option<RepoTypeArg>,
    needs_torch: bool,
    python: &ProjectPython,
    printer: &Printer,
) -> miette::Result<Profile> {
    use crate::lock::format::Lockfile;
    use crate::lock::manifest::{MANIFEST_FILE_NAME, ToolSettings};
    let manifest_path = project_dir.join(MANIFEST_FILE_NAME);
    let tool = ToolSettings::read(project_dir).ok().flatten();
    let lock_path = project_dir.join(LOCK_FILE_NAME);
    let lock_format = fs_err::read_to_string(&lock_path)
        .ok()
        .and_then(|t| Lockfile::parse(&t, &lock_path).ok())
        .map(|l| l.format());
    choose_profile_with(
        &ProfileInputs {
            project_dir,
            option,
            manifest: ToolSettings::target_runtime_at(tool.as_ref(), &manifest_path),
            lock_format,
            repo_type,
            python,
            scope: ProbeScope::torch_if(needs_torch),
            unreadable_fails: false,
        },
        &printer.quiet_if(true),
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::lock::profile::{DetectInputs, FoundBy, RuntimeVersion};

    fn v(text: &str) -> RuntimeVersion {
        RuntimeVersion::parse(text).unwrap()
    }

    fn installed(version: &str, environment: &'static str) -> Installed {
        Installed {
            version: v(version),
            found: FoundBy::Files {
                environment,
                dist_info: PathBuf::from("kernels.dist-info"),
            },
        }
    }

    #[test]
    fn status_line_and_warning() {
        let old = Profile::for_runtime(v("0.10.5"), ProfileSource::Option);
        assert_eq!(
            describe(&old),
            "Target runtime: kernels 0.10.5 (from --target-runtime) — variant-hash lock, model repos, models-- cache"
        );
        let found = detect(&DetectInputs {
            installed: Some(installed("0.10.5", ".venv")),
            ..Default::default()
        })
        .unwrap();
        assert!(describe(&found).contains("(installed in .venv)"));
        let profile = detect(&DetectInputs {
            lock_format: Some(LockFormat::VariantHash),
            installed: Some(installed("0.17.2", "VIRTUAL_ENV")),
            ..Default::default()
        })
        .unwrap();
        assert!(
            cannot_read_lock(profile.ignored_installed.as_ref().unwrap())
                .contains("kernels 0.17.2 installed in VIRTUAL_ENV cannot read this lock format")
        );
    }

    #[test]
    fn interpreter_found_runtime_is_named_with_its_location() {
        let probed =
            Installed::from_interpreter("0.17.2", Path::new("python3"), Path::new("/opt/app/deps"))
                .unwrap();
        let found = detect(&DetectInputs {
            installed: Some(probed.clone()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            describe(&found),
            "Target runtime: kernels 0.17.2 (installed in python3 (importlib.metadata, /opt/app/deps)) — KernelLocks lock, kernel repos, kernels-- cache"
        );
        // The same rule as for a runtime found by its files: it cannot read a
        // variant-hash lock, which the status line says.
        let unreadable = detect(&DetectInputs {
            lock_format: Some(LockFormat::VariantHash),
            installed: Some(probed),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            describe(&unreadable),
            "Target runtime: unknown (the existing kernels.lock is in the variant-hash format, which kernels 0.17.2 installed in python3 (importlib.metadata, /opt/app/deps) cannot read) — variant-hash lock, kernel repos, kernels-- cache"
        );
        assert!(
            Installed::from_interpreter("main", Path::new("python3"), Path::new("/x")).is_err()
        );
    }
}
