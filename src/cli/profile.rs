//! The target runtime of a command as the CLI sees it: gathering the inputs of
//! [`crate::lock::profile::detect`] (the policy) and rendering its choice.

use std::path::Path;

use super::args::RepoTypeArg;
use super::printer::Printer;
use crate::lock::format::LockFormat;
use crate::lock::profile::VariantPreference;
use crate::lock::profile::{
    DetectInputs, Installed, Profile, ProfileSource, detect, installed_kernels,
};

/// Chooses the profile of a command from its option, the `[tool.kernels]`
/// key, the existing lock's format and the installed `kernels`, with the
/// `--repo-type` override, and prints the one `Target runtime: …` line (and a
/// warning about an installed `kernels` that cannot read the lock) unless the
/// printer is quiet.
/// The line is printed only with `-v`, unless an installed `kernels` decided the
/// profile (then it changes the result without any file saying so).
pub(super) fn choose_profile(
    project_dir: &Path,
    option: Option<&str>,
    manifest_version: Option<(&str, &Path)>,
    lock_format: Option<LockFormat>,
    repo_type: Option<RepoTypeArg>,
    printer: &Printer,
) -> miette::Result<Profile> {
    let virtual_env = super::settings::virtual_env();
    let path_var = super::settings::path_var();
    let profile = detect(&DetectInputs {
        option,
        manifest: manifest_version,
        lock_format,
        installed: installed_kernels(project_dir, virtual_env.as_deref(), path_var.as_deref()),
        repo_type: repo_type.map(Into::into),
    })?;
    let from_installed = matches!(
        profile.source,
        ProfileSource::Installed(_) | ProfileSource::LockFileAndInstalled(..)
    );
    if from_installed || printer.is_verbose() {
        printer.status(describe(&profile));
    }
    if let Some(installed) = &profile.ignored_installed {
        printer.status(format_args!("warning: {}", cannot_read_lock(installed)));
    }
    Ok(profile)
}

/// The one status line `kernels lock` and `kernels download` print, e.g.
/// `Target runtime: kernels 0.10.5 (installed in .venv) — variant-hash lock, model repos, models-- cache`.
pub(super) fn describe(profile: &Profile) -> String {
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
    format!(
        "Target runtime: {runtime} ({}) — {format}, {repos}, {} cache",
        why(&profile.source),
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
        ProfileSource::LockFileAndInstalled(_, installed) => format!(
            "format of the existing kernels.lock, installed in {}",
            installed.environment
        ),
        ProfileSource::Installed(installed) => {
            format!("installed in {}", installed.environment)
        }
        ProfileSource::Default => {
            "no --target-runtime, [tool.kernels] target-runtime, kernels.lock or installed kernels found"
                .to_owned()
        }
    }
}

/// The warning about an installed `kernels` that cannot read the lock format
/// in use ([`Profile::ignored_installed`]).
fn cannot_read_lock(installed: &Installed) -> String {
    format!(
        "kernels {} installed in {} cannot read this lock format; pass `--target-runtime {}` to write for it",
        installed.version, installed.environment, installed.version
    )
}

/// The note for commands that use the cache when [`Profile::cache_is_ambiguous`].
pub(super) const CACHE_HINT: &str = "a variant-hash kernels.lock does not say which runtime reads it; runtimes up to 0.13 read `models--` cache folders: pass `--target-runtime VERSION` or set `target-runtime` under [tool.kernels] if yours is one of them";

/// How `preference` ranks variants, for the `Environment: …` status line.
pub(super) fn describe_preference(preference: VariantPreference) -> &'static str {
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
        VariantPreference::ResolverMetalMacos26 => {
            "resolver of kernels 0.17+ (Metal builds need macOS 26)"
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::lock::profile::{DetectInputs, RuntimeVersion};

    fn v(text: &str) -> RuntimeVersion {
        RuntimeVersion::parse(text).unwrap()
    }

    fn installed(version: &str, environment: &'static str) -> Installed {
        Installed {
            version: v(version),
            environment,
            dist_info: PathBuf::from("kernels.dist-info"),
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
}
