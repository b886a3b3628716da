//! Whether the target runtime reads each `[tool.kernels.dependencies]` value.
//!
//! The runtime itself reads only `kernels.lock`; `pyproject.toml` is read by
//! its own `kernels lock`. What each release's `kernels lock` does with each
//! form (checked against the pinned references 0.13.0, 0.16.2 and 0.17.2):
//!
//! | form | ≤0.11 | 0.12–0.13 | 0.14+ |
//! |---|---|---|---|
//! | integer `N` | fails (`TypeError`) | reads it | reads it |
//! | PEP 440 string | reads it | reads it, `UserWarning` (deprecated) | fails |
//! | `^1.2` / `~1.2` (extension) | fails (`InvalidSpecifier`) | fails | fails |
//! | `{ version = … }`, `{ revision = … }` (extensions) | fails | fails | fails |
//!
//! A string for 0.14+ is an error ([`UnsupportedRequirement`]): those runtimes
//! read only integer versions. Every other difference is a
//! [`RequirementWarning`]: the lock written here works with the runtime, but its
//! own `kernels lock` would not take the manifest (or, for 0.12–0.13 specifier
//! strings, warns that they are deprecated).

use std::collections::BTreeSet;
use std::fmt;

use miette::{NamedSource, SourceSpan};
use pep440_rs::Operator;

use crate::lock::manifest::{Dependency, Manifest};
use crate::lock::profile::{Profile, RequirementSupport, RuntimeVersion};
use crate::lock::requirement::{Requirement, branch_version, select_tag};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::{GitRefInfo, GitRefs};

/// A requirement the target runtime does not read.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "{path}: [tool.kernels.dependencies] entry `{repo_id}`: {requirement} is not supported by kernels {runtime}, which reads integer versions only"
)]
#[diagnostic(code(kernels::lock::unsupported_requirement))]
pub struct UnsupportedRequirement {
    /// The pyproject file.
    pub path: String,
    /// The entry.
    pub repo_id: RepoId,
    /// The requirement as text.
    pub requirement: String,
    /// The target runtime.
    pub runtime: RuntimeVersion,
    #[source_code]
    source_code: NamedSource<String>,
    #[label("kernels {runtime} cannot read this")]
    span: Option<SourceSpan>,
    #[help]
    help: String,
}

/// A requirement the lock is written for, but that the target runtime's own
/// `kernels lock` deprecates or would not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementWarning {
    /// The entry.
    pub repo_id: RepoId,
    /// The target runtime.
    pub runtime: RuntimeVersion,
    /// What is wrong with it.
    pub kind: WarningKind,
    /// The form that runtime reads, as a `pyproject.toml` line (or a sentence
    /// when there is no equivalent).
    pub accepted: String,
}

/// Why a [`RequirementWarning`] was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningKind {
    /// 0.12–0.13: specifier strings are deprecated (the reference emits a
    /// `UserWarning`).
    DeprecatedSpecifier,
    /// ≤0.11: an integer version, which its `kernels lock` fails on.
    IntegerBeforeBranches,
    /// A Cargo-style requirement, which no reference parses.
    CargoStyle,
    /// A `{ version = … }` or `{ revision = … }` table, which no reference reads.
    Table,
}

impl fmt::Display for RequirementWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RequirementWarning {
            repo_id, runtime, ..
        } = self;
        match self.kind {
            WarningKind::DeprecatedSpecifier => write!(
                f,
                "`{repo_id}`: kernels {runtime} reads version specifier strings but deprecates them (support will be removed); it reads integer versions: {}",
                self.accepted
            ),
            WarningKind::IntegerBeforeBranches => write!(
                f,
                "`{repo_id}` uses an integer version, which the `kernels lock` of kernels {runtime} cannot read; the lock written here works with that runtime. kernels {runtime} reads only PEP 440 specifier strings: {}",
                self.accepted
            ),
            WarningKind::CargoStyle => write!(
                f,
                "`{repo_id}` uses a Cargo-style requirement (an extension), which the `kernels lock` of kernels {runtime} cannot read; the lock written here works with that runtime. kernels {runtime} reads {}",
                self.accepted
            ),
            WarningKind::Table => write!(
                f,
                "`{repo_id}` is written as a table (an extension), which the `kernels lock` of kernels {runtime} cannot read; the lock written here works with that runtime. kernels {runtime} reads {}",
                self.accepted
            ),
        }
    }
}

