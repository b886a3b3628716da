//! The one snapshot macro of the test suite, [`snapshot!`](crate::snapshot!), and
//! the filters it applies to every snapshot so that only what a user would see
//! change is recorded:
//!
//! | what | example | becomes |
//! |---|---|---|
//! | loopback ports of `kernels serve` | `127.0.0.1:41234`, `localhost:39999` | `127.0.0.1:[PORT]` |
//! | request ids of the server | `Root=1-0000002a` | `Root=1-XXXXXXXX` |
//! | temporary folders | `/tmp/.tmpAbC123/cache` | `[TMP]/cache` |
//! | the Python reference environments (`KERNELS_PYREF`) | `/work/kernels/.pyref/kernels-0.17.2` | `[PYREF]/kernels-0.17.2` |
//! | the repository checkout | `/work/kernels/kernels` | `[REPO]/kernels` |
//! | transfer rates | `1.2 MiB/s` | `[RATE]` |
//! | durations | `0.31s`, `in 12ms` | `[TIME]`, `in [TIME]` |
//! | log timestamps (`-v`) | `2026-01-02T03:04:05.678901Z` | `[TIMESTAMP]` |
//! | the host interpreter's version in `kernels env` | `Target Python   3.11 (python3)` | `Target Python   [PYTHON] (python3)` |
//!
//! Sizes are left alone: the mirrors are deterministic, so sizes are too. A test
//! whose output has another varying part passes its own extra filters.

use std::borrow::Cow;
use std::process::Output;

/// What a snapshot records of a value.
pub trait SnapshotText {
    /// The text to compare with the stored snapshot (before the filters).
    fn snapshot_text(&self) -> String;
}

