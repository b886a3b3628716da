//! Git commit ids.

use std::fmt;
use std::str::FromStr;

/// A full git commit id: 40 (SHA-1) or 64 (SHA-256 repositories) lowercase hex
/// digits, validated once where the text enters.
///
/// Parsing accepts upper-case digits and stores them lowercase, the form the Hub
/// returns and both lock formats store (reference `kernels` 0.17 lower-cases the
/// `sha` it reads; 0.10 compares case-sensitively against Hub answers, which are
/// always lowercase).
///
/// ```
/// use kernels_types::CommitId;
/// let c: CommitId = "D649EFB5B7A5E1F1A5D3F1C1A1B1C1D1E1F10203".parse().unwrap();
/// assert_eq!(c.as_str(), "d649efb5b7a5e1f1a5d3f1c1a1b1c1d1e1f10203");
/// assert_eq!(c.short(), "d649efb");
/// assert!("v1".parse::<CommitId>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommitId(String);

/// Why a string is not a [`CommitId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a commit id: expected 40 hexadecimal digits (64 for SHA-256 repositories)")]
pub struct CommitIdError(pub String);

impl CommitId {
    /// Whether `s` has the shape of a full commit id (40 or 64 hex digits, any
    /// case): the test that tells a commit from a branch or tag name.
    pub fn is_commit_like(s: &str) -> bool {
        matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// Whether `s` could be a commit id abbreviated as git abbreviates it: 7 to
    /// 64 hex digits, any case (a `revision` given as `d649efb`).
    pub fn is_abbreviation(s: &str) -> bool {
        (7..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
    }

    /// Whether `s` is a commit id spelled the way the Hub and the cache spell it:
    /// 40 or 64 *lowercase* hex digits (snapshot directory names, ref files).
    pub fn is_canonical(s: &str) -> bool {
        CommitId::is_commit_like(s) && !s.bytes().any(|b| b.is_ascii_uppercase())
    }

    /// Whether this is a SHA-1 commit (40 digits), the only kind variant-hash
    /// lock files hold.
    pub fn is_sha1(&self) -> bool {
        self.0.len() == 40
    }

    /// The lowercase hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 7 digits, as `git log --oneline` shows a commit.
    pub fn short(&self) -> &str {
        &self.0[..7]
    }
}

impl FromStr for CommitId {
    type Err = CommitIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if CommitId::is_commit_like(s) {
            Ok(CommitId(s.to_ascii_lowercase()))
        } else {
            Err(CommitIdError(s.to_owned()))
        }
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for CommitId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl serde::Serialize for CommitId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for CommitId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert!(CommitId::is_commit_like(&"a".repeat(40)));
        assert!(CommitId::is_commit_like(&"A".repeat(64)));
        assert!(!CommitId::is_commit_like(&"a".repeat(41)));
        assert!(!CommitId::is_commit_like(&"z".repeat(40)));
        assert_eq!(
            "AB".repeat(20).parse::<CommitId>().unwrap().as_str(),
            "ab".repeat(20)
        );
    }
}
