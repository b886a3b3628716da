//! `LOCAL_KERNELS`: `org/name=/path:org2/name2=/path2`, as reference 0.19.1
//! (`kernels/_internals/load.py`) reads it: the value is split at every `:`,
//! each entry at its first `=`; an entry without `=` is an error; a later
//! entry for the same repository replaces an earlier one; repository ids are
//! matched exactly as written (the runtime keys a dictionary with them); a
//! relative path is relative to the application's working directory.

use std::path::{Path, PathBuf};

use super::LocalError;

/// One `repo_id=path` entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocalEntry {
    /// The repository id as written (not checked: the runtime compares it
    /// with the id the application passes to `get_kernel`).
    pub repo_id: String,
    /// The path as written.
    pub path: PathBuf,
}

impl LocalEntry {
    /// How messages name the entry: `` LOCAL_KERNELS entry `org/name=path` ``.
    pub fn source_name(&self) -> String {
        format!(
            "LOCAL_KERNELS entry `{}={}`",
            self.repo_id,
            self.path.display()
        )
    }
}

/// A parsed `LOCAL_KERNELS` value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalKernels {
    entries: Vec<LocalEntry>,
}

impl LocalKernels {
    /// Parses a value as the runtime does.
    ///
    /// ```
    /// use kernels::local::LocalKernels;
    /// let parsed = LocalKernels::parse("a/relu=/k/relu:b/gelu=../g=x").unwrap();
    /// assert_eq!(parsed.get("b/gelu").unwrap().path.to_str(), Some("../g=x"));
    /// assert!(parsed.get("A/relu").is_none());
    /// assert!(LocalKernels::parse("a/relu").is_err());
    /// assert!(LocalKernels::parse("").is_err());
    /// ```
    ///
    /// # Errors
    /// [`LocalError::MalformedEntry`] for the first entry without `=` (an
    /// empty value is one empty entry, as for the runtime).
    pub fn parse(value: &str) -> Result<Self, LocalError> {
        let mut entries: Vec<LocalEntry> = Vec::new();
        for entry in value.split(':') {
            let Some((repo_id, path)) = entry.split_once('=') else {
                return Err(LocalError::MalformedEntry {
                    entry: entry.to_owned(),
                });
            };
            entries.retain(|e| e.repo_id != repo_id);
            entries.push(LocalEntry {
                repo_id: repo_id.to_owned(),
                path: PathBuf::from(path),
            });
        }
        Ok(LocalKernels { entries })
    }

    /// The entry the runtime uses for `repo_id`, if any.
    pub fn get(&self, repo_id: &str) -> Option<&LocalEntry> {
        self.entries.iter().find(|e| e.repo_id == repo_id)
    }

    /// Every entry, in the order of the value (a replaced entry at the place
    /// of its replacement).
    pub fn entries(&self) -> &[LocalEntry] {
        &self.entries
    }

    /// The value that makes the runtime load each `(repo_id, dir)` from
    /// `dir`; relative directories are made absolute against `base`, since
    /// the application's working directory is not known.
    ///
    /// ```
    /// use std::path::{Path, PathBuf};
    /// use kernels::local::LocalKernels;
    /// let value = LocalKernels::value_for(
    ///     &[("a/relu".to_owned(), PathBuf::from("../relu"))],
    ///     Path::new("/app"),
    /// );
    /// assert_eq!(value, "a/relu=/app/../relu");
    /// ```
    pub fn value_for(entries: &[(String, PathBuf)], base: &Path) -> String {
        entries
            .iter()
            .map(|(repo_id, dir)| format!("{repo_id}={}", base.join(dir).display()))
            .collect::<Vec<_>>()
            .join(":")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_entries_replace_earlier_ones() {
        let parsed = LocalKernels::parse("a/x=/one:b/y=/two:a/x=/three").unwrap();
        let paths: Vec<_> = parsed.entries().iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, [PathBuf::from("/two"), PathBuf::from("/three")]);
        assert_eq!(parsed.get("a/x").unwrap().path, Path::new("/three"));
    }

    #[test]
    fn the_malformed_entry_is_named() {
        let err = LocalKernels::parse("a/x=/one:b/y:c/z=/z").unwrap_err();
        assert!(err.to_string().contains("`b/y`"), "{err}");
        // A trailing `:` is an empty entry, as in the runtime.
        assert!(LocalKernels::parse("a/x=/one:").is_err());
    }
}
