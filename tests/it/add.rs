//! `kernels add` / `kernels remove`: `pyproject.toml` edited in place (comments
//! and formatting kept), then a sticky lock; on any failure both files are left
//! byte-identical. Also project discovery from a subdirectory and `--project`.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, Server};

const PYPROJECT: &str = "[project]\nname = \"demo\"   # keep me\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n# the relu kernel\n'kernels-community/relu' = 1    # pinned\n\n[tool.other]\nx = 1\n";

fn run_in(endpoint: &str, cwd: &Path, cache: &Path, args: &[&str]) -> Output {
    common::kernels(endpoint, cache)
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

/// stderr with miette's line wrapping undone.
fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .replace('│', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn files(dir: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        fs_err::read(dir.join("pyproject.toml")).unwrap(),
        fs_err::read(dir.join("kernels.lock")).ok(),
    )
}

fn locked_project(server: &Server) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("pyproject.toml"), PYPROJECT).unwrap();
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &dir.path().join(".cache"),
        &["lock", "--target-runtime", "0.17.2"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    dir
}

#[test]
fn add_picks_the_highest_branch_and_keeps_the_formatting() {
    let server = Server::bundled();
    let dir = locked_project(&server);
    let cache = dir.path().join(".cache");
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &cache,
        &["add", "kernels-test/versions"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = fs_err::read_to_string(dir.path().join("pyproject.toml")).unwrap();
    assert_eq!(
        text,
        PYPROJECT.replace("# pinned\n", "# pinned\n\"kernels-test/versions\" = 10\n")
    );
    let err = stderr(&out);
    assert!(err.contains("Added kernels-test/versions v10"), "{err}");
    // Sticky: relu was not resolved again, so no line about it.
    assert!(!err.contains("kernels-community/relu"), "{err}");
    let lock = fs_err::read_to_string(dir.path().join("kernels.lock")).unwrap();
    assert!(lock.contains("\"version\": 10"), "{lock}");

    // remove, from a subdirectory: the project is found upwards.
    let sub = dir.path().join("src").join("pkg");
    fs_err::create_dir_all(&sub).unwrap();
    let out = run_in(
        &server.endpoint,
        &sub,
        &cache,
        &["remove", "kernels-test/versions"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs_err::read_to_string(dir.path().join("pyproject.toml")).unwrap(),
        PYPROJECT
    );
    let lock = fs_err::read_to_string(dir.path().join("kernels.lock")).unwrap();
    assert!(!lock.contains("kernels-test/versions"), "{lock}");
}

#[test]
fn add_creates_the_table_and_uses_specifiers_for_old_runtimes() {
    let server = Server::bundled();
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"demo\"\n",
    )
    .unwrap();
    let out = run_in(
        &server.endpoint,
        Path::new("/"),
        &dir.path().join(".cache"),
        &[
            "--project",
            dir.path().to_str().unwrap(),
            "add",
            "kernels-test/versions",
            "--target-runtime",
            "0.10.5",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs_err::read_to_string(dir.path().join("pyproject.toml")).unwrap(),
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.2.0\"\n"
    );
    assert!(dir.path().join("kernels.lock").is_file());
}

#[test]
fn failed_lock_leaves_both_files_untouched() {
    let server = Server::bundled();
    let dir = locked_project(&server);
    let cache = dir.path().join(".cache");
    let before = files(dir.path());
    // Untrusted publisher: the 0.17 lock fails after the manifest was edited.
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &cache,
        &["add", "untrusted-publisher/identity"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("were left as they were"),
        "{}",
        stderr(&out)
    );
    assert_eq!(files(dir.path()), before);
    // A repository that does not exist.
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &cache,
        &["add", "kernels-test/nope", "1"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(files(dir.path()), before);
}

#[test]
fn bad_input_is_an_error_naming_the_entry() {
    let server = Server::bundled();
    let dir = locked_project(&server);
    let cache = dir.path().join(".cache");
    let before = files(dir.path());
    let cases: &[(&[&str], &str)] = &[
        (
            &["add", "kernels-test/versions", "banana"],
            "`banana` is not a requirement",
        ),
        (
            &["add", "kernels-test/versions", "v2"],
            "kernels::edit::bad_requirement",
        ),
        (
            &["add", "kernels-test/versions", ">=0.1"],
            "reads integer versions only",
        ),
        (&["add", "Kernels-Community/Relu", "1"], "another spelling"),
        (
            &["remove", "kernels-test/versions"],
            "`kernels-test/versions` is not a dependency",
        ),
    ];
    for (args, expected) in cases {
        let out = run_in(&server.endpoint, dir.path(), &cache, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(files(dir.path()), before, "{args:?}");
    }
    // Two spellings of one repo in the manifest: every command names both.
    let twice = PYPROJECT.replace("# pinned\n", "# pinned\n\"Kernels-Community/RELU\" = 1\n");
    fs_err::write(dir.path().join("pyproject.toml"), &twice).unwrap();
    let before = files(dir.path());
    for args in [&["lock"][..], &["add", "kernels-test/versions", "1"]] {
        let out = run_in(&server.endpoint, dir.path(), &cache, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("two spellings of the same Hub repository"),
            "{err}"
        );
        assert!(err.contains("Kernels-Community/RELU"), "{err}");
        assert_eq!(files(dir.path()), before, "{args:?}");
    }
    // The fix the message names works.
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &cache,
        &["remove", "Kernels-Community/RELU"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs_err::read_to_string(dir.path().join("pyproject.toml")).unwrap(),
        PYPROJECT
    );
}

#[test]
fn project_flag_and_positional_must_agree() {
    let server = Server::bundled();
    let dir = locked_project(&server);
    let other = tempfile::tempdir().unwrap();
    let out = run_in(
        &server.endpoint,
        dir.path(),
        &dir.path().join(".cache"),
        &[
            "lock",
            "--check",
            "--project",
            other.path().to_str().unwrap(),
            ".",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("two project directories given"),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        &server.endpoint,
        other.path(),
        &dir.path().join(".cache"),
        &["lock", "--check", "--project", dir.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}
