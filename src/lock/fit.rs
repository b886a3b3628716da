//! Whether every locked kernel has a build variant for every declared target
//! GPU (`--cuda-capability` / `--rocm-arch` of `kernels lock`, `[tool.kernels]
//! cuda-capabilities` / `rocm-archs`): the question `kernels lock` warns about
//! and `kernels lock --check` fails on.
//!
//! For each target and each locked kernel, the candidates are the locked
//! commit's variants built for the target's backend (`backend.type` of their
//! `metadata.json`) and those without a backend (universal builds, which run
//! anywhere). The kernel has a variant for the target when one candidate
//! passes the load-time rules of [`kernels_types::fit::check`]: the arch rule
//! for that target, `kernels-minver` against the lock's target runtime and the
//! `python-depends` allow-list (the project's Python is not asked: lock never
//! starts it). A variant whose metadata could not be read makes the answer
//! unknown rather than "no".

use std::collections::BTreeMap;
use std::fmt;

use kernels_cache::{HubCache, RepoCache};
use kernels_types::CommitId;
use kernels_types::fit::{FitContext, Refusal, Target, check};
use kernels_types::metadata::{KernelsVersion, Metadata};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::RepoType;

use crate::lock::format::{KernelVersion, Lockfile};
use crate::lock::label::commit_label;
use crate::lock::metadata::{CachedMetadata, cached_variant};

/// At most this many variant names are given per reason in a finding.
const NAMES_SHOWN: usize = 3;

/// One variant of a locked kernel, for [`findings`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariantState {
    /// Its `metadata.json`, parsed.
    Read(Box<Metadata>),
    /// Why it could not be read (`metadata.json not in cache`, the parse
    /// error naming the file and field).
    Unread(String),
}

/// A locked kernel with its variants, for [`findings`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedVariants {
    /// The repository.
    pub repo_id: String,
    /// What the locked commit is called (`v1`, `v0.1.1`, a short commit).
    pub label: String,
    /// Variant directory → its metadata, in name order.
    pub variants: BTreeMap<String, VariantState>,
}

/// A declared target a locked kernel has no variant for, or cannot be
/// checked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitFinding {
    /// `repo_id@label`.
    pub kernel: String,
    /// The repository.
    pub repo_id: String,
    /// The target.
    pub target: Target,
    /// What was found.
    pub kind: FindingKind,
}

/// What [`FitFinding`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindingKind {
    /// Every candidate is refused (variant → its refusals for this target);
    /// empty when no variant is built for the target's backend.
    NoVariant(BTreeMap<String, Vec<Refusal>>),
    /// No read candidate fits and these variants could not be read (variant →
    /// why).
    Unchecked(BTreeMap<String, String>),
}

impl FitFinding {
    /// Whether the kernel certainly has no variant for the target.
    pub fn is_gap(&self) -> bool {
        matches!(self.kind, FindingKind::NoVariant(_))
    }

    /// The rules that refuse the candidates (`archs`, `kernels-minver`,
    /// `python-depends`), each once; empty when unchecked or when no variant is
    /// built for the backend.
    pub fn rules(&self) -> Vec<&'static str> {
        let mut rules: Vec<&'static str> = Vec::new();
        if let FindingKind::NoVariant(refused) = &self.kind {
            for rule in refused.values().flatten().map(Refusal::rule) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
        rules
    }
}

/// Why a candidate is refused, as a finding says it: `supports 8.0, 9.0
/// (archs)` or the refusal with its rule.
fn reason(refusals: &[Refusal]) -> String {
    let parts: Vec<String> = refusals
        .iter()
        .map(|refusal| match refusal {
            Refusal::Arch { archs, .. } => format!("supports {} (archs)", archs.join(", ")),
            other => format!("{other} ({})", other.rule()),
        })
        .collect();
    parts.join("; ")
}