impl RequirementWarning {
    /// The remark without the form it suggests: the same for a warning before
    /// and after [`RequirementWarning::with_refs`], so that a run which only
    /// repeats a remark can tell it was said.
    pub fn head(&self) -> String {
        let whole = self.to_string();
        whole
            .strip_suffix(self.accepted.as_str())
            .unwrap_or(&whole)
            .to_owned()
    }

    /// For a deprecated specifier (0.12–0.13), the integer suggested checked
    /// against the repository's `refs`: the branch `vN` the requirement names
    /// when it exists, else the newest version branch, else a sentence that
    /// no integer can replace it (issue 45: `= 1` was suggested for a
    /// repository without branch `v1`). Other warnings are returned as they are.
    /// Without `refs` (the Hub did not answer) no branch is named.
    pub fn with_refs(mut self, requirement: &Requirement, refs: Option<&GitRefs>) -> Self {
        if self.kind != WarningKind::DeprecatedSpecifier {
            return self;
        }
        let repo = &self.repo_id;
        let Some(refs) = refs else {
            self.accepted = format!(
                "write `\"{repo}\" = N` for a branch `vN` the repository has (`kernels variants {repo} --all-versions` lists them)"
            );
            return self;
        };
        let branches = version_branches(refs);
        let n = suggested_branch(requirement);
        self.accepted = if branches.contains(&n) {
            format!("write `\"{repo}\" = {n}` for branch `v{n}`")
        } else if let Some(high) = branches.last() {
            format!(
                "`{repo}` has no branch `v{n}`; write `\"{repo}\" = {high}` for its newest version branch `v{high}`"
            )
        } else {
            format!(
                "none can replace the specifier, as `{repo}` has no `vN` version branch: keep it (kernels {} still locks it) until the publisher adds one",
                self.runtime
            )
        };
        self
    }
}

/// The `vN` branch numbers of `refs`.
fn version_branches(refs: &GitRefs) -> BTreeSet<u64> {
    refs.branches
        .iter()
        .filter_map(|b| branch_version(&b.name))
        .filter_map(|n| u64::try_from(n).ok())
        .collect()
}

/// Checks every dependency against the profile's runtime: the first one it does
/// not read is the error; the others' remarks are returned in manifest order.
/// The default profile (no runtime) accepts everything.
pub fn check_requirements(
    profile: &Profile,
    manifest: &Manifest,
) -> Result<Vec<RequirementWarning>, Box<UnsupportedRequirement>> {
    let Some(runtime) = profile.runtime else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    for dep in &manifest.dependencies {
        let warn = |kind, accepted| RequirementWarning {
            repo_id: dep.repo_id.clone(),
            runtime,
            kind,
            accepted,
        };
        let repo = &dep.repo_id;
        let support = profile.requirements;
        match &dep.requirement {
            Requirement::Pep440(_) | Requirement::Semver(_)
                if support == RequirementSupport::IntegersOnly =>
            {
                return Err(Box::new(unsupported(manifest, dep, runtime)));
            }
            Requirement::Semver(req) => {
                let pep440 = pep440_equivalent(req).map_or_else(
                    || "PEP 440 specifier strings such as `\">=1.2,<2\"`".to_owned(),
                    |spec| format!("PEP 440 specifiers: write `\"{repo}\" = \"{spec}\"`"),
                );
                let accepted = if support == RequirementSupport::IntegersAndStrings {
                    format!(
                        "integer versions (`\"{repo}\" = {n}` for branch `v{n}`) and {pep440}",
                        n = suggested_branch(&dep.requirement)
                    )
                } else {
                    pep440
                };
                warnings.push(warn(WarningKind::CargoStyle, accepted));
            }
            Requirement::Pep440(_) if support == RequirementSupport::IntegersAndStrings => {
                let n = suggested_branch(&dep.requirement);
                warnings.push(warn(
                    WarningKind::DeprecatedSpecifier,
                    format!("write `\"{repo}\" = {n}` for branch `v{n}`"),
                ));
            }
            Requirement::Branch(n) if support == RequirementSupport::StringsOnly => {
                warnings.push(warn(
                    WarningKind::IntegerBeforeBranches,
                    format!(
                        "they select `v<version>` tags, such as `\"{repo}\" = \">={n},<{}\"`; branch `v{n}` cannot be named",
                        n + 1
                    ),
                ));
            }
            _ if dep.table => {
                let accepted = match (&dep.requirement, support) {
                    (Requirement::Branch(n), RequirementSupport::StringsOnly) => {
                        format!("only PEP 440 specifier strings (branch `v{n}` cannot be named)")
                    }
                    (Requirement::Branch(n), _) => {
                        format!("the bare value: write `\"{repo}\" = {n}`")
                    }
                    (Requirement::Pep440(spec), _) => {
                        format!("the bare value: write `\"{repo}\" = \"{spec}\"`")
                    }
                    (_, RequirementSupport::StringsOnly) => {
                        "only PEP 440 specifier strings, which cannot name a revision".to_owned()
                    }
                    _ => "only integer versions, which cannot name a revision".to_owned(),
                };
                warnings.push(warn(WarningKind::Table, accepted));
            }
            _ => {}
        }
    }
    Ok(warnings)
}

