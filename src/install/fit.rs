//! Fit before the cache is filled: which of a kernel's candidate variants the
//! target runtime would load, by the load-time rules of reference 0.17.2
//! ([`kernels_types::fit::check`] against the command's
//! [`FitPolicy`](crate::variant::FitPolicy)).
//!
//! [`walk`] goes through the alternatives of
//! [`VariantSelection::candidates`](crate::variant::VariantSelection::candidates),
//! best first, reading each variant's `build/<v>/metadata.json` through a
//! lookup (fetched into `blobs/` online, read from the snapshot by the warm
//! path and `verify`):
//!
//! * the environment's choice ([`Mode::FirstFitting`]) takes the first
//!   alternative whose loaded variant fits; a variant without metadata.json
//!   (older builds) fits, there is nothing to check;
//! * `--variant` ([`Mode::AllMustFit`]) refuses the run when a named variant
//!   does not fit (the runtime would refuse it);
//! * `--all-variants` ([`Mode::Report`]) takes everything and only reports.
//!
//! When nothing fits, [`DownloadError::Unfit`] names every refused variant,
//! the rule, the target and what would fit ([`help`]).

use std::future::Future;

use kernels_types::CommitId;
use kernels_types::fit::{FitWarning, Refusal, Target};
use kernels_types::metadata::{KernelsVersion, Metadata, MetadataError};
use kernels_types::repo_id::RepoId;

use super::error::DownloadError;
pub use super::error::RefusedVariant;
use crate::variant::{FitPolicy, VariantSelection};

/// File name of a variant's build metadata, `build/<v>/metadata.json`.
pub const METADATA_FILE: &str = "metadata.json";

/// The repo path of `variant`'s metadata, `build/<variant>/metadata.json`.
pub fn metadata_path(variant: &str) -> String {
    format!("build/{variant}/{METADATA_FILE}")
}

/// Something the runtime warns about when loading a variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantFitWarning {
    /// The variant directory name.
    pub variant: String,
    /// The warning.
    pub warning: FitWarning,
}

/// The fit of one kernel's variants, as a report carries it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelFit {
    /// The targets checked against (empty: the arch rule was not checked).
    pub targets: Vec<Target>,
    /// Candidates skipped because the runtime would refuse them (the
    /// environment's choice), or, with `--all-variants`, the variants taken
    /// that it would refuse.
    pub refused: Vec<RefusedVariant>,
    /// Warnings about the variants taken.
    pub warnings: Vec<VariantFitWarning>,
    /// Whether a variant checked declares `backend.archs` while no target is
    /// known (the arch rule could not be checked for it).
    pub archs_unchecked: bool,
    /// Refused candidates whose directory holds more than a metadata.json in
    /// the cached snapshot: the runtime takes them before the chosen variant
    /// and refuses them ([`unlink_refused`] leaves them).
    pub shadowing: Vec<String>,
}

impl KernelFit {
    /// A fit with `policy`'s targets and nothing checked yet.
    pub fn new(policy: &FitPolicy) -> KernelFit {
        KernelFit {
            targets: policy.targets.list.clone(),
            ..KernelFit::default()
        }
    }

    /// Checks `variant` (`None`: it has no metadata.json) and records the
    /// verdict; true when it fits.
    pub fn record(
        &mut self,
        policy: &FitPolicy,
        variant: &str,
        metadata: Option<&Metadata>,
    ) -> bool {
        let Some(metadata) = metadata else {
            return true;
        };
        let declares_archs = metadata
            .backend
            .as_ref()
            .is_some_and(|b| !b.archs.is_empty());
        self.archs_unchecked |= declares_archs && !policy.targets.is_checked();
        let fit = kernels_types::fit::check(metadata, &policy.context());
        if !fit.fits() {
            self.refused.push(RefusedVariant {
                variant: variant.to_owned(),
                refusals: fit.refusals,
            });
            return false;
        }
        self.warnings
            .extend(fit.warnings.into_iter().map(|warning| VariantFitWarning {
                variant: variant.to_owned(),
                warning,
            }));
        true
    }
}

