//! The pre-commit hooks of `.pre-commit-hooks.yaml`, run by the real `pre-commit`
//! (pinned in `scripts/pyref-setup`) against a temporary git repository holding a
//! fixture project, with no reachable Hub.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels_test_support as common;

/// A temp git repository with the text-generation-inference fixture project and its
/// real lock, staged.
fn fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = common::repo_root().join("fixtures/projects/tgi-server-db931fcf");
    std::fs::copy(
        project.join("pyproject.toml"),
        dir.path().join("pyproject.toml"),
    )
    .unwrap();
    std::fs::copy(
        project.join("kernels.lock.real"),
        dir.path().join("kernels.lock"),
    )
    .unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?} failed");
}

/// A git repository holding only this repository's `.pre-commit-hooks.yaml`:
/// `pre-commit try-repo` clones its argument, and cloning the whole repository
/// (with the bundled mirror) takes over a minute; the hooks are the same.
fn hook_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::repo_root().join(".pre-commit-hooks.yaml"),
        dir.path().join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "hooks"]);
    dir
}

/// Runs `pre-commit try-repo <hooks of this repository> <hook>` in `dir` with the
/// `kernels` under test first on PATH, an unreachable Hub and an empty cache.
fn try_repo(dir: &Path, hook: &str) -> Output {
    let hooks = hook_repo();
    let pre_commit = common::pyref_python("pre-commit-4.7.0").with_file_name("pre-commit");
    let home = dir.join(".home");
    let bin_dir = common::kernels_bin().parent().unwrap().to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(pre_commit);
    for (key, value) in common::kernels("http://127.0.0.1:9", cache.path()).get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    cmd.arg("try-repo")
        .arg(hooks.path())
        .arg(hook)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", &home)
        .env("PRE_COMMIT_HOME", home.join("pre-commit"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    cmd.output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn lock_check_hook_passes_fresh_lock_and_fails_edited_manifest() {
    let repo = fixture_repo();
    let fresh = try_repo(repo.path(), "kernels-lock-check");
    assert!(fresh.status.success(), "{}", text(&fresh));
    assert!(text(&fresh).contains("Passed"), "{}", text(&fresh));

    let manifest: PathBuf = repo.path().join("pyproject.toml");
    let edited = std::fs::read_to_string(&manifest).unwrap().replace(
        "\"kernels-community/rotary\" = \">=0.0.1\"",
        "\"kernels-community/rotary\" = \">=0.0.1\"\n\"kernels-community/activation\" = 1",
    );
    std::fs::write(&manifest, edited).unwrap();
    git(repo.path(), &["add", "pyproject.toml"]);
    let stale = try_repo(repo.path(), "kernels-lock-check");
    let out = text(&stale);
    assert!(!stale.status.success(), "{out}");
    assert!(out.contains("Failed"), "{out}");
    assert!(
        out.contains(
            "kernels-community/activation: added: pyproject.toml asks for version 1 (branch `v1`), kernels.lock has no entry"
        ),
        "{out}"
    );
}