/// A finished command: exit code, then stdout and stderr.
impl SnapshotText for Output {
    fn snapshot_text(&self) -> String {
        format!(
            "exit code: {}\n--- stdout\n{}--- stderr\n{}",
            self.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

impl SnapshotText for str {
    fn snapshot_text(&self) -> String {
        self.to_owned()
    }
}

impl SnapshotText for String {
    fn snapshot_text(&self) -> String {
        self.clone()
    }
}

impl SnapshotText for Cow<'_, str> {
    fn snapshot_text(&self) -> String {
        self.to_string()
    }
}

impl<T: SnapshotText + ?Sized> SnapshotText for &T {
    fn snapshot_text(&self) -> String {
        (**self).snapshot_text()
    }
}

/// `text` with every regex metacharacter escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The shared filters, as (regex, replacement) pairs, in the order they apply.
pub fn filters() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut tmp_roots = vec![std::env::temp_dir()];
    if let Ok(canonical) = std::env::temp_dir().canonicalize() {
        tmp_roots.push(canonical);
    }
    for root in tmp_roots {
        let root = root.to_string_lossy().trim_end_matches('/').to_owned();
        out.push((
            format!(r"{}/\.tmp[A-Za-z0-9]+", escape(&root)),
            "[TMP]".to_owned(),
        ));
    }
    // Before the checkout: the default `.pyref/` is inside it.
    let pyref = crate::pyref_root();
    let mut pyref_roots = vec![pyref.clone()];
    if let Ok(canonical) = pyref.canonicalize() {
        pyref_roots.push(canonical);
    }
    for root in pyref_roots {
        let root = root.to_string_lossy().trim_end_matches('/').to_owned();
        out.push((escape(&root), "[PYREF]".to_owned()));
    }
    out.push((
        escape(&crate::repo_root().to_string_lossy()),
        "[REPO]".to_owned(),
    ));
    out.push((
        r"\b(127\.0\.0\.1|localhost|\[::1\]):\d{4,5}\b".to_owned(),
        "$1:[PORT]".to_owned(),
    ));
    out.push((
        r"Root=1-[0-9A-Za-z]+".to_owned(),
        "Root=1-XXXXXXXX".to_owned(),
    ));
    out.push((
        r"\b\d+(\.\d+)? ?[KMGT]?i?B/s\b".to_owned(),
        "[RATE]".to_owned(),
    ));
    // The version the project's interpreter reports (not one given by a flag,
    // the declared table or `requires-python`, whose sources start `(from`,
    // `(lower`).
    out.push((
        r"(Target Python +)3\.\d+(, free-threaded)? (\([^fl])".to_owned(),
        "$1[PYTHON]$2 $3".to_owned(),
    ));
    out.push((
        r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z".to_owned(),
        "[TIMESTAMP]".to_owned(),
    ));
    out.push((
        r"\b(\d+m ?)?\d+(\.\d+)? ?(ns|µs|us|ms|s)\b".to_owned(),
        "[TIME]".to_owned(),
    ));
    out
}

/// insta settings with the shared [`filters`] and then `extra`, snapshots stored in
/// `snapshots/` beside the calling test file.
pub fn settings(extra: &[(&str, &str)]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (regex, replacement) in filters() {
        settings.add_filter(&regex, replacement);
    }
    for (regex, replacement) in extra {
        settings.add_filter(regex, *replacement);
    }
    settings.set_omit_expression(true);
    settings
}

/// Asserts that a value matches the named snapshot after the shared filters.
///
/// `snapshot!(name, value)` or `snapshot!(name, value, &[(regex, replacement)])`,
/// where `value` is a [`std::process::Output`] (exit code, stdout, stderr) or
/// text. Review changes with `cargo insta review`, or rerun with
/// `INSTA_UPDATE=always` and read the diff.
#[macro_export]
macro_rules! snapshot {
    ($name:expr, $value:expr $(,)?) => {
        $crate::snapshot!($name, $value, &[])
    };
    ($name:expr, $value:expr, $extra:expr $(,)?) => {{
        let text = $crate::snapshot::SnapshotText::snapshot_text(&$value);
        $crate::snapshot::settings($extra).bind(|| {
            $crate::insta::assert_snapshot!($name, text);
        });
    }};
}

/// `screen` with its per-kernel lines (`Downloaded owner/name …`) sorted in place:
/// kernels finish, and are reported, in any order.
pub fn sorted_kernel_lines(screen: &str) -> String {
    // `Downloaded owner/name …`, or at narrow widths `kernels-community/name@…: size`.
    let is_kernel = |l: &str| match l.strip_prefix("Downloaded ") {
        Some(rest) => rest.split(' ').next().is_some_and(|w| w.contains('/')),
        None => l.starts_with("kernels-community/"),
    };
    let mut kernels: Vec<&str> = screen.lines().filter(|l| is_kernel(l)).collect();
    kernels.sort_unstable();
    let mut kernels = kernels.into_iter();
    let mut out = String::new();
    for line in screen.lines() {
        let line = if is_kernel(line) {
            kernels.next().unwrap_or_default()
        } else {
            line
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_mask_what_varies_between_runs() {
        let tmp = std::env::temp_dir().join(".tmpAbC123").join("cache");
        let text = format!(
            "GET http://127.0.0.1:41234/api, 302 to http://localhost:39999/x\n\
             {}/hub\n\
             {}/kernels/README.md\n\
             {}/kernels-0.17.2/bin/python\n\
             Repository not found [request id Root=1-0000002a]\n\
             Downloaded 3 files (1.2 MiB) in 12ms, 0.31s, 4.5 MiB/s\n\
             2026-12-02T00:51:27.955977Z DEBUG verifying\n\
             http://127.0.0.1:9 and torch27-cxx11-cu126 stay\n",
            tmp.display(),
            crate::repo_root().display(),
            crate::pyref_root().display()
        );
        settings(&[]).bind(|| {
            insta::assert_snapshot!(text, @r"
            GET http://127.0.0.1:[PORT]/api, 302 to http://localhost:[PORT]/x
            [TMP]/cache/hub
            [REPO]/kernels/README.md
            [PYREF]/kernels-0.17.2/bin/python
            Repository not found [request id Root=1-XXXXXXXX]
            Downloaded 3 files (1.2 MiB) in [TIME], [TIME], [RATE]
            [TIMESTAMP] DEBUG verifying
            http://127.0.0.1:9 and torch27-cxx11-cu126 stay
            ");
        });
    }

    #[test]
    fn escape_quotes_metacharacters() {
        assert_eq!(escape("/tmp/a.b+c"), r"/tmp/a\.b\+c");
    }
}
