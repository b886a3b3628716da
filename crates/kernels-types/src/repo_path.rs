//! The one rule for which repository paths `kernels` accepts from a listing,
//! checked when a listing is planned (download, lock, to-wheel), before any file
//! is requested, and again by the cache before anything is written.
//!
//! A path is accepted when it is relative, `/`-separated, made of non-empty
//! components other than `.` and `..`, without backslashes, NUL or any other
//! control character, with components of at most [`MAX_COMPONENT_BYTES`] bytes
//! and at most [`MAX_PATH_BYTES`] bytes in all. A listing is accepted when every
//! file path is, no path appears twice and no file is also another file's
//! directory. huggingface_hub refuses such paths before downloading too.

use std::collections::HashSet;
use std::fmt;

/// Longest path component (the usual file-system `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Longest repository path (leaves room for the cache root below `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 1024;

/// Why a repository path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoPathError {
    /// The path is empty.
    Empty,
    /// The path starts with `/` (or a drive letter such as `C:`).
    Absolute,
    /// A component is `..`.
    ParentComponent,
    /// A component is `.` or empty (`a//b`, a trailing `/`).
    EmptyOrDotComponent,
    /// The path contains `\`.
    Backslash,
    /// The path contains a control character (NUL, newline, escape, …).
    Control(char),
    /// A component is longer than [`MAX_COMPONENT_BYTES`].
    ComponentTooLong(usize),
    /// The path is longer than [`MAX_PATH_BYTES`].
    TooLong(usize),
    /// The listing names this path twice.
    Duplicate,
    /// The path is a file in the listing and the directory of another file.
    FileAndDirectory,
}

impl fmt::Display for RepoPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RepoPathError::Empty => f.write_str("the path is empty"),
            RepoPathError::Absolute => f.write_str("the path is absolute"),
            RepoPathError::ParentComponent => f.write_str("the path has a `..` component"),
            RepoPathError::EmptyOrDotComponent => {
                f.write_str("the path has an empty or `.` component")
            }
            RepoPathError::Backslash => f.write_str("the path contains a backslash"),
            RepoPathError::Control(c) => {
                write!(
                    f,
                    "the path contains the control character U+{:04X}",
                    *c as u32
                )
            }
            RepoPathError::ComponentTooLong(n) => write!(
                f,
                "a path component is {n} bytes long (at most {MAX_COMPONENT_BYTES})"
            ),
            RepoPathError::TooLong(n) => {
                write!(f, "the path is {n} bytes long (at most {MAX_PATH_BYTES})")
            }
            RepoPathError::Duplicate => f.write_str("the listing names the path twice"),
            RepoPathError::FileAndDirectory => {
                f.write_str("the path is both a file and the directory of another file")
            }
        }
    }
}

/// Checks one repository path.
pub fn check(path: &str) -> Result<(), RepoPathError> {
    if path.is_empty() {
        return Err(RepoPathError::Empty);
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(RepoPathError::Control(c));
    }
    if path.contains('\\') {
        return Err(RepoPathError::Backslash);
    }
    let bytes = path.as_bytes();
    if path.starts_with('/')
        || (bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic())
    {
        return Err(RepoPathError::Absolute);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(RepoPathError::TooLong(path.len()));
    }
    for part in path.split('/') {
        match part {
            ".." => return Err(RepoPathError::ParentComponent),
            "" | "." => return Err(RepoPathError::EmptyOrDotComponent),
            _ if part.len() > MAX_COMPONENT_BYTES => {
                return Err(RepoPathError::ComponentTooLong(part.len()));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks the file paths of one listing: each by [`check`], none twice, none
/// both a file and a directory. Returns the first offending path.
pub fn check_listing<'a>(
    files: impl IntoIterator<Item = &'a str>,
) -> Result<(), (String, RepoPathError)> {
    let mut seen = HashSet::new();
    for path in files {
        check(path).map_err(|err| (path.to_owned(), err))?;
        if !seen.insert(path) {
            return Err((path.to_owned(), RepoPathError::Duplicate));
        }
    }
    for path in &seen {
        let mut prefix = *path;
        while let Some((dir, _)) = prefix.rsplit_once('/') {
            if seen.contains(dir) {
                return Err((dir.to_owned(), RepoPathError::FileAndDirectory));
            }
            prefix = dir;
        }
    }
    Ok(())
}

/// Checks every path of a tree listing: directories by [`check`], files by
/// [`check_listing`]. Returns the first offending path.
pub fn check_entries(entries: &[crate::wire::TreeEntry]) -> Result<(), (String, RepoPathError)> {
    for dir in entries.iter().filter(|e| !e.is_file()) {
        check(&dir.path).map_err(|err| (dir.path.clone(), err))?;
    }
    check_listing(
        entries
            .iter()
            .filter(|e| e.is_file())
            .map(|e| e.path.as_str()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_paths() {
        for ok in [
            "README.md",
            "build/torch28-cxx11-cu128-x86_64-linux/relu/_ops.py",
            "a b/ü.txt",
            ".gitattributes",
            "build/x/..hidden",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_escaping_and_strange_paths() {
        use RepoPathError::*;
        let long = "a".repeat(256);
        let deep = vec!["abcdefgh"; 200].join("/");
        let cases: &[(&str, RepoPathError)] = &[
            ("", Empty),
            ("/etc/passwd", Absolute),
            ("C:/x", Absolute),
            ("build/../../x", ParentComponent),
            ("..", ParentComponent),
            ("build//x", EmptyOrDotComponent),
            ("build/./x", EmptyOrDotComponent),
            ("build/x/", EmptyOrDotComponent),
            ("build\\x", Backslash),
            ("build/x\0y", Control('\0')),
            ("build/\u{1b}[2Jx", Control('\u{1b}')),
            ("a\nb", Control('\n')),
            ("a\u{9b}b", Control('\u{9b}')),
            (&long, ComponentTooLong(256)),
            (&deep, TooLong(deep.len())),
        ];
        for (path, err) in cases {
            assert_eq!(check(path).as_ref(), Err(err), "{path:?}");
        }
    }

    #[test]
    fn listing_rules() {
        assert_eq!(check_listing(["a/b", "a/c", "d"]), Ok(()));
        assert_eq!(
            check_listing(["a/b", "a/b"]),
            Err(("a/b".into(), RepoPathError::Duplicate))
        );
        assert_eq!(
            check_listing(["a/b", "a/b/c"]),
            Err(("a/b".into(), RepoPathError::FileAndDirectory))
        );
        assert_eq!(
            check_listing(["ok", "../x"]),
            Err(("../x".into(), RepoPathError::ParentComponent))
        );
    }
}