/// `a, b, c and 2 more`.
fn names<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let all: Vec<&String> = names.collect();
    let shown: Vec<&str> = all.iter().take(NAMES_SHOWN).map(|s| s.as_str()).collect();
    match all.len().saturating_sub(NAMES_SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

impl fmt::Display for FitFinding {
    /// `kernels-community/relu@v1 has no variant for CUDA capability 10.0:
    /// torch29-cxx11-cu128-x86_64-linux supports 8.0, 9.0 (archs)`; variants
    /// refused alike are named together (a few, then a count).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kernel, target) = (&self.kernel, &self.target);
        match &self.kind {
            FindingKind::NoVariant(refused) if refused.is_empty() => write!(
                f,
                "{kernel} has no variant for {target}: no variant is built for {}",
                target.backend()
            ),
            FindingKind::NoVariant(refused) => {
                let mut groups: Vec<(String, Vec<&String>)> = Vec::new();
                for (variant, refusals) in refused {
                    let why = reason(refusals);
                    match groups.iter_mut().find(|(w, _)| *w == why) {
                        Some((_, variants)) => variants.push(variant),
                        None => groups.push((why, vec![variant])),
                    }
                }
                let groups: Vec<String> = groups
                    .iter()
                    .map(|(why, variants)| {
                        let why = match why.strip_prefix("supports ") {
                            Some(archs) if variants.len() > 1 => format!("support {archs}"),
                            _ => why.clone(),
                        };
                        format!("{} {why}", names(variants.iter().copied()))
                    })
                    .collect();
                write!(
                    f,
                    "{kernel} has no variant for {target}: {}",
                    groups.join("; ")
                )
            }
            FindingKind::Unchecked(unread) => {
                f.write_str(&unchecked_text(kernel, &target.to_string(), unread))
            }
        }
    }
}

/// `acme/relu@v1 cannot be checked for TARGETS: VARIANTS (WHY)`, the first
/// reason standing for the others.
fn unchecked_text(kernel: &str, targets: &str, unread: &BTreeMap<String, String>) -> String {
    let why = unread.values().next().map_or("", |s| s.as_str());
    format!(
        "{kernel} cannot be checked for {targets}: {} ({why})",
        names(unread.keys())
    )
}

/// The findings that could not be checked, said once per kernel and reason
/// rather than once per target: `acme/relu@v1 cannot be checked for CUDA
/// capability 8.0, CUDA capability 9.0: …`, in the order first found (issue
/// 45: a variant without `metadata.json` is one remark, whatever the number
/// of targets).
pub fn unchecked_lines(found: &[FitFinding]) -> Vec<String> {
    let mut groups: Vec<(&str, &BTreeMap<String, String>, Vec<String>)> = Vec::new();
    for finding in found {
        let FindingKind::Unchecked(unread) = &finding.kind else {
            continue;
        };
        let target = finding.target.to_string();
        match groups
            .iter_mut()
            .find(|(kernel, why, _)| *kernel == finding.kernel && *why == unread)
        {
            Some((_, _, targets)) => targets.push(target),
            None => groups.push((&finding.kernel, unread, vec![target])),
        }
    }
    groups
        .iter()
        .map(|(kernel, unread, targets)| unchecked_text(kernel, &targets.join(", "), unread))
        .collect()
}

/// A target as JSON documents name it: `cuda:9.0`, `rocm:gfx942`.
pub fn target_id(target: &Target) -> String {
    match target {
        Target::Cuda(capability) => format!("cuda:{capability}"),
        Target::Rocm(arch) => format!("rocm:{arch}"),
    }
}

