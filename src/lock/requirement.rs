//! What a `[tool.kernels.dependencies]` entry asks for, and how it selects a git
//! ref of a kernel repository.
//!
//! * An integer `N` selects the branch `vN` (reference 0.12+). A branch counts as
//!   version `n` when its name is `v` followed by text Python's `int()` accepts
//!   (`v01` is 1, `v1_0` is 10, `v-1` is -1).
//! * A PEP 440 specifier set (reference 0.1.7–0.13) selects the highest tag
//!   `v<version>` it matches, with the `packaging` library's default pre-release
//!   rule: pre-releases (`a`, `b`, `rc`, `.dev`) only match when a specifier names
//!   one, or when no final release matches at all.
//! * A Cargo-style requirement (`^1.2`, `~1.2.3`) is an extension: it is matched
//!   with `semver` rules against the same `v<version>` tags.
//! * A revision (branch, tag or commit) is used as is.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use pep440_rs::{Operator, Version, VersionSpecifier, VersionSpecifiers};

use kernels_types::wire::GitRefInfo;

/// A dependency's version requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// TOML integer `N`: branch `vN`.
    Branch(u64),
    /// PEP 440 specifier set matched against `v<version>` tags (may be empty: any
    /// final release).
    Pep440(VersionSpecifiers),
    /// Cargo-style requirement matched against `v<version>` tags (extension).
    Semver(semver::VersionReq),
    /// A branch, tag or commit, resolved by the Hub.
    Revision(String),
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::Branch(n) => write!(f, "version {n} (branch `v{n}`)"),
            Requirement::Pep440(spec) if spec.is_empty() => f.write_str("any version"),
            Requirement::Pep440(spec) => write!(f, "`{spec}`"),
            Requirement::Semver(req) => write!(f, "`{req}`"),
            Requirement::Revision(rev) => write!(f, "revision `{rev}`"),
        }
    }
}

/// An invalid version string, with the byte range of the offending part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequirementParseError {
    /// What is wrong.
    pub message: String,
    /// Byte range inside the string.
    pub range: std::ops::Range<usize>,
}

impl Requirement {
    /// Parses a version string: a Cargo-style requirement when it starts with `^`,
    /// or `~` not followed by `=`; otherwise a PEP 440 specifier set.
    pub fn parse_str(s: &str) -> Result<Self, RequirementParseError> {
        let trimmed = s.trim_start();
        if trimmed.starts_with('^') || (trimmed.starts_with('~') && !trimmed.starts_with("~=")) {
            return semver::VersionReq::parse(s)
                .map(Requirement::Semver)
                .map_err(|err| RequirementParseError {
                    message: format!("invalid Cargo-style requirement: {err}"),
                    range: 0..s.len(),
                });
        }
        match VersionSpecifiers::from_str(s) {
            Ok(spec) => Ok(Requirement::Pep440(spec)),
            Err(_) => Err(locate_pep440_error(s)),
        }
    }
}

/// Finds the first comma-separated part of `s` that is not a valid specifier.
fn locate_pep440_error(s: &str) -> RequirementParseError {
    let mut offset = 0;
    for part in s.split(',') {
        let start = offset + (part.len() - part.trim_start().len());
        let trimmed = part.trim();
        offset += part.len() + 1;
        if trimmed.is_empty() {
            return RequirementParseError {
                message: "invalid PEP 440 specifier set: an empty clause (two commas in a row, \
                          or a comma at an end)"
                    .to_owned(),
                range: start..start,
            };
        }
        if let Err(err) = VersionSpecifier::from_str(trimmed) {
            let bare_version = Version::from_str(trimmed).is_ok();
            let mut message = format!("invalid PEP 440 specifier `{trimmed}`: {err}");
            if bare_version {
                message.push_str(" (a bare version needs an operator, for example `==`)");
            }
            return RequirementParseError {
                message,
                range: start..start + trimmed.len(),
            };
        }
    }
    RequirementParseError {
        message: format!("invalid PEP 440 specifier set `{s}`"),
        range: 0..s.len(),
    }
}

/// The version a `v<version>` tag name stands for, if any: `v` followed by a PEP 440
/// version (as `packaging.version.Version(name[1:])`).
pub fn tag_version(name: &str) -> Option<Version> {
    let rest = name.strip_prefix('v')?;
    Version::from_str(rest.trim()).ok()
}

/// The integer a `v<int>` branch name stands for, as Python's `int(name[1:])`:
/// surrounding whitespace, an optional sign, ASCII digits with single `_`
/// between digits.
pub fn branch_version(name: &str) -> Option<i128> {
    let rest = name.strip_prefix('v')?.trim();
    let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    rest.replace('_', "").parse().ok()
}

