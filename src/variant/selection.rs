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

impl VariantSelection {
    /// Chooses variants among `available` (the directory names under `build/`
    /// of `repo_id` at `commit`). The result is in `available` order for
    /// [`VariantSelection::All`], command-line order (deduplicated) for
    /// [`VariantSelection::Named`], and one element for
    /// [`VariantSelection::Detected`]. With a resolver preference, names that
    /// are not build-variant names (such as `torch-ext`) are skipped with a
    /// warning on stderr.
    pub fn choose(
        &self,
        repo_id: &RepoId,
        commit: &str,
        available: &BTreeSet<String>,
    ) -> Result<Vec<String>, VariantError> {
        let avail = || available.iter().cloned().collect::<Vec<_>>();
        match self {
            VariantSelection::All => Ok(avail()),
            VariantSelection::Named(names) => {
                // Each kernel takes the named variants it has, so one command can
                // name a variant per kernel era (Docker builds of mixed projects);
                // a kernel that has none of them is an error.
                let mut out: Vec<String> = Vec::new();
                for name in names {
                    if available.contains(name) && !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                if out.is_empty() {
                    return Err(VariantError::NotFound {
                        repo_id: repo_id.clone(),
                        commit: commit.to_owned(),
                        variant: names.join("`, `"),
                        available: avail(),
                    });
                }
                Ok(out)
            }
            VariantSelection::Detected { env, preference } => {
                let best = match preference {
                    VariantPreference::Exact { noarch } => env
                        .preference(*noarch)
                        .into_iter()
                        .find(|v| available.contains(v)),
                    VariantPreference::Resolver | VariantPreference::ResolverStableAbi => {
                        let variants: Vec<BuildVariant> =
                            available.iter().map(|n| BuildVariant::parse(n)).collect();
                        for unknown in variants.iter().filter(|v| !v.is_known()) {
                            eprintln!(
                                "warning: {repo_id}@{commit}: skipping `build/{unknown}`: not a build-variant name"
                            );
                        }
                        env.resolve(&variants, *preference)
                            .first()
                            .map(|v| v.name().to_owned())
                    }
                };
                best.map(|v| vec![v])
                    .ok_or_else(|| VariantError::NoCompatible {
                        repo_id: repo_id.clone(),
                        commit: commit.to_owned(),
                        wanted: match preference {
                            VariantPreference::Exact { noarch } => {
                                env.preference(*noarch).join(", ")
                            }
                            _ => env.describe(),
                        },
                        available: avail(),
                    })
            }
        }
    }
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
        Ok(match self {
            VariantRequest::Detect => VariantSelection::Detected {
                env: TorchEnv::detect(python)?,
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
}
