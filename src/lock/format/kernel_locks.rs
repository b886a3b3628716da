//! The `KernelLocks` format of reference `kernels` 0.17: a JSON array of
//! `{"dependency": {"repo-id", "version" | "revision"}, "lock": {"commit"}}`.
//!
//! Reading is strict like the reference: unknown keys anywhere are errors, exactly
//! one of `version` (unsigned integer) and `revision` (string) must be given,
//! commits are 40 or 64 hex digits (stored lowercase), and a dependency may not
//! appear twice. Entries are kept sorted by repo id bytes, then all versions
//! (numerically) before all revisions (bytewise) — the order the reference
//! writes, whatever the order of the input. The writer matches
//! `serde_json::to_string_pretty` (raw UTF-8, no final newline).

use kernels_types::CommitId;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// What a lock entry was resolved from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelDependency {
    /// Hub repository id as written (not validated by the format).
    pub repo_id: String,
    /// The requested version or revision.
    pub version: KernelVersion,
}

/// A requested version: the variant order is the sort order of the format.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KernelVersion {
    /// Integer version N (branch `vN`).
    Version(u64),
    /// Branch, tag or commit.
    Revision(String),
}

impl fmt::Display for KernelDependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.version {
            KernelVersion::Version(n) => write!(f, "`{}` version {n}", self.repo_id),
            KernelVersion::Revision(r) => write!(f, "`{}` revision `{r}`", self.repo_id),
        }
    }
}

/// All locks of a project in the 0.17 format, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelLocks(BTreeMap<KernelDependency, CommitId>);

impl KernelLocks {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry; returns the dependency back if it is already present.
    pub fn insert(
        &mut self,
        dependency: KernelDependency,
        commit: CommitId,
    ) -> Result<(), KernelDependency> {
        if self.0.contains_key(&dependency) {
            return Err(dependency);
        }
        self.0.insert(dependency, commit);
        Ok(())
    }

    /// Entries in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&KernelDependency, &CommitId)> {
        self.0.iter()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Serializes like the reference (`serde_json::to_string_pretty`, no final newline).
    pub fn to_json(&self) -> String {
        let entries: Vec<RawEntry> = self
            .0
            .iter()
            .map(|(dep, commit)| RawEntry {
                dependency: RawDependency {
                    repo_id: dep.repo_id.clone(),
                    version: match dep.version {
                        KernelVersion::Version(n) => Some(n),
                        KernelVersion::Revision(_) => None,
                    },
                    revision: match &dep.version {
                        KernelVersion::Revision(r) => Some(r.clone()),
                        KernelVersion::Version(_) => None,
                    },
                },
                lock: RawLock {
                    commit: commit.as_str().to_owned(),
                },
            })
            .collect();
        serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".to_owned())
    }

    /// Parses the whole text strictly. Errors carry serde's message (with line and
    /// column where serde knows them).
    pub(crate) fn parse(text: &str) -> Result<Self, ParseError> {
        let raw: Vec<RawEntry> = serde_json::from_str(text).map_err(|err| {
            entry_error(text, &err).unwrap_or_else(|| ParseError::Json {
                line: err.line(),
                column: err.column(),
                message: err.to_string(),
            })
        })?;
        let mut locks = KernelLocks::new();
        for (index, entry) in raw.into_iter().enumerate() {
            let repo_id = entry.dependency.repo_id;
            let version = match (entry.dependency.version, entry.dependency.revision) {
                (Some(n), None) => KernelVersion::Version(n),
                (None, Some(r)) => KernelVersion::Revision(r),
                (Some(_), Some(_)) => {
                    return Err(ParseError::Entry {
                        index,
                        message: format!(
                            "dependency `{repo_id}`: `version` and `revision` are mutually exclusive"
                        ),
                    });
                }
                (None, None) => {
                    return Err(ParseError::Entry {
                        index,
                        message: format!(
                            "dependency `{repo_id}`: either `version` or `revision` must be specified"
                        ),
                    });
                }
            };
            let commit = entry
                .lock
                .commit
                .parse::<CommitId>()
                .map_err(|_| ParseError::Entry {
                    index,
                    message: format!(
                        "invalid git object id, expected 40 or 64 hexadecimal digits: {}",
                        entry.lock.commit
                    ),
                })?;
            locks
                .insert(KernelDependency { repo_id, version }, commit)
                .map_err(|dep| ParseError::Entry {
                    index,
                    message: format!("duplicate dependency: {dep}"),
                })?;
        }
        Ok(locks)
    }
}