/// Whether a specifier names a pre-release, which lets the whole set match
/// pre-releases (`packaging`'s `Specifier.prereleases`; `!=` never does).
fn names_prerelease(spec: &VersionSpecifier) -> bool {
    !matches!(spec.operator(), Operator::NotEqual | Operator::NotEqualStar)
        && spec.version().any_prerelease()
}

/// Applies a specifier set to versions like `SpecifierSet.filter` with default
/// pre-release handling. Returns the matching versions in input order.
pub fn filter_pep440<'a>(spec: &VersionSpecifiers, versions: &[&'a Version]) -> Vec<&'a Version> {
    let matching: Vec<&Version> = versions
        .iter()
        .copied()
        .filter(|v| spec.iter().all(|s| s.contains(v)))
        .collect();
    if spec.iter().any(names_prerelease) {
        return matching;
    }
    let finals: Vec<&Version> = matching
        .iter()
        .copied()
        .filter(|v| !v.any_prerelease())
        .collect();
    if finals.is_empty() { matching } else { finals }
}

/// Converts a tag version to a semver version for Cargo-style matching: at most
/// three release numbers; `a`/`b`/`rc`/`.dev` become a semver pre-release;
/// epochs, post and local versions are not representable.
fn to_semver(version: &Version) -> Option<semver::Version> {
    let release = version.release();
    if release.len() > 3 || version.epoch() != 0 || version.is_post() || version.is_local() {
        return None;
    }
    let part = |i: usize| release.get(i).copied().unwrap_or(0);
    let mut out = semver::Version::new(part(0), part(1), part(2));
    let mut pre = Vec::new();
    if let Some(p) = version.pre() {
        pre.push(p.to_string());
    }
    if let Some(dev) = version.dev() {
        pre.push(format!("dev{dev}"));
    }
    if !pre.is_empty() {
        out.pre = semver::Prerelease::new(&pre.join(".")).ok()?;
    }
    Some(out)
}

/// A tag chosen for a version requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectedRef {
    /// The git ref (name and target commit).
    pub git_ref: GitRefInfo,
    /// Highest version available (for "newer version exists" warnings), as text.
    pub latest: Option<String>,
}

/// Why no ref satisfies a requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoMatch {
    /// Available versions, ascending, as text (tag versions or branch numbers).
    pub available: Vec<String>,
    /// The available version closest to the request, if any.
    pub closest: Option<String>,
}

/// Selects the highest `v<version>` tag matching a PEP 440 or Cargo-style
/// requirement. Tags whose versions compare equal (`v1.0`, `v1.0.0`) collide, and
/// the later one in `tags` wins, as in the reference's dict.
pub fn select_tag(requirement: &Requirement, tags: &[GitRefInfo]) -> Result<SelectedRef, NoMatch> {
    let mut by_version: BTreeMap<Version, &GitRefInfo> = BTreeMap::new();
    for tag in tags {
        if let Some(version) = tag_version(&tag.name) {
            by_version.insert(version, tag);
        }
    }
    let versions: Vec<&Version> = by_version.keys().collect();
    let chosen: Option<&Version> = match requirement {
        Requirement::Pep440(spec) => filter_pep440(spec, &versions).into_iter().max(),
        Requirement::Semver(req) => versions
            .iter()
            .copied()
            .filter(|v| to_semver(v).is_some_and(|sv| req.matches(&sv)))
            .max(),
        Requirement::Branch(_) | Requirement::Revision(_) => None,
    };
    match chosen {
        Some(version) => Ok(SelectedRef {
            git_ref: by_version[version].clone(),
            latest: versions.last().map(|v| v.to_string()),
        }),
        None => {
            let closest = match requirement {
                Requirement::Pep440(spec) => closest_version(spec, &versions),
                _ => None,
            };
            Err(NoMatch {
                available: versions.iter().map(|v| v.to_string()).collect(),
                closest,
            })
        }
    }
}

/// The available version nearest to the versions a specifier set names: the
/// highest one below the smallest named version, else the lowest one above.
fn closest_version(spec: &VersionSpecifiers, versions: &[&Version]) -> Option<String> {
    let anchor = spec.iter().map(|s| s.version()).min()?;
    versions
        .iter()
        .rev()
        .find(|v| **v <= anchor)
        .or_else(|| versions.iter().find(|v| **v > anchor))
        .map(|v| v.to_string())
}