/// How a selection treats variants the runtime would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The environment's choice: the first alternative that fits.
    FirstFitting,
    /// `--variant`: every named variant must fit.
    AllMustFit,
    /// `--all-variants`: everything is taken, fit is only reported.
    Report,
}

impl Mode {
    /// The mode of `selection`.
    pub fn of(selection: &VariantSelection) -> Mode {
        match selection {
            VariantSelection::Detected { .. } => Mode::FirstFitting,
            VariantSelection::Named(_) => Mode::AllMustFit,
            VariantSelection::All => Mode::Report,
        }
    }
}

/// What a lookup found for one variant.
#[derive(Debug)]
pub enum Lookup {
    /// Its metadata.json, parsed.
    Metadata(Box<Metadata>),
    /// The variant has no metadata.json (it fits: nothing to check).
    NoMetadata,
    /// Not known without a request (the warm path gives up).
    Unknown,
    /// Refused already by a check that reads more than its metadata (the
    /// ABI of its compiled files, [`crate::install::check::abi`]): an
    /// earlier attempt of this run fetched it and found it unfit, so the
    /// environment's choice falls back to the next alternative.
    Refused(Vec<Refusal>),
}

/// The variants a [`walk`] took and the fit it recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The variants to place, as the alternative lists them.
    pub variants: Vec<String>,
    /// The verdicts.
    pub fit: KernelFit,
}

/// The kernel a walk is about.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Hub repository.
    pub repo_id: &'a RepoId,
    /// Locked commit.
    pub commit: &'a CommitId,
    /// The target runtime's release, which decides how `kernels-minver` is
    /// parsed ([`Metadata::from_slice_for`]); `None`: as the current runtime.
    pub runtime: Option<KernelsVersion>,
}

/// Walks `alternatives` (best first, see the module docs) with `lookup`;
/// `Ok(None)` when a lookup answered [`Lookup::Unknown`].
///
/// # Errors
/// [`DownloadError::Unfit`] when nothing the mode accepts fits; whatever
/// `lookup` fails with (a fetch, [`DownloadError::InvalidMetadata`]).
pub async fn walk<F, Fut>(
    subject: Subject<'_>,
    alternatives: Vec<Vec<String>>,
    mode: Mode,
    policy: &FitPolicy,
    mut lookup: F,
) -> Result<Option<Chosen>, DownloadError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<Lookup, DownloadError>>,
{
    let mut fit = KernelFit::new(policy);
    for variants in alternatives {
        // The environment's choice loads the first variant of an alternative.
        let checked = match mode {
            Mode::FirstFitting => &variants[..variants.len().min(1)],
            Mode::AllMustFit | Mode::Report => &variants[..],
        };
        let mut fits = true;
        for variant in checked {
            let metadata = match lookup(variant.clone()).await? {
                Lookup::Metadata(metadata) => Some(*metadata),
                Lookup::NoMetadata => None,
                Lookup::Unknown => return Ok(None),
                Lookup::Refused(refusals) => {
                    fit.refused.push(RefusedVariant {
                        variant: variant.clone(),
                        refusals,
                    });
                    fits = false;
                    continue;
                }
            };
            fits &= fit.record(policy, variant, metadata.as_ref());
        }
        if fits || mode == Mode::Report {
            return Ok(Some(Chosen { variants, fit }));
        }
        if mode == Mode::AllMustFit {
            break;
        }
    }
    Err(unfit(subject, fit.refused, mode == Mode::AllMustFit))
}

/// [`DownloadError::Unfit`] for `refused`, with its [`help`].
pub fn unfit(subject: Subject<'_>, refused: Vec<RefusedVariant>, named: bool) -> DownloadError {
    DownloadError::Unfit {
        repo_id: subject.repo_id.clone(),
        commit: subject.commit.clone(),
        help: help(subject.repo_id, &refused, named),
        refused,
        named,
    }
}

