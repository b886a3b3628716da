//! `kernels.lock` files with git merge conflict markers.
//!
//! A conflicted file is split into the two sides git merged (`<<<<<<<` … `=======`
//! is "ours", `=======` … `>>>>>>>` is "theirs"; a diff3 base section after
//! `|||||||` is dropped). Each side is a complete lock; entries both sides agree
//! on are kept as they are, and only the others need to be resolved again.

use std::path::Path;

use crate::lock::format::{KernelHashLock, LockedKernel, Lockfile};

/// The two sides of a conflicted file, or `None` when it has no complete
/// conflict hunk.
pub fn split(text: &str) -> Option<(String, String)> {
    enum Part {
        Both,
        Ours,
        Base,
        Theirs,
    }
    let mut part = Part::Both;
    let (mut ours, mut theirs) = (String::new(), String::new());
    let mut hunks = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        let marker = |m: &str| bare == m || bare.starts_with(&format!("{m} "));
        match part {
            Part::Both if marker("<<<<<<<") => part = Part::Ours,
            Part::Ours if marker("|||||||") => part = Part::Base,
            Part::Ours | Part::Base if bare == "=======" => part = Part::Theirs,
            Part::Theirs if marker(">>>>>>>") => {
                part = Part::Both;
                hunks += 1;
            }
            Part::Both => {
                ours.push_str(line);
                theirs.push_str(line);
            }
            Part::Ours => ours.push_str(line),
            Part::Base => {}
            Part::Theirs => theirs.push_str(line),
        }
    }
    (hunks > 0 && matches!(part, Part::Both)).then_some((ours, theirs))
}

/// What a conflicted lock still agrees on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// Entries identical on both sides (variant-hash format), in "ours" order.
    pub agreed: Vec<KernelHashLock>,
    /// Repo ids whose entries differ or exist on one side only, sorted.
    pub conflicting: Vec<String>,
}

fn kernels_of(text: &str, path: &Path) -> Option<(Lockfile, Vec<LockedKernel>)> {
    let lock = Lockfile::parse(text, path).ok()?;
    let kernels = lock.locked_kernels(path).ok()?;
    Some((lock, kernels))
}

/// Splits a conflicted variant-hash lock into agreed entries and conflicting repo
/// ids. `None` when the file cannot be split or a side is not a variant-hash lock
/// (then everything must be resolved again).
pub fn merge(text: &str, path: &Path) -> Option<Merged> {
    let (ours, theirs) = split(text)?;
    let (Lockfile::VariantHash(ours), _) = kernels_of(&ours, path)? else {
        return None;
    };
    let (Lockfile::VariantHash(theirs), _) = kernels_of(&theirs, path)? else {
        return None;
    };
    let mut agreed = Vec::new();
    let mut conflicting = Vec::new();
    for entry in &ours {
        if theirs.contains(entry) {
            agreed.push(entry.clone());
        } else {
            conflicting.push(entry.repo_id.clone());
        }
    }
    for entry in &theirs {
        if !ours.contains(entry) && !conflicting.contains(&entry.repo_id) {
            conflicting.push(entry.repo_id.clone());
        }
    }
    conflicting.sort();
    Some(Merged {
        agreed,
        conflicting,
    })
}

/// Repo ids whose entries differ between the two sides of a conflicted lock (any
/// format), sorted; empty when the sides cannot be read.
pub fn conflicting_repos(text: &str) -> Vec<String> {
    let path = Path::new("kernels.lock");
    let Some((ours, theirs)) = split(text) else {
        return Vec::new();
    };
    let (Some((_, ours)), Some((_, theirs))) = (kernels_of(&ours, path), kernels_of(&theirs, path))
    else {
        return Vec::new();
    };
    let mut repos: Vec<String> = ours
        .iter()
        .filter(|k| !theirs.contains(k))
        .chain(theirs.iter().filter(|k| !ours.contains(k)))
        .map(|k| k.repo_id.to_string())
        .collect();
    repos.sort();
    repos.dedup();
    repos
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFLICTED: &str = r#"[
  {
    "repo_id": "a/same",
    "sha": "1111111111111111111111111111111111111111",
    "variants": {}
  },
  {
    "repo_id": "a/moved",
<<<<<<< HEAD
    "sha": "2222222222222222222222222222222222222222",
||||||| base
    "sha": "0000000000000000000000000000000000000000",
=======
    "sha": "3333333333333333333333333333333333333333",
>>>>>>> feature
    "variants": {}
  }
]"#;

    #[test]
    fn splits_sides_and_keeps_agreed_entries() {
        let (ours, theirs) = split(CONFLICTED).unwrap();
        assert!(ours.contains("2222") && !ours.contains("3333") && !ours.contains("0000"));
        assert!(theirs.contains("3333") && !theirs.contains("2222"));
        let merged = merge(CONFLICTED, Path::new("kernels.lock")).unwrap();
        assert_eq!(merged.conflicting, ["a/moved"]);
        assert_eq!(merged.agreed.len(), 1);
        assert_eq!(merged.agreed[0].repo_id, "a/same");
        assert_eq!(conflicting_repos(CONFLICTED), ["a/moved"]);
    }

    #[test]
    fn unterminated_hunks_do_not_split() {
        assert_eq!(split("[\n<<<<<<< HEAD\n]\n"), None);
        assert_eq!(split("[]"), None);
    }
}