/// When the text is a well-formed JSON array, names the first entry serde
/// rejects (with its repo id when it has one and the position of the error).
fn entry_error(text: &str, err: &serde_json::Error) -> Option<ParseError> {
    let values: Vec<serde_json::Value> = serde_json::from_str(text).ok()?;
    values.into_iter().enumerate().find_map(|(index, value)| {
        let repo = value
            .get("dependency")
            .and_then(|d| d.get("repo-id"))
            .and_then(|r| r.as_str())
            .map(|r| format!("dependency `{r}`: "))
            .unwrap_or_default();
        serde_json::from_value::<RawEntry>(value)
            .err()
            .map(|entry_err| ParseError::Entry {
                index,
                message: format!(
                    "{repo}{entry_err} (line {}, column {})",
                    err.line(),
                    err.column()
                ),
            })
    })
}

/// Why a `KernelLocks` text was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Shape or type error reported by serde (1-based line and column, 0 if unknown).
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// A semantic error in entry `index` (0-based).
    Entry { index: usize, message: String },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    dependency: RawDependency,
    lock: RawLock,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDependency {
    #[serde(rename = "repo-id")]
    repo_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revision: Option<String>,
}

/// The `lock` object as the file spells it: the commit stays text here so that a
/// malformed one is reported with this format's own message, naming the entry;
/// it becomes a [`CommitId`] when the entry is read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    commit: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(repo: &str, version: &str) -> String {
        format!(
            r#"{{"dependency":{{"repo-id":"{repo}",{version}}},"lock":{{"commit":"{}"}}}}"#,
            "A".repeat(40)
        )
    }

    #[test]
    fn sorts_like_the_reference() {
        let text = format!(
            "[{},{},{},{}]",
            entry("a/b", r#""revision":"main""#),
            entry("a/b", r#""version":10"#),
            entry("a/b", r#""version":2"#),
            entry("B/c", r#""version":1"#),
        );
        let locks = KernelLocks::parse(&text).unwrap();
        let order: Vec<String> = locks.iter().map(|(d, _)| d.to_string()).collect();
        assert_eq!(
            order,
            [
                "`B/c` version 1",
                "`a/b` version 2",
                "`a/b` version 10",
                "`a/b` revision `main`"
            ]
        );
        assert!(locks.to_json().contains(&"a".repeat(40)));
    }

    #[test]
    fn rejects_bad_entries() {
        let both = format!("[{}]", entry("a/b", r#""version":1,"revision":"x""#));
        let neither = format!("[{}]", entry("a/b", r#""foo":1"#));
        let dup = format!(
            "[{},{}]",
            entry("a/b", r#""version":1"#),
            entry("a/b", r#""version":1"#)
        );
        let neg = format!("[{}]", entry("a/b", r#""version":-1"#));
        let string_version = format!("[{}]", entry("a/b", r#""version":"1""#));
        let hash = r#"[{"dependency":{"repo-id":"a/b","version":1},"lock":{"commit":"0000000000000000000000000000000000000000","hash":"x"}}]"#;
        let short = r#"[{"dependency":{"repo-id":"a/b","version":1},"lock":{"commit":"abc"}}]"#;
        for (text, needle) in [
            (both.as_str(), "mutually exclusive"),
            (neither.as_str(), "unknown field `foo`"),
            (dup.as_str(), "duplicate dependency"),
            (neg.as_str(), "invalid value"),
            (string_version.as_str(), "invalid type"),
            (hash, "unknown field `hash`"),
            (short, "40 or 64"),
        ] {
            let err = KernelLocks::parse(text).unwrap_err();
            if text.contains("\"hash\"") {
                assert!(
                    matches!(&err, ParseError::Entry { index: 0, message } if message.starts_with("dependency `a/b`: unknown field `hash`")),
                    "{err:?}"
                );
            }
            let message = match err {
                ParseError::Json { message, .. } | ParseError::Entry { message, .. } => message,
            };
            assert!(message.contains(needle), "{text}: {message}");
        }
    }
}
