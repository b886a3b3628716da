//! What a commit is called: the one rule that names a locked commit by a
//! version, for the `Updated …` lines of `kernels lock`, the `version` of
//! `kernels download`, the labels of `kernels tree`/`outdated` and the wheel
//! version of `kernels to-wheel`.
//!
//! The rule, first match wins:
//!
//! 1. the highest **release tag** at the commit: a name `v<PEP 440 version>`
//!    (as [`tag_version`] reads it) with at least two release segments and no
//!    local segment (`v0.0.3`, `v1.2`, `v0.1.2rc1`). Pre-releases count, ordered
//!    as PEP 440 orders them, so a final release at the same commit wins over
//!    its own pre-release. A one-segment name (`v1`) is a branch-style major
//!    version, not a release tag;
//! 2. else the highest **version branch** `vN` at the commit ([`branch_version`]);
//! 3. else nothing: a commit only reachable from `main` or other branches has
//!    no version label.
//!
//! The inputs are ref names that all point at the commit. Where the kind of a
//! ref is unknown (the cache's `refs/` files, which hold tags and branches
//! alike), pass the same names as tags and as branches: the shapes of the two
//! kinds do not overlap.

use pep440_rs::Version;

use crate::lock::requirement::{branch_version, tag_version};

/// The version a release tag name stands for, when it is one (rule 1 above):
/// `v0.0.3` → `0.0.3`, `v0.1.2rc1` → `0.1.2rc1`; `v1`, `v1.0+local`, `main` →
/// `None`.
pub fn release_tag_version(name: &str) -> Option<Version> {
    tag_version(name).filter(|v| v.release().len() >= 2 && !v.is_local())
}

/// The highest release tag among `tags` (names of tags at one commit), with
/// its version.
pub fn release_tag<'a>(tags: impl IntoIterator<Item = &'a str>) -> Option<(Version, &'a str)> {
    tags.into_iter()
        .filter_map(|name| Some((release_tag_version(name)?, name)))
        .max()
}

/// The version label of a commit from the names of the tags and branches that
/// point at it: the highest release tag, else the highest `vN` branch.
pub fn commit_label<'a>(
    tags: impl IntoIterator<Item = &'a str>,
    branches: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    release_tag(tags).map(|(_, name)| name).or_else(|| {
        branches
            .into_iter()
            .filter_map(|name| Some((branch_version(name)?, name)))
            .max()
            .map(|(_, name)| name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_release_tag_wins() {
        let tags = ["v0.0.2", "v0.0.10", "main", "v0.0.9"];
        assert_eq!(commit_label(tags, ["v1"]), Some("v0.0.10"));
        assert_eq!(release_tag(tags).unwrap().0.to_string(), "0.0.10");
    }

    #[test]
    fn pre_releases_count_below_their_release() {
        assert_eq!(commit_label(["v0.1.2rc1"], ["v1"]), Some("v0.1.2rc1"));
        assert_eq!(commit_label(["v0.1.2rc1", "v0.1.2"], []), Some("v0.1.2"));
        assert_eq!(commit_label(["v0.1.2rc1", "v0.1.1"], []), Some("v0.1.2rc1"));
    }

    #[test]
    fn branches_name_commits_without_a_release_tag() {
        assert_eq!(commit_label([], ["main", "v1", "v10", "v2"]), Some("v10"));
        assert_eq!(commit_label(["latest"], ["main"]), None);
        assert_eq!(commit_label([], []), None);
    }

    #[test]
    fn one_segment_and_local_names_are_not_release_tags() {
        for name in ["v1", "v1.0+local", "1.2.0", "vv1", "v", "release-1", "main"] {
            assert!(release_tag_version(name).is_none(), "{name}");
        }
        // Names of unknown kind (the cache's `refs/`) passed as both.
        let names = ["v1", "main", "v0.0.3"];
        assert_eq!(commit_label(names, names), Some("v0.0.3"));
        assert_eq!(commit_label(["v1", "main"], ["v1", "main"]), Some("v1"));
    }
}