/// The findings of one locked kernel for every target, in target order:
/// nothing for a target some candidate fits (see the module docs).
pub fn findings(
    kernel: &LockedVariants,
    targets: &[Target],
    runtime: Option<KernelsVersion>,
) -> Vec<FitFinding> {
    let mut out = Vec::new();
    for target in targets {
        let context = FitContext {
            targets: std::slice::from_ref(target),
            runtime,
            modules: None,
        };
        let mut refused = BTreeMap::new();
        let mut unread = BTreeMap::new();
        let mut fits = false;
        for (variant, state) in &kernel.variants {
            match state {
                VariantState::Unread(why) => {
                    unread.insert(variant.clone(), why.clone());
                }
                VariantState::Read(metadata) => {
                    let for_target = metadata
                        .backend
                        .as_ref()
                        .is_none_or(|b| b.kind == target.backend());
                    if !for_target {
                        continue;
                    }
                    let verdict = check(metadata, &context);
                    if verdict.fits() {
                        fits = true;
                    } else {
                        refused.insert(variant.clone(), verdict.refusals);
                    }
                }
            }
        }
        if fits {
            continue;
        }
        let kind = if unread.is_empty() {
            FindingKind::NoVariant(refused)
        } else {
            FindingKind::Unchecked(unread)
        };
        out.push(FitFinding {
            kernel: format!("{}@{}", kernel.repo_id, kernel.label),
            repo_id: kernel.repo_id.clone(),
            target: target.clone(),
            kind,
        });
    }
    out
}

/// One lock entry for [`cached_lock_variants`]: repository, commit, its
/// version label when the lock records one, and its variants when it does.
type LockEntry = (String, CommitId, Option<String>, Option<Vec<String>>);

/// Every entry of `lockfile` with its variants' metadata as the cache holds
/// it ([`crate::lock::metadata::cached_variant`]), without a request: the
/// variants a variant-hash entry records, or those of the cached snapshot's
/// `build/` (a 0.17 lock records none). An entry whose snapshot has no
/// `build/` gets one [`VariantState::Unread`] entry named `its variants`.
/// Each file is parsed as `runtime` (the lock's target runtime) reads it.
pub fn cached_lock_variants(
    lockfile: &Lockfile,
    cache: &HubCache,
    repo_type: RepoType,
    runtime: Option<KernelsVersion>,
) -> Vec<LockedVariants> {
    let entries: Vec<LockEntry> = match lockfile {
        Lockfile::VariantHash(locks) => locks
            .iter()
            .map(|l| {
                let names = l.variants.keys().cloned().collect();
                (l.repo_id.clone(), l.sha.clone(), None, Some(names))
            })
            .collect(),
        Lockfile::KernelLocks(locks) => locks
            .iter()
            .map(|(dep, commit)| {
                let label = match &dep.version {
                    KernelVersion::Version(n) => format!("v{n}"),
                    KernelVersion::Revision(r) => r.clone(),
                };
                (dep.repo_id.clone(), commit.clone(), Some(label), None)
            })
            .collect(),
    };
    entries
        .into_iter()
        .map(|(repo_id, commit, label, names)| {
            let repo = repo_id
                .parse::<RepoId>()
                .ok()
                .map(|id| cache.repo(&id, repo_type));
            let label = label
                .or_else(|| {
                    let refs = repo.as_ref()?.refs_at(&commit);
                    let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
                    commit_label(refs.iter().copied(), refs.iter().copied()).map(str::to_owned)
                })
                .unwrap_or_else(|| commit.short().to_owned());
            LockedVariants {
                variants: cached_states(repo.as_ref(), &commit, names, runtime),
                repo_id,
                label,
            }
        })
        .collect()
}

