//! Selection: which variants of a kernel to use, from the command-line
//! request ([`VariantRequest`]) to the choice among the directories a kernel
//! has ([`VariantSelection::choose`]), shared by download and verify.

use std::collections::BTreeSet;
use std::path::Path;

use super::{TorchEnv, VariantError};
use crate::lock::profile::VariantPreference;
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::BuildVariant;

/// Which variants to download, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantRequest {
    /// The best variant for the environment's torch (needs torch).
    Detect,
    /// Every directory under `build/`.
    All,
    /// Exactly these (each must exist).
    Named(Vec<String>),
}

/// A [`VariantRequest`] with the environment already detected; what the
/// download engine applies to each kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantSelection {
    /// The best variant for `env`, ranked by `preference`.
    Detected {
        /// The detected (or given) torch build.
        env: TorchEnv,
        /// How the target runtime ranks variants.
        preference: VariantPreference,
    },
    /// Every directory under `build/`.
    All,
    /// Exactly these.
    Named(Vec<String>),
}

/// What [`VariantSelection::select`] found among a kernel's variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The chosen variants: `available` order for [`VariantSelection::All`],
    /// command-line order (deduplicated) for [`VariantSelection::Named`], one
    /// element for [`VariantSelection::Detected`].
    pub variants: Vec<String>,
    /// Named variants that `available` lacks, in command-line order
    /// (deduplicated); always empty for the other selections.
    pub missing: Vec<String>,
}

/// Something worth telling the user about a kernel's variants; selection goes
/// on without it. The CLI renders it (and leaves it out when quiet).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantWarning {
    /// A directory under `build/` that is not a build-variant name (such as
    /// `torch-ext`), skipped by the resolver; it stays in lock files untouched.
    #[error("{repo_id}@{commit}: skipping `build/{name}`: not a build-variant name")]
    NotAVariantName {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: String,
        /// The directory name.
        name: String,
    },
}

impl VariantSelection {
    /// Chooses variants among `available` (the directory names under `build/`
    /// of `repo_id` at `commit`), as [`VariantSelection::select`] does, but a
    /// [`VariantSelection::Named`] selection of which `available` has none is
    /// an error. Each kernel takes the named variants it has, so one command
    /// can name a variant per kernel era (Docker builds of mixed projects).
    pub fn choose(
        &self,
        repo_id: &RepoId,
        commit: &str,
        available: &BTreeSet<String>,
    ) -> Result<Vec<String>, VariantError> {
        let choice = self.select(repo_id, commit, available)?;
        if let VariantSelection::Named(names) = self
            && choice.variants.is_empty()
        {
            return Err(VariantError::NotFound {
                repo_id: repo_id.clone(),
                commit: commit.to_owned(),
                variant: names.join("`, `"),
                available: available.iter().cloned().collect(),
            });
        }
        Ok(choice.variants)
    }