/// What would fit instead, one line per distinct fix: another version of
/// the kernel for an arch or an allow-list refusal (`kernels variants REPO --all-versions`),
/// a newer `kernels` for `kernels-minver`, the missing Python package.
pub fn help(repo_id: &RepoId, refused: &[RefusedVariant], named: bool) -> String {
    let mut lines: Vec<String> = Vec::new();
    for refusal in refused.iter().flat_map(|r| &r.refusals) {
        let line = match refusal {
            // A named variant: another variant of the version may fit (the
            // last line says so).
            Refusal::Arch { .. } if named => continue,
            Refusal::Arch { target, .. } => format!(
                "no variant of this version supports {target}: find a version that has one with `kernels variants {repo_id} --all-versions` and lock it"
            ),
            Refusal::Minver { required, .. } => format!(
                "upgrade kernels to >= {required} (pip install --upgrade kernels) and re-lock"
            ),
            Refusal::DependencyMissing { package, .. } => format!(
                "install the missing Python package in the project's environment: pip install {package}"
            ),
            Refusal::DependencyNotAllowed { name, .. } => format!(
                "no kernels runtime allows `{name}`: lock a version without it (`kernels variants {repo_id} --all-versions`) or ask the kernel's publisher"
            ),
            Refusal::Abi { .. } => format!(
                "ship on an image the line above says would fit (`manylinux` of [tool.kernels] or `--manylinux`), or lock a version built for this image (`kernels variants {repo_id} --all-versions`)"
            ),
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    if named {
        let or = if lines.is_empty() { "" } else { "or " };
        lines.push(format!(
            "{or}drop the `--variant` the runtime refuses (without it the variant is chosen among those that fit)"
        ));
    }
    lines.join("\n")
}

/// Takes the refused candidates of `fit` out of the cached snapshot of
/// `commit` when all their directory holds is the metadata.json (linked by
/// `kernels lock`, which reads it, or an older run): the 0.17.2 runtime
/// takes the best variant directory it finds there, so a refused one would
/// shadow the chosen variant. A directory with more in it is left and named
/// in [`KernelFit::shadowing`]. Blobs stay; a cache that cannot be written
/// keeps what it has.
pub fn unlink_refused(repo: &kernels_cache::RepoCache, commit: &CommitId, fit: &mut KernelFit) {
    for refused in &fit.refused {
        let Ok(dir) = repo.snapshot_path(commit.as_str(), &format!("build/{}", refused.variant))
        else {
            continue;
        };
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        let names: Vec<std::ffi::OsString> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        if names.iter().any(|n| n != METADATA_FILE) {
            fit.shadowing.push(refused.variant.clone());
            continue;
        }
        let removed = fs_err::remove_file(dir.join(METADATA_FILE))
            .or_else(|err| {
                if err.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(err)
                }
            })
            .and_then(|()| fs_err::remove_dir(&dir));
        if let Err(err) = removed {
            tracing::warn!(
                "cannot take refused `{}` out of the snapshot: {err}",
                dir.display()
            );
        }
    }
}

/// [`Subject::runtime`] for a read that needs only the `digest` (verify's
/// digest check, the pin check): `kernels-minver` is read as a pre-0.17
/// runtime reads it, so a value only 0.17 and later refuse never hides the
/// digest; the fit check reads the file again with the target runtime.
pub const DIGEST_ONLY: Option<KernelsVersion> = Some(KernelsVersion {
    major: 0,
    minor: 0,
    patch: 0,
});

/// Parses the metadata.json `bytes` of `variant`.
///
/// # Errors
/// [`DownloadError::InvalidMetadata`] naming the file and the field.
pub fn parse_metadata(
    subject: Subject<'_>,
    variant: &str,
    bytes: &[u8],
) -> Result<Metadata, DownloadError> {
    Metadata::from_slice_for(bytes, subject.runtime).map_err(|problem: MetadataError| {
        DownloadError::InvalidMetadata {
            repo_id: subject.repo_id.clone(),
            commit: subject.commit.clone(),
            path: metadata_path(variant),
            problem,
        }
    })
}

/// Reads `variant`'s metadata.json from the cached snapshot of `commit`
/// ([`crate::lock::metadata::cached_bytes`]): [`Lookup::Metadata`] when it is
/// there, [`Lookup::NoMetadata`] when the variant directory is there without
/// it, else [`Lookup::Unknown`] (also for a file that cannot be read or whose
/// blob does not match its name: it is fetched again).
///
/// # Errors
/// [`DownloadError::InvalidMetadata`] for a file that does not parse.
pub fn cached_lookup(
    repo: &kernels_cache::RepoCache,
    subject: Subject<'_>,
    variant: &str,
) -> Result<Lookup, DownloadError> {
    if let Some(bytes) = crate::lock::metadata::cached_bytes(repo, subject.commit, variant) {
        return parse_metadata(subject, variant, &bytes).map(|m| Lookup::Metadata(Box::new(m)));
    }
    let commit = subject.commit.as_str();
    let present = |path: &str| repo.snapshot_path(commit, path).is_ok_and(|p| p.exists());
    Ok(if present(&metadata_path(variant)) {
        // There but unreadable, or a link whose blob does not match its name.
        Lookup::Unknown
    } else if present(&format!("build/{variant}")) {
        Lookup::NoMetadata
    } else {
        Lookup::Unknown
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use kernels_types::fit::Capability;

    fn policy() -> FitPolicy {
        FitPolicy {
            targets: crate::variant::Targets::resolve(
                &[Target::Cuda(Capability::new(9, 0))],
                None,
                None,
            ),
            ..FitPolicy::unchecked()
        }
    }

    fn metadata(archs: &str) -> Metadata {
        format!(r#"{{"version": 1, "python-depends": [], "backend": {{"type": "cuda", "archs": [{archs}]}}}}"#)
            .parse()
            .unwrap()
    }

    fn run(mode: Mode, alternatives: &[&[&str]]) -> Result<Option<Chosen>, DownloadError> {
        let repo_id: RepoId = "acme/relu".parse().unwrap();
        let commit = crate::variant::testing::commit();
        let subject = Subject {
            repo_id: &repo_id,
            commit: &commit,
            runtime: None,
        };
        let alternatives = alternatives
            .iter()
            .map(|a| a.iter().map(|s| (*s).to_owned()).collect())
            .collect();
        walk(subject, alternatives, mode, &policy(), |variant: String| {
            std::future::ready(Ok(match variant.as_str() {
                "old" => Lookup::Metadata(Box::new(metadata(r#""8.0""#))),
                "new" => Lookup::Metadata(Box::new(metadata(r#""9.0""#))),
                "bare" => Lookup::NoMetadata,
                _ => Lookup::Unknown,
            }))
        })
        .now_or_never()
        .expect("ready lookups")
    }

    #[test]
    fn the_first_fitting_alternative_is_taken() {
        let chosen = run(Mode::FirstFitting, &[&["old"], &["new"]])
            .unwrap()
            .unwrap();
        assert_eq!(chosen.variants, ["new"]);
        assert_eq!(chosen.fit.refused[0].variant, "old");
        assert_eq!(chosen.fit.refused[0].refusals[0].rule(), "archs");
        // No metadata.json: nothing to check, it fits.
        let bare = run(Mode::FirstFitting, &[&["bare"], &["new"]])
            .unwrap()
            .unwrap();
        assert_eq!(bare.variants, ["bare"]);
        // Unknown without a request: the caller decides.
        assert!(run(Mode::FirstFitting, &[&["gone"]]).unwrap().is_none());
        let err = run(Mode::FirstFitting, &[&["old"]]).unwrap_err();
        assert!(
            matches!(&err, DownloadError::Unfit { named: false, refused, .. } if refused.len() == 1)
        );
        assert!(
            err.to_string()
                .contains("  - old: archs: CUDA capability 9.0 is not supported"),
            "{err}"
        );
    }

    #[test]
    fn named_variants_must_fit_and_all_variants_only_report() {
        let err = run(Mode::AllMustFit, &[&["new", "old"]]).unwrap_err();
        assert!(matches!(err, DownloadError::Unfit { named: true, .. }));
        let all = run(Mode::Report, &[&["new", "old"]]).unwrap().unwrap();
        assert_eq!(all.variants, ["new", "old"]);
        assert_eq!(all.fit.refused.len(), 1);
    }
}