/// The cached metadata of `names` (else of every variant directory of the
/// snapshot's `build/`) at `commit`.
fn cached_states(
    repo: Option<&RepoCache>,
    commit: &CommitId,
    names: Option<Vec<String>>,
    runtime: Option<KernelsVersion>,
) -> BTreeMap<String, VariantState> {
    let not_cached = |why: &str| {
        BTreeMap::from([(
            "its variants".to_owned(),
            VariantState::Unread(why.to_owned()),
        )])
    };
    let Some(repo) = repo else {
        return not_cached("the repository id is invalid");
    };
    let names = names.unwrap_or_else(|| {
        fs_err::read_dir(repo.snapshot_dir(commit.as_str()).join("build"))
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .filter(|n| n.starts_with("torch") || n.starts_with("tvm-ffi"))
                    .collect()
            })
            .unwrap_or_default()
    });
    if names.is_empty() {
        return not_cached("the locked commit is not in the cache");
    }
    names
        .into_iter()
        .map(|name| {
            let state = match cached_variant(repo, commit, &name, runtime) {
                CachedMetadata::Read(metadata) => VariantState::Read(metadata),
                CachedMetadata::NotInCache => {
                    VariantState::Unread("metadata.json not in cache".to_owned())
                }
                CachedMetadata::Invalid(why) => VariantState::Unread(why),
            };
            (name, state)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_types::fit::Capability;

    fn read(json: &str) -> VariantState {
        VariantState::Read(Box::new(json.parse().unwrap()))
    }

    fn kernel(variants: Vec<(&str, VariantState)>) -> LockedVariants {
        LockedVariants {
            repo_id: "kernels-community/relu".into(),
            label: "v1".into(),
            variants: variants
                .into_iter()
                .map(|(n, s)| (n.to_owned(), s))
                .collect(),
        }
    }

    const CUDA_89: &str = r#"{"backend": {"type": "cuda", "archs": ["8.0", "9.0"]}}"#;

    #[test]
    fn a_target_no_candidate_fits_is_named_with_each_reason() {
        let cuda = |major, minor| Target::Cuda(Capability::new(major, minor));
        let relu = kernel(vec![
            ("torch29-cxx11-cu128-x86_64-linux", read(CUDA_89)),
            ("torch29-cxx11-cu129-x86_64-linux", read(CUDA_89)),
            (
                "torch29-cxx11-rocm63-x86_64-linux",
                read(r#"{"backend": {"type": "rocm", "archs": ["gfx942"]}}"#),
            ),
        ]);
        let found = findings(&relu, &[cuda(9, 0), cuda(10, 0)], None);
        assert_eq!(found.len(), 1);
        assert!(found[0].is_gap());
        assert_eq!(found[0].rules(), ["archs"]);
        assert_eq!(
            found[0].to_string(),
            "kernels-community/relu@v1 has no variant for CUDA capability 10.0: \
             torch29-cxx11-cu128-x86_64-linux, torch29-cxx11-cu129-x86_64-linux support 8.0, 9.0 (archs)"
        );
        // A ROCm target: the ROCm build fits; another arch has none.
        assert!(findings(&relu, &[Target::Rocm("gfx942".into())], None).is_empty());
        // kernels-minver counts against the target runtime.
        let new = kernel(vec![(
            "torch-cuda",
            read(r#"{"kernels-minver": "0.18.0", "backend": {"type": "cuda"}}"#),
        )]);
        let runtime = "0.17.2".parse().ok();
        let found = findings(&new, &[cuda(9, 0)], runtime);
        assert_eq!(found[0].rules(), ["kernels-minver"]);
        // No CUDA build at all.
        let cpu = kernel(vec![("torch-cpu", read(r#"{"backend": {"type": "cpu"}}"#))]);
        assert_eq!(
            findings(&cpu, &[cuda(9, 0)], None)[0].to_string(),
            "kernels-community/relu@v1 has no variant for CUDA capability 9.0: no variant is built for cuda"
        );
        // A universal build runs anywhere.
        let universal = kernel(vec![("torch-universal", read("{}"))]);
        assert!(findings(&universal, &[cuda(10, 0)], None).is_empty());
        // Unread metadata: unknown, not a gap.
        let unread = kernel(vec![(
            "torch-cuda",
            VariantState::Unread("metadata.json not in cache".into()),
        )]);
        let found = findings(&unread, &[cuda(9, 0)], None);
        assert!(!found[0].is_gap());
        assert_eq!(
            found[0].to_string(),
            "kernels-community/relu@v1 cannot be checked for CUDA capability 9.0: torch-cuda (metadata.json not in cache)"
        );
    }
}