    /// Chooses variants among `available` without failing on missing names
    /// (they are returned in [`Choice::missing`]); fails only when a
    /// [`VariantSelection::Detected`] selection finds no variant for the
    /// environment. Names that are not build-variant names are skipped by the
    /// resolver; [`VariantSelection::warnings`] lists them.
    pub fn select(
        &self,
        repo_id: &RepoId,
        commit: &str,
        available: &BTreeSet<String>,
    ) -> Result<Choice, VariantError> {
        let variants = match self {
            VariantSelection::All => available.iter().cloned().collect(),
            VariantSelection::Named(names) => {
                let mut variants: Vec<String> = Vec::new();
                let mut missing: Vec<String> = Vec::new();
                for name in names {
                    let out = if available.contains(name) {
                        &mut variants
                    } else {
                        &mut missing
                    };
                    if !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                return Ok(Choice { variants, missing });
            }
            VariantSelection::Detected { env, preference } => {
                vec![best_for(env, *preference, repo_id, commit, available)?]
            }
        };
        Ok(Choice {
            variants,
            missing: Vec::new(),
        })
    }

    /// The warnings choosing among `available` gives: with a resolver
    /// preference, one per directory name that is not a build-variant name.
    pub fn warnings(
        &self,
        repo_id: &RepoId,
        commit: &str,
        available: &BTreeSet<String>,
    ) -> Vec<VariantWarning> {
        match self {
            VariantSelection::Detected {
                preference: VariantPreference::Resolver | VariantPreference::ResolverStableAbi,
                ..
            } => available
                .iter()
                .filter(|name| !BuildVariant::parse(name).is_known())
                .map(|name| VariantWarning::NotAVariantName {
                    repo_id: repo_id.clone(),
                    commit: commit.to_owned(),
                    name: name.clone(),
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The best variant of `available` for `env` under `preference`.
fn best_for(
    env: &TorchEnv,
    preference: VariantPreference,
    repo_id: &RepoId,
    commit: &str,
    available: &BTreeSet<String>,
) -> Result<String, VariantError> {
    let best = match preference {
        VariantPreference::Exact { noarch } => env
            .preference(noarch)
            .into_iter()
            .find(|v| available.contains(v)),
        VariantPreference::Resolver | VariantPreference::ResolverStableAbi => {
            let variants: Vec<BuildVariant> =
                available.iter().map(|n| BuildVariant::parse(n)).collect();
            env.resolve(&variants, preference)
                .first()
                .map(|v| v.name().to_owned())
        }
    };
    best.ok_or_else(|| VariantError::NoCompatible {
        repo_id: repo_id.clone(),
        commit: commit.to_owned(),
        wanted: match preference {
            VariantPreference::Exact { noarch } => env.preference(noarch).join(", "),
            _ => env.describe(),
        },
        available: available.iter().cloned().collect(),
    })
}

impl VariantRequest {
    /// Turns the request into a selection, detecting torch with `python` only
    /// for [`VariantRequest::Detect`]; `preference` is how the target runtime
    /// ranks variants.
    pub fn resolve(
        &self,
        python: &Path,
        preference: VariantPreference,
    ) -> Result<VariantSelection, VariantError> {
        self.resolve_with(python, preference, &super::EnvOverrides::default())
    }

    /// [`VariantRequest::resolve`] with the environment's values overridden
    /// (see [`super::EnvOverrides::resolve`]).
    pub fn resolve_with(
        &self,
        python: &Path,
        preference: VariantPreference,
        overrides: &super::EnvOverrides,
    ) -> Result<VariantSelection, VariantError> {
        Ok(match self {
            VariantRequest::Detect => VariantSelection::Detected {
                env: overrides.resolve(python)?.0,
                preference,
            },
            VariantRequest::All => VariantSelection::All,
            VariantRequest::Named(names) => VariantSelection::Named(names.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::testing::env;

    #[test]
    fn selection_rules() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = [
            "torch-cpu",
            "torch-universal",
            "torch27-cxx11-cu126-x86_64-linux",
        ]
        .map(String::from)
        .into();
        let exact = |cuda| VariantSelection::Detected {
            env: env(Some(cuda), "Linux", "x86_64"),
            preference: VariantPreference::Exact { noarch: true },
        };
        assert_eq!(
            exact("12.6").choose(&id, "c", &available).unwrap(),
            ["torch27-cxx11-cu126-x86_64-linux"]
        );
        assert_eq!(
            exact("12.8").choose(&id, "c", &available).unwrap(),
            ["torch-universal"]
        );
        assert_eq!(
            VariantSelection::All
                .choose(&id, "c", &available)
                .unwrap()
                .len(),
            3
        );
        let named = VariantSelection::Named(vec!["torch-cpu".into(), "torch-cpu".into()]);
        assert_eq!(named.choose(&id, "c", &available).unwrap(), ["torch-cpu"]);
        let err = VariantSelection::Named(vec!["torch-xpu".into()])
            .choose(&id, "c", &available)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("torch-xpu") && err.contains("torch-cpu, torch-universal"),
            "{err}"
        );
        let none = exact("12.6").choose(&id, "c", &BTreeSet::new());
        assert!(matches!(none, Err(VariantError::NoCompatible { .. })));
    }

    #[test]
    fn select_reports_missing_names_and_warnings_are_values() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = ["torch-ext", "torch-cpu", "torch-universal"]
            .map(String::from)
            .into();
        let named = VariantSelection::Named(vec![
            "torch-xpu".into(),
            "torch-cpu".into(),
            "torch-xpu".into(),
        ]);
        assert_eq!(
            named.select(&id, "c", &available).unwrap(),
            Choice {
                variants: vec!["torch-cpu".into()],
                missing: vec!["torch-xpu".into()],
            }
        );
        assert!(named.warnings(&id, "c", &available).is_empty());
        let resolver = VariantSelection::Detected {
            env: env(None, "Linux", "x86_64"),
            preference: VariantPreference::Resolver,
        };
        let warnings = resolver.warnings(&id, "c", &available);
        assert_eq!(
            warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["acme/relu@c: skipping `build/torch-ext`: not a build-variant name"]
        );
        let exact = VariantSelection::Detected {
            env: env(None, "Linux", "x86_64"),
            preference: VariantPreference::Exact { noarch: true },
        };
        assert!(exact.warnings(&id, "c", &available).is_empty());
    }
}
