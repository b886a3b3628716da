//! Hub repository ids (`owner/name`).

use std::fmt;
use std::str::FromStr;

/// A validated Hub repository id of the form `owner/name`.
///
/// Each part matches `[A-Za-z0-9_.-]{1,96}` and contains neither `--` nor `..`,
/// the rule `huggingface_hub` applies (`utils/_validators.py`).
///
/// ```
/// use kernels_types::repo_id::RepoId;
/// let id: RepoId = "kernels-community/activation".parse().unwrap();
/// assert_eq!(id.owner(), "kernels-community");
/// assert_eq!(id.name(), "activation");
/// assert_eq!(id.folder_name("kernel"), "kernels--kernels-community--activation");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RepoId(String);

/// Why a string is not a valid [`RepoId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepoIdError {
    /// The id has no `/`, as in `activation`.
    #[error("repo id `{0}` has no `/`: expected `owner/name`, for example `kernels-community/{0}`")]
    MissingSlash(String),
    /// The id has more than one `/` or an empty part.
    #[error("repo id `{0}` is not of the form `owner/name`")]
    BadShape(String),
    /// A part contains a character outside `[A-Za-z0-9_.-]`, `--`, `..`, or is too long.
    #[error(
        "repo id `{0}` has an invalid part: use letters, digits, `-`, `_` and `.` (at most 96 each, no `--` or `..`)"
    )]
    BadPart(String),
}

fn valid_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 96
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !part.contains("--")
        && !part.contains("..")
}

impl FromStr for RepoId {
    type Err = RepoIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some((owner, name)) = s.split_once('/') else {
            return Err(RepoIdError::MissingSlash(s.to_owned()));
        };
        if owner.is_empty() || name.is_empty() || name.contains('/') {
            return Err(RepoIdError::BadShape(s.to_owned()));
        }
        if !valid_part(owner) || !valid_part(name) {
            return Err(RepoIdError::BadPart(s.to_owned()));
        }
        Ok(RepoId(s.to_owned()))
    }
}

impl RepoId {
    /// The whole id, `owner/name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The part before `/`.
    pub fn owner(&self) -> &str {
        self.0.split_once('/').map_or("", |(o, _)| o)
    }

    /// The part after `/`.
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or("", |(_, n)| n)
    }

    /// The cache folder name for a repo type (`kernel` → `kernels--owner--name`,
    /// `model` → `models--owner--name`), as `huggingface_hub.repo_folder_name`.
    pub fn folder_name(&self, repo_type: &str) -> String {
        format!("{repo_type}s--{}--{}", self.owner(), self.name())
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_ids() {
        assert!(matches!(
            "relu".parse::<RepoId>(),
            Err(RepoIdError::MissingSlash(_))
        ));
        assert!(matches!(
            "a/b/c".parse::<RepoId>(),
            Err(RepoIdError::BadShape(_))
        ));
        assert!(matches!(
            "/b".parse::<RepoId>(),
            Err(RepoIdError::BadShape(_))
        ));
        assert!(matches!(
            "a--b/c".parse::<RepoId>(),
            Err(RepoIdError::BadPart(_))
        ));
        assert!(matches!(
            "a b/c".parse::<RepoId>(),
            Err(RepoIdError::BadPart(_))
        ));
        assert!("kernels-test/versions".parse::<RepoId>().is_ok());
    }
}