/// The error for a specifier under an integers-only runtime.
pub(crate) fn unsupported(
    manifest: &Manifest,
    dep: &Dependency,
    runtime: RuntimeVersion,
) -> UnsupportedRequirement {
    let repo = &dep.repo_id;
    UnsupportedRequirement {
        path: manifest.path.display().to_string(),
        repo_id: dep.repo_id.clone(),
        requirement: dep.requirement.to_string(),
        runtime,
        source_code: NamedSource::new(
            manifest.path.display().to_string(),
            manifest.text.to_string(),
        ),
        span: dep.span.clone().map(SourceSpan::from),
        help: format!(
            "kernels 0.14+ reads only integer versions: write `\"{repo}\" = N` for a branch `vN` the repository has (`kernels variants {repo} --all-versions` lists them), or lock for a runtime that reads version specifiers with `--target-runtime 0.13.0`"
        ),
    }
}

/// [`unsupported`] with a help that names only what the repository has, from
/// its `refs`: the integer `N` when branch `vN` exists, else its highest
/// version branch; without version branches, kernels 0.14+ cannot lock it by
/// version at all, and the help says what can (a `{ revision = … }` pin of the
/// tag the specifier selects, or a runtime that reads specifiers).
/// `tag_pin` says whether the tag the specifier selects can be locked by a
/// `{ revision = … }` pin for this runtime (for 0.17 every build variant of it
/// needs a metadata.json); `None` when it cannot be.
pub(crate) fn unsupported_with_refs(
    manifest: &Manifest,
    dep: &Dependency,
    runtime: RuntimeVersion,
    refs: &GitRefs,
    tag_pin: impl FnOnce(&GitRefInfo) -> bool,
) -> UnsupportedRequirement {
    let mut error = unsupported(manifest, dep, runtime);
    error.help = refs_help(&dep.repo_id, &dep.requirement, runtime, refs, tag_pin);
    error
}

/// The help of [`unsupported_with_refs`] (and of `kernels add` with such a
/// requirement) for `requirement` of `repo`, which has `refs`.
pub(crate) fn refs_help(
    repo: &RepoId,
    requirement: &Requirement,
    runtime: RuntimeVersion,
    refs: &GitRefs,
    tag_pin: impl FnOnce(&GitRefInfo) -> bool,
) -> String {
    let specifiers =
        "lock for a runtime that reads version specifiers with `--target-runtime 0.13.0`";
    let branches = version_branches(refs);
    let n = suggested_branch(requirement);
    if branches.contains(&n) {
        return format!(
            "kernels 0.14+ reads only integer versions: write `\"{repo}\" = {n}` for branch `v{n}`, or {specifiers}"
        );
    }
    if let Some(high) = branches.last() {
        let list: Vec<String> = branches.iter().map(|b| format!("v{b}")).collect();
        return format!(
            "`{repo}` has no branch `v{n}`; its version branches are {}: write `\"{repo}\" = {high}` for branch `v{high}`, or {specifiers}",
            list.join(", ")
        );
    }
    let cannot = format!(
        "`{repo}` has no `vN` version branches, so kernels {runtime} cannot lock it by version"
    );
    match select_tag(requirement, &refs.tags) {
        Ok(tag) if tag_pin(&tag.git_ref) => format!(
            "{cannot}; pin the tag {requirement} selects with `\"{repo}\" = {{ revision = \"{}\" }}` (an extension: the lock works with kernels {runtime}, whose own `kernels lock` cannot read it), or {specifiers}",
            tag.git_ref.name
        ),
        Ok(tag) => format!(
            "{cannot}, nor by its tag {} ({requirement} selects it), whose build variants lack the metadata.json kernels {runtime} reads; {specifiers}",
            tag.git_ref.name
        ),
        Err(_) => {
            let tags: Vec<&str> = refs.tags.iter().map(|t| t.name.as_str()).collect();
            let named = match tags.as_slice() {
                [] => "it has no tags".to_owned(),
                tags => format!("its tags: {}", tags.join(", ")),
            };
            format!(
                "{cannot}, and no tag satisfies {requirement} ({named}); pin a revision with `\"{repo}\" = {{ revision = \"<branch, tag or commit>\" }}` (`kernels variants {repo} --revision <tag>` shows one's build variants)"
            )
        }
    }
}