/// Selects branch `vN`. Like the reference, branch names map to integers through
/// Python's `int()` and a later duplicate wins.
pub fn select_branch(n: u64, branches: &[GitRefInfo]) -> Result<SelectedRef, NoMatch> {
    let mut by_number: BTreeMap<i128, &GitRefInfo> = BTreeMap::new();
    for branch in branches {
        if let Some(number) = branch_version(&branch.name) {
            by_number.insert(number, branch);
        }
    }
    let latest = by_number.keys().next_back().map(|n| n.to_string());
    match by_number.get(&i128::from(n)) {
        Some(branch) => Ok(SelectedRef {
            git_ref: (*branch).clone(),
            latest,
        }),
        None => {
            let wanted = i128::from(n);
            let closest = by_number
                .keys()
                .min_by_key(|k| (**k - wanted).abs())
                .map(|k| k.to_string());
            Err(NoMatch {
                available: by_number.keys().map(|k| k.to_string()).collect(),
                closest,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(list: &[&str]) -> Vec<Version> {
        list.iter().map(|v| Version::from_str(v).unwrap()).collect()
    }

    fn filter(spec: &str, available: &[&str]) -> Vec<String> {
        let available = versions(available);
        let refs: Vec<&Version> = available.iter().collect();
        let spec = VersionSpecifiers::from_str(spec).unwrap();
        filter_pep440(&spec, &refs)
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// The reference's verified examples (packaging's default pre-release rule).
    #[test]
    fn prerelease_rules() {
        let available = ["0.0.1", "0.1.0", "0.2.0rc1", "1.0.0.dev0"];
        assert_eq!(filter(">=0.0.1", &available), ["0.0.1", "0.1.0"]);
        assert_eq!(filter(">=0.2", &available), ["1.0.0.dev0"]);
        assert_eq!(filter("==0.2.0rc1", &available), ["0.2.0rc1"]);
        assert_eq!(filter("", &available), ["0.0.1", "0.1.0"]);
        assert_eq!(filter("<0.2", &available), ["0.0.1", "0.1.0"]);
    }

    fn tag(name: &str, commit: char) -> GitRefInfo {
        GitRefInfo {
            name: name.into(),
            git_ref: format!("refs/tags/{name}"),
            target_commit: commit.to_string().repeat(40).parse().unwrap(),
        }
    }

    #[test]
    fn picks_highest_matching_tag() {
        let tags = [
            tag("v0.0.1", '1'),
            tag("v0.1.0", '2'),
            tag("v0.1.1", '3'),
            tag("latest", '4'),
            tag("vfoo", '5'),
        ];
        let req = Requirement::parse_str(">=0.1.0,<0.2.0").unwrap();
        let chosen = select_tag(&req, &tags).unwrap();
        assert_eq!(chosen.git_ref.name, "v0.1.1");
        let req = Requirement::parse_str("^0.0.1").unwrap();
        assert_eq!(select_tag(&req, &tags).unwrap().git_ref.name, "v0.0.1");
        let req = Requirement::parse_str("~0.1").unwrap();
        assert_eq!(select_tag(&req, &tags).unwrap().git_ref.name, "v0.1.1");
        let req = Requirement::parse_str(">=1").unwrap();
        let err = select_tag(&req, &tags).unwrap_err();
        assert_eq!(err.available, ["0.0.1", "0.1.0", "0.1.1"]);
        assert_eq!(err.closest.as_deref(), Some("0.1.1"));
    }

    #[test]
    fn equal_tag_versions_later_wins() {
        let tags = [tag("v1.0", '1'), tag("v1.0.0", '2')];
        let req = Requirement::parse_str(">=1").unwrap();
        assert_eq!(
            select_tag(&req, &tags)
                .unwrap()
                .git_ref
                .target_commit
                .as_str(),
            "2".repeat(40)
        );
    }

    #[test]
    fn branch_names_follow_python_int() {
        assert_eq!(branch_version("v01"), Some(1));
        assert_eq!(branch_version("v1_0"), Some(10));
        assert_eq!(branch_version("v-1"), Some(-1));
        assert_eq!(branch_version("v1__0"), None);
        assert_eq!(branch_version("v1.0"), None);
        assert_eq!(branch_version("main"), None);
        let branches = [
            tag("main", '0'),
            tag("v1", '1'),
            tag("v2", '2'),
            tag("v01", '3'),
        ];
        let chosen = select_branch(1, &branches).unwrap();
        assert_eq!(chosen.git_ref.target_commit.as_str(), "3".repeat(40));
        assert_eq!(chosen.latest.as_deref(), Some("2"));
        let err = select_branch(5, &branches).unwrap_err();
        assert_eq!(err.available, ["1", "2"]);
    }

    #[test]
    fn parse_errors_point_inside_the_string() {
        let err = Requirement::parse_str(">=0.1, foo").unwrap_err();
        assert_eq!(err.range, 7..10);
        let err = Requirement::parse_str("1").unwrap_err();
        assert!(err.message.contains("bare version"), "{}", err.message);
        let err = Requirement::parse_str(">=0.0.2,,").unwrap_err();
        assert!(err.message.contains("empty clause"), "{}", err.message);
        assert_eq!(err.range, 8..8);
        assert!(Requirement::parse_str("^x").is_err());
        assert!(matches!(
            Requirement::parse_str("~=1.2"),
            Ok(Requirement::Pep440(_))
        ));
    }
}
