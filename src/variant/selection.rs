//! Selection: which variants of a kernel to use, from the command-line
//! request ([`VariantRequest`]) to the choice among the directories a kernel
//! has ([`VariantSelection::choose`]), shared by download and verify.

use std::collections::BTreeSet;

use super::{TorchEnv, VariantError, VariantRules};
#[cfg(test)]
use crate::lock::profile::VariantPreference;
use kernels_types::CommitId;
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
    /// The best variant for `env`, ranked by `rules`.
    Detected {
        /// The detected (or given) torch build (boxed: it is large).
        env: Box<TorchEnv>,
        /// How the target runtime ranks variants.
        rules: VariantRules,
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
    /// command-line order (deduplicated) for [`VariantSelection::Named`]; for
    /// [`VariantSelection::Detected`] the best variant with a resolver, and
    /// with an exact-name order (reference ≤0.12) every candidate the kernel
    /// has, in candidate order, the first being the one the runtime loads
    /// (the reference downloads them all).
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
        commit: CommitId,
        /// The directory name.
        name: String,
    },
    /// A directory under `build/` shaped like a 0.19 variant name with a
    /// part that is wrong (an unknown Python ABI, …); skipped likewise.
    #[error("{repo_id}@{commit}: skipping `build/{name}`: {problem}")]
    Malformed {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The directory name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A compiled file of a chosen variant whose name (or the variant's)
    /// claims Python abi3 or the torch stable ABI, but that uses symbols
    /// outside it ([`crate::abi::AbiWarning`]); the variant is still placed.
    #[error("{repo_id}@{commit}: `build/{variant}/{file}` {warning}")]
    Abi {
        /// Kernel repo.
        repo_id: RepoId,
        /// Locked commit.
        commit: CommitId,
        /// The variant directory name.
        variant: String,
        /// The file's path inside it.
        file: String,
        /// What it claims and uses.
        warning: String,
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
        commit: &CommitId,
        available: &BTreeSet<String>,
    ) -> Result<Vec<String>, VariantError> {
        let choice = self.select(repo_id, commit, available)?;
        if let VariantSelection::Named(names) = self
            && choice.variants.is_empty()
        {
            return Err(VariantError::NotFound {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
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
        commit: &CommitId,
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
            VariantSelection::Detected { env, rules } => {
                ranked_for(env, *rules, repo_id, commit, available)?.swap_remove(0)
            }
        };
        Ok(Choice {
            variants,
            missing: Vec::new(),
        })
    }

    /// The alternatives among `available`, best first, for a caller that
    /// skips those the target runtime would refuse
    /// ([`crate::install`]'s fit check): for [`VariantSelection::Detected`]
    /// every compatible variant alone in the runtime's order (with an
    /// exact-name order, one alternative of every candidate, the first being
    /// the one loaded); for the other selections one alternative, the
    /// variants [`VariantSelection::choose`] gives. The first alternative is
    /// always what [`VariantSelection::choose`] gives.
    ///
    /// # Errors
    /// As [`VariantSelection::choose`].
    pub fn candidates(
        &self,
        repo_id: &RepoId,
        commit: &CommitId,
        available: &BTreeSet<String>,
    ) -> Result<Vec<Vec<String>>, VariantError> {
        match self {
            VariantSelection::Detected { env, rules } => {
                ranked_for(env, *rules, repo_id, commit, available)
            }
            _ => Ok(vec![self.choose(repo_id, commit, available)?]),
        }
    }

    /// The warnings choosing among `available` gives: with a resolver
    /// preference, one per directory name the target runtime cannot parse
    /// (names of the 0.19 grammar are not warned about for older runtimes,
    /// which skip them without a word or read them as noarch names).
    pub fn warnings(
        &self,
        repo_id: &RepoId,
        commit: &CommitId,
        available: &BTreeSet<String>,
    ) -> Vec<VariantWarning> {
        match self {
            VariantSelection::Detected { rules, .. } if !rules.preference.is_exact() => available
                .iter()
                .filter_map(|name| {
                    let problem = BuildVariant::parse(name).problem()?;
                    let (repo_id, commit, name) = (repo_id.clone(), commit.clone(), name.clone());
                    Some(if problem == NOT_A_NAME {
                        VariantWarning::NotAVariantName {
                            repo_id,
                            commit,
                            name,
                        }
                    } else {
                        VariantWarning::Malformed {
                            repo_id,
                            commit,
                            name,
                            problem,
                        }
                    })
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// What [`BuildVariant::problem`] says of a name that no grammar reads.
const NOT_A_NAME: &str = "not a build-variant name";

/// The alternatives of `available` for `env` under `rules`, best first
/// (never empty): with an exact-name order (reference ≤0.12) one alternative,
/// every candidate the kernel has in candidate order (the reference downloads
/// them all and loads the first); with a resolver each compatible variant
/// alone, in the resolver's order.
fn ranked_for(
    env: &TorchEnv,
    rules: VariantRules,
    repo_id: &RepoId,
    commit: &CommitId,
    available: &BTreeSet<String>,
) -> Result<Vec<Vec<String>>, VariantError> {
    let (ranked, wanted): (Vec<Vec<String>>, String) = if rules.preference.is_exact() {
        let Some(candidates) = env.exact_candidates(rules.preference) else {
            return Err(VariantError::NoVariantForCpuTorch {
                repo_id: repo_id.clone(),
                commit: commit.clone(),
            });
        };
        let chosen: Vec<String> = candidates
            .iter()
            .filter(|v| available.contains(*v))
            .cloned()
            .collect();
        let ranked = if chosen.is_empty() {
            Vec::new()
        } else {
            vec![chosen]
        };
        (ranked, candidates.join(", "))
    } else {
        let variants: Vec<BuildVariant> =
            available.iter().map(|n| BuildVariant::parse(n)).collect();
        let ranked = env
            .resolve(&variants, rules)
            .into_iter()
            .map(|v| vec![v.name().to_owned()])
            .collect();
        (ranked, env.describe())
    };
    if ranked.is_empty() {
        let available: Vec<String> = available.iter().cloned().collect();
        return Err(VariantError::NoCompatible {
            repo_id: repo_id.clone(),
            commit: commit.clone(),
            help: super::fit_hint::no_fit_help(env, repo_id, &available),
            wanted,
            available,
        });
    }
    Ok(ranked)
}

impl VariantRequest {
    /// Turns the request into a selection, detecting torch with `python` only
    /// for [`VariantRequest::Detect`] (see [`super::EnvOverrides::resolve`]
    /// for the overrides; the interpreter's probe is reused); `rules` are
    /// how the target runtime ranks variants.
    pub fn resolve_with(
        &self,
        python: &super::ProjectPython,
        rules: VariantRules,
        overrides: &super::EnvOverrides,
    ) -> Result<VariantSelection, VariantError> {
        Ok(match self {
            VariantRequest::Detect => VariantSelection::Detected {
                env: Box::new(detect_env(python, rules, overrides)?),
                rules,
            },
            VariantRequest::All => VariantSelection::All,
            VariantRequest::Named(names) => VariantSelection::Named(names.clone()),
        })
    }

    /// Whether [`VariantRequest::resolve_with`] asks torch of the project's
    /// interpreter under `overrides`.
    pub fn needs_torch(&self, overrides: &super::EnvOverrides) -> bool {
        matches!(self, VariantRequest::Detect) && overrides.needs_python()
    }
}

/// The environment [`VariantRequest::Detect`] selects for: the overrides
/// resolved with `python` for `rules`' runtime
/// ([`super::EnvOverrides::resolve_for`], MLX-only Metal for 0.19+ where
/// torch is missing).
fn detect_env(
    python: &super::ProjectPython,
    rules: VariantRules,
    overrides: &super::EnvOverrides,
) -> Result<super::TorchEnv, VariantError> {
    overrides
        .resolve_for(python, rules.generation)
        .map(|(env, _)| env)
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
            env: Box::new(env(Some(cuda), "Linux", "x86_64")),
            rules: VariantPreference::Exact { noarch: true }.into(),
        };
        // Every existing candidate, as the reference downloads them; the
        // first is the one it loads.
        assert_eq!(
            exact("12.6")
                .choose(&id, &crate::variant::testing::commit(), &available)
                .unwrap(),
            ["torch27-cxx11-cu126-x86_64-linux", "torch-universal"]
        );
        assert_eq!(
            exact("12.8")
                .choose(&id, &crate::variant::testing::commit(), &available)
                .unwrap(),
            ["torch-universal"]
        );
        assert_eq!(
            VariantSelection::All
                .choose(&id, &crate::variant::testing::commit(), &available)
                .unwrap()
                .len(),
            3
        );
        let named = VariantSelection::Named(vec!["torch-cpu".into(), "torch-cpu".into()]);
        assert_eq!(
            named
                .choose(&id, &crate::variant::testing::commit(), &available)
                .unwrap(),
            ["torch-cpu"]
        );
        let err = VariantSelection::Named(vec!["torch-xpu".into()])
            .choose(&id, &crate::variant::testing::commit(), &available)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("torch-xpu") && err.contains("torch-cpu, torch-universal"),
            "{err}"
        );
        let none = exact("12.6").choose(&id, &crate::variant::testing::commit(), &BTreeSet::new());
        assert!(matches!(none, Err(VariantError::NoCompatible { .. })));
    }

    #[test]
    fn candidates_are_every_compatible_variant_best_first() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let commit = crate::variant::testing::commit();
        let available: BTreeSet<String> = [
            "torch-cpu",
            "torch-cuda",
            "torch-universal",
            "torch27-cxx11-cu126-x86_64-linux",
            "torch27-cxx11-cu128-x86_64-linux",
        ]
        .map(String::from)
        .into();
        let cuda = |preference: VariantPreference| VariantSelection::Detected {
            env: Box::new(env(Some("12.6"), "Linux", "x86_64")),
            rules: preference.into(),
        };
        // The resolver: each compatible variant alone, in its order; the
        // first is what `choose` takes.
        let resolver = cuda(VariantPreference::ResolverMetalMacos26);
        let ranked = resolver.candidates(&id, &commit, &available).unwrap();
        assert_eq!(
            ranked,
            [
                vec!["torch27-cxx11-cu126-x86_64-linux".to_owned()],
                vec!["torch-cuda".to_owned()],
                vec!["torch-universal".to_owned()],
            ]
        );
        assert_eq!(
            resolver.choose(&id, &commit, &available).unwrap(),
            ranked[0]
        );
        // Exact names: one alternative of every existing candidate.
        let exact = cuda(VariantPreference::Exact { noarch: true });
        assert_eq!(
            exact.candidates(&id, &commit, &available).unwrap(),
            [vec![
                "torch27-cxx11-cu126-x86_64-linux".to_owned(),
                "torch-cuda".to_owned(),
                "torch-universal".to_owned()
            ]]
        );
        // The other selections: one alternative.
        assert_eq!(
            VariantSelection::All
                .candidates(&id, &commit, &available)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn runtimes_before_0_11_name_windows_builds_and_refuse_cpu_torch() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = [
            "torch27-cxx11-cu128-AMD64-windows",
            "torch27-cu128-x86_64-windows",
            "torch-cuda",
            "torch-universal",
        ]
        .map(String::from)
        .into();
        let pick = |env: TorchEnv, preference: VariantPreference| {
            VariantSelection::Detected {
                env: Box::new(env),
                rules: VariantRules::from(preference),
            }
            .choose(&id, &crate::variant::testing::commit(), &available)
        };
        let win = env(Some("12.8"), "Windows", "AMD64");
        assert_eq!(
            pick(
                win.clone(),
                VariantPreference::ExactBefore011 { noarch: true }
            )
            .unwrap(),
            [
                "torch27-cxx11-cu128-AMD64-windows",
                "torch-cuda",
                "torch-universal"
            ]
        );
        assert_eq!(
            pick(win, VariantPreference::Exact { noarch: true }).unwrap(),
            [
                "torch27-cu128-x86_64-windows",
                "torch-cuda",
                "torch-universal"
            ]
        );
        let err = pick(
            env(None, "Linux", "x86_64"),
            VariantPreference::ExactBefore011 { noarch: true },
        )
        .unwrap_err();
        assert!(matches!(err, VariantError::NoVariantForCpuTorch { .. }));
        assert!(err.to_string().contains("CPU-only torch"), "{err}");
    }

    #[test]
    fn runtime_0_17_refuses_metal_builds_below_macos_26() {
        let id: RepoId = "acme/relu".parse().unwrap();
        let available: BTreeSet<String> = ["torch27-metal-aarch64-darwin", "torch-universal"]
            .map(String::from)
            .into();
        let mac = |version: Option<&str>| TorchEnv {
            mps: true,
            mac_version: version.map(str::to_owned),
            ..env(None, "Darwin", "arm64")
        };
        let pick = |env: TorchEnv, preference: VariantPreference| {
            VariantSelection::Detected {
                env: Box::new(env),
                rules: VariantRules::from(preference),
            }
            .choose(&id, &crate::variant::testing::commit(), &available)
            .unwrap()
        };
        let v017 = VariantPreference::ResolverMetalMacos26;
        assert_eq!(pick(mac(Some("15.5")), v017), ["torch-universal"]);
        assert_eq!(pick(mac(None), v017), ["torch-universal"]);
        assert_eq!(
            pick(mac(Some("26.0")), v017),
            ["torch27-metal-aarch64-darwin"]
        );
        assert_eq!(
            pick(mac(Some("15.5")), VariantPreference::ResolverStableAbi),
            ["torch27-metal-aarch64-darwin"]
        );
        assert_eq!(
            mac(Some("15.5")).describe(),
            "torch 2.7, metal, aarch64-darwin (macOS 15.5)"
        );
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
            named
                .select(&id, &crate::variant::testing::commit(), &available)
                .unwrap(),
            Choice {
                variants: vec!["torch-cpu".into()],
                missing: vec!["torch-xpu".into()],
            }
        );
        assert!(
            named
                .warnings(&id, &crate::variant::testing::commit(), &available)
                .is_empty()
        );
        let resolver = VariantSelection::Detected {
            env: Box::new(env(None, "Linux", "x86_64")),
            rules: VariantPreference::Resolver.into(),
        };
        let warnings = resolver.warnings(&id, &crate::variant::testing::commit(), &available);
        assert_eq!(
            warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "acme/relu@cccccccccccccccccccccccccccccccccccccccc: skipping `build/torch-ext`: not a build-variant name"
            ]
        );
        let exact = VariantSelection::Detected {
            env: Box::new(env(None, "Linux", "x86_64")),
            rules: VariantPreference::Exact { noarch: true }.into(),
        };
        assert!(
            exact
                .warnings(&id, &crate::variant::testing::commit(), &available)
                .is_empty()
        );
    }
}