/// A branch number to show in a suggestion: the major version of the
/// requirement's lower bound, at least 1 (kernel branches start at `v1`).
fn suggested_branch(requirement: &Requirement) -> u64 {
    let major = match requirement {
        Requirement::Pep440(spec) => spec
            .iter()
            .filter(|s| {
                matches!(
                    s.operator(),
                    Operator::Equal
                        | Operator::EqualStar
                        | Operator::ExactEqual
                        | Operator::TildeEqual
                        | Operator::GreaterThan
                        | Operator::GreaterThanEqual
                )
            })
            .filter_map(|s| s.version().release().first().copied())
            .max(),
        Requirement::Semver(req) => req
            .comparators
            .iter()
            .filter(|c| {
                !matches!(
                    c.op,
                    semver::Op::Less | semver::Op::LessEq | semver::Op::Wildcard
                )
            })
            .map(|c| c.major)
            .max(),
        Requirement::Branch(n) => Some(*n),
        Requirement::Revision(_) => None,
    };
    major.unwrap_or(1).max(1)
}

/// The PEP 440 specifier set a Cargo-style requirement means, when every
/// comparator has one (no pre-release parts).
fn pep440_equivalent(req: &semver::VersionReq) -> Option<String> {
    let mut parts = Vec::new();
    for c in &req.comparators {
        if !c.pre.is_empty() {
            return None;
        }
        let written = version_text(c.major, c.minor, c.patch);
        let (lower, upper) = match c.op {
            semver::Op::Caret => {
                let upper = match (c.major, c.minor, c.patch) {
                    (0, Some(0), Some(p)) => format!("0.0.{}", p + 1),
                    (0, Some(m), _) => format!("0.{}", m + 1),
                    (major, _, _) => format!("{}", major + 1),
                };
                (written, upper)
            }
            semver::Op::Tilde => {
                let upper = match c.minor {
                    Some(m) => format!("{}.{}", c.major, m + 1),
                    None => format!("{}", c.major + 1),
                };
                (written, upper)
            }
            semver::Op::Exact | semver::Op::Wildcard => {
                parts.push(match (c.minor, c.patch) {
                    (Some(_), Some(_)) => format!("=={written}"),
                    _ => format!("=={written}.*"),
                });
                continue;
            }
            semver::Op::GreaterEq | semver::Op::Less if c.patch.is_some() => {
                let op = if c.op == semver::Op::Less { "<" } else { ">=" };
                parts.push(format!("{op}{written}"));
                continue;
            }
            _ => return None,
        };
        parts.push(format!(">={lower}"));
        parts.push(format!("<{upper}"));
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

fn version_text(major: u64, minor: Option<u64>, patch: Option<u64>) -> String {
    match (minor, patch) {
        (Some(m), Some(p)) => format!("{major}.{m}.{p}"),
        (Some(m), None) => format!("{major}.{m}"),
        _ => format!("{major}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::profile::ProfileSource;
    use std::path::Path;

    fn check(runtime: &str, deps: &str) -> Result<Vec<String>, String> {
        let manifest = Manifest::parse(
            &format!("[tool.kernels.dependencies]\n{deps}"),
            Path::new("pyproject.toml"),
        )
        .unwrap();
        let profile = Profile::for_runtime(
            RuntimeVersion::parse(runtime).unwrap(),
            ProfileSource::Option,
        );
        check_requirements(&profile, &manifest)
            .map(|w| w.iter().map(ToString::to_string).collect())
            .map_err(|e| format!("{e}: {}", e.help))
    }

    #[test]
    fn cargo_style_maps_to_pep440() {
        let eq = |s: &str, want: &str| {
            let req = semver::VersionReq::parse(s).unwrap();
            assert_eq!(pep440_equivalent(&req).as_deref(), Some(want), "{s}");
        };
        eq("^1.2", ">=1.2,<2");
        eq("^0.2.3", ">=0.2.3,<0.3");
        eq("^0.0.3", ">=0.0.3,<0.0.4");
        eq("~1.2.3", ">=1.2.3,<1.3");
        eq("~1", ">=1,<2");
        eq("^1.2, <1.5.0", ">=1.2,<2,<1.5.0");
    }

    #[test]
    fn each_runtime_era() {
        let s = "\"a/b\" = \">=1.2\"\n";
        let err = check("0.14.0", s).unwrap_err();
        assert!(
            err.contains("kernels 0.14.0, which reads integer versions only"),
            "{err}"
        );
        // Without the repository's refs no branch is named.
        assert!(
            err.contains("`\"a/b\" = N` for a branch `vN` the repository has"),
            "{err}"
        );
        // With them: the branch the requirement's major version names.
        let branch = |name: &str| GitRefInfo {
            name: name.to_owned(),
            git_ref: format!("refs/heads/{name}"),
            target_commit: "a".repeat(40).parse().unwrap(),
        };
        let refs = GitRefs {
            branches: vec![branch("v1"), branch("v2")],
            converts: Vec::new(),
            tags: Vec::new(),
            pull_requests: None,
        };
        let repo: RepoId = "a/b".parse().unwrap();
        let caret = Requirement::parse_str("^2.1").unwrap();
        let help = refs_help(&repo, &caret, RuntimeVersion::new(0, 17, 2), &refs, |_| {
            true
        });
        assert!(help.contains("= 2` for branch `v2`"), "{help}");
        let five = Requirement::parse_str(">=5").unwrap();
        let help = refs_help(&repo, &five, RuntimeVersion::new(0, 17, 2), &refs, |_| true);
        assert!(
            help.contains("has no branch `v5`; its version branches are v1, v2"),
            "{help}"
        );
        let w = check("0.13.0", s).unwrap();
        assert!(w[0].contains("deprecates them"), "{w:?}");
        // The integer it suggests, checked against the refs.
        let manifest = Manifest::parse(
            "[tool.kernels.dependencies]\n\"a/b\" = \">=5\"\n",
            Path::new("p"),
        )
        .unwrap();
        let profile = Profile::for_runtime(RuntimeVersion::new(0, 13, 0), ProfileSource::Option);
        let warning = check_requirements(&profile, &manifest).unwrap().remove(0);
        let requirement = &manifest.dependencies[0].requirement;
        let newest = warning.clone().with_refs(requirement, Some(&refs));
        assert!(
            newest.to_string().ends_with(
                "no branch `v5`; write `\"a/b\" = 2` for its newest version branch `v2`"
            ),
            "{newest}"
        );
        let no_branches = GitRefs {
            branches: Vec::new(),
            ..refs.clone()
        };
        let none = warning.clone().with_refs(requirement, Some(&no_branches));
        assert!(
            none.to_string().contains("none can replace the specifier"),
            "{none}"
        );
        let unknown = warning.clone().with_refs(requirement, None);
        assert!(
            unknown.to_string().contains("= N` for a branch `vN`"),
            "{unknown}"
        );
        // Each is the same remark to a run that repeats it.
        for refined in [newest, none, unknown] {
            assert!(refined.to_string().starts_with(&warning.head()));
        }
        assert!(check("0.12.3", "\"a/b\" = 1\n").unwrap().is_empty());
        assert!(check("0.10.5", s).unwrap().is_empty());
        let w = check("0.10.5", "\"a/b\" = 3\n").unwrap();
        assert!(w[0].contains("`\"a/b\" = \">=3,<4\"`"), "{w:?}");
        let w = check("0.11.0", "\"a/b\" = \"^0.2\"\n").unwrap();
        assert!(w[0].contains("write `\"a/b\" = \">=0.2,<0.3\"`"), "{w:?}");
        let w = check("0.16.2", "\"a/b\" = { version = 2 }\n").unwrap();
        assert!(w[0].contains("write `\"a/b\" = 2`"), "{w:?}");
        let w = check("0.17.2", "\"a/b\" = { revision = \"main\" }\n").unwrap();
        assert!(w[0].contains("cannot name a revision"), "{w:?}");
        let default = Profile::default_profile();
        let manifest = Manifest::parse(
            "[tool.kernels.dependencies]\n\"a/b\" = \"^1\"\n",
            Path::new("p"),
        )
        .unwrap();
        assert!(check_requirements(&default, &manifest).unwrap().is_empty());
    }
}
