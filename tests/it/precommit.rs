//! The pre-commit hooks of `.pre-commit-hooks.yaml`, run by the real `pre-commit`
//! (pinned in `scripts/pyref-setup`) against a temporary git repository holding a
//! fixture project: the hook definitions with the binary under test (no reachable
//! Hub), and once the hooks as published, which build the `kernels-cli` wheel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels_test_support::{self as common, Server, snapshot};

/// A temp git repository with the text-generation-inference fixture project and its
/// real lock, staged.
fn fixture_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = common::repo_root().join("fixtures/projects/tgi-server-db931fcf");
    fs_err::copy(
        project.join("pyproject.toml"),
        dir.path().join("pyproject.toml"),
    )
    .unwrap();
    fs_err::copy(
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

/// A git repository holding only this repository's `.pre-commit-hooks.yaml`, with
/// `language: python` turned into `language: system`: the hooks' entries and file
/// patterns run with the binary under test on PATH, without building the wheel
/// (that is [`published_hooks_build_our_binary_over_the_python_runtime`]).
fn hook_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let hooks = fs_err::read_to_string(common::repo_root().join(".pre-commit-hooks.yaml")).unwrap();
    // A precondition on the hooks file this test rewrites, not on output.
    assert!(hooks.contains("language: python"), "{hooks}");
    fs_err::write(
        dir.path().join(".pre-commit-hooks.yaml"),
        hooks.replace("language: python", "language: system"),
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
    let cache = tempfile::tempdir().unwrap();
    try_repo_with_cache(dir, hook, cache.path())
}

/// [`try_repo`] with the Hub cache at `cache`.
fn try_repo_with_cache(dir: &Path, hook: &str, cache: &Path) -> Output {
    let hooks = hook_repo();
    let pre_commit = common::pyref_python("pre-commit-4.7.0").with_file_name("pre-commit");
    let home = dir.join(".home");
    let bin_dir = common::kernels_bin().parent().unwrap().to_owned();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let mut cmd = Command::new(pre_commit);
    for (key, value) in common::kernels("http://127.0.0.1:9", cache).get_envs() {
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
    snapshot!("lock_check_hook_fresh", text(&fresh), TRY_REPO);

    let manifest: PathBuf = repo.path().join("pyproject.toml");
    let edited = fs_err::read_to_string(&manifest).unwrap().replace(
        "\"kernels-community/rotary\" = \">=0.0.1\"",
        "\"kernels-community/rotary\" = \">=0.0.1\"\n\"kernels-community/activation\" = 1",
    );
    fs_err::write(&manifest, edited).unwrap();
    git(repo.path(), &["add", "pyproject.toml"]);
    let stale = try_repo(repo.path(), "kernels-lock-check");
    let out = text(&stale);
    assert!(!stale.status.success(), "{out}");
    // Failed, with the entry `kernels lock --check` found missing.
    snapshot!("lock_check_hook_stale", out, TRY_REPO);
}

/// The lock-check hook after a requirement changed from `1` to `2` where `v2`
/// descends from `v1`'s locked commit (issue 42): it fails asking for
/// `kernels lock`, which moves the entry, and then it goes green (the cache
/// knows the commit only after the download; before, it is not checkable
/// offline: exit 0). It never asks for a `kernels lock` that changes nothing.
#[test]
fn lock_check_hook_goes_green_after_kernels_lock() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let manifest = |n: u32| {
        format!(
            "[project]\nname = \"sample\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n\"kernels-test/versions\" = {n}\n"
        )
    };
    let kernels = |args: &[&str]| {
        let out = common::kernels(&server.endpoint, cache.path())
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    };
    fs_err::write(dir.path().join("pyproject.toml"), manifest(1)).unwrap();
    kernels(&["lock"]);
    kernels(&["download", "--all-variants"]);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "pyproject.toml", "kernels.lock"]);
    let green = try_repo_with_cache(dir.path(), "kernels-lock-check", cache.path());
    assert!(green.status.success(), "{}", text(&green));

    fs_err::write(dir.path().join("pyproject.toml"), manifest(2)).unwrap();
    git(dir.path(), &["add", "pyproject.toml", "kernels.lock"]);
    let stale = try_repo_with_cache(dir.path(), "kernels-lock-check", cache.path());
    assert!(!stale.status.success(), "{}", text(&stale));
    snapshot!("lock_check_hook_1_to_2", text(&stale), TRY_REPO);

    kernels(&["lock"]);
    git(dir.path(), &["add", "pyproject.toml", "kernels.lock"]);
    let relocked = try_repo_with_cache(dir.path(), "kernels-lock-check", cache.path());
    assert!(relocked.status.success(), "{}", text(&relocked));
    // A negative check on pre-commit's log: any wording, as long as it never asks for a relock.
    assert!(
        !text(&relocked).contains("run `kernels lock`"),
        "{}",
        text(&relocked)
    );
    kernels(&["download", "--all-variants"]);
    let green = try_repo_with_cache(dir.path(), "kernels-lock-check", cache.path());
    assert!(green.status.success(), "{}", text(&green));
    snapshot!("lock_check_hook_1_to_2_relocked", text(&green), TRY_REPO);
}

/// What `pre-commit try-repo` prints that varies: the hook repository (a
/// temporary folder next to the project, named relatively) and the commit it
/// made of it.
const TRY_REPO: &[(&str, &str)] = &[
    (r"\.\./\.tmp[A-Za-z0-9]+", "../[HOOKS]"),
    (r"rev: [0-9a-f]{40}", "rev: [REV]"),
];

/// A project locking the relu kernel of the bundled mirror (0.17 `KernelLocks`
/// format, checkable offline), staged in a fresh git repository.
fn sample_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"sample\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n",
    )
    .unwrap();
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let out = common::kernels(&server.endpoint, cache.path())
        .current_dir(dir.path())
        .args(["lock", "--target-runtime", "0.17.2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(dir.path().join("kernels.lock").is_file());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    dir
}

/// The home directories of cargo and rustup of the developer running the tests
/// (the hook build needs the toolchain and the warm registry; the test moves `HOME`).
fn tool_home(var: &str, dir: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(dir))
}

/// The hooks as published: `pre-commit try-repo` of a clean clone of this
/// repository at HEAD pip-installs it (maturin builds the `kernels-cli` wheel, in
/// release, reusing this repository's `target/` through `CARGO_TARGET_DIR`), in a
/// sample project, with the Python `kernels` 0.17.2 runtime's virtual environment
/// first on PATH (its `kernels lock` would exit 2 with `usage: kernel lock`).
/// The only test that builds the wheel: it takes minutes on a cold target.
#[test]
fn published_hooks_build_our_binary_over_the_python_runtime() {
    let repo = sample_repo();
    let clone = tempfile::tempdir().unwrap();
    let status = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(common::repo_root())
        .arg(clone.path().join("kernels"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git clone of the repository failed");
    let hooks = clone.path().join("kernels");

    let runtime = common::pyref_python("kernels-0.17.2")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();
    // The precondition the hook must beat: the runtime's `kernels` is first on
    // PATH, and no other `kernels` is on it.
    assert!(runtime.join("bin/kernels").is_file());
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        assert!(
            !dir.join("kernels").exists(),
            "a kernels command on PATH at {}",
            dir.display()
        );
    }
    let path = std::env::join_paths(std::iter::once(runtime.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let cargo_home = tool_home("CARGO_HOME", ".cargo");
    let rustup_home = tool_home("RUSTUP_HOME", ".rustup");
    let home = repo.path().join(".home");
    let pre_commit_home = home.join("pre-commit");
    let cache = tempfile::tempdir().unwrap();
    let pre_commit = common::pyref_python("pre-commit-4.7.0").with_file_name("pre-commit");
    let mut cmd = Command::new(pre_commit);
    for (key, value) in common::kernels("http://127.0.0.1:9", cache.path()).get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let started = std::time::Instant::now();
    let out = cmd
        .args(["try-repo"])
        .arg(&hooks)
        .args(["kernels-lock-check", "--all-files", "--verbose"])
        .current_dir(repo.path())
        .env("PATH", path)
        .env("VIRTUAL_ENV", &runtime)
        .env("HOME", &home)
        .env("PRE_COMMIT_HOME", &pre_commit_home)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .env("CARGO_TARGET_DIR", common::repo_root().join("target"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    let log = text(&out);
    eprintln!("pre-commit try-repo took {:?}", started.elapsed());
    assert!(out.status.success(), "{log}");
    // Substring checks on pre-commit's log, which names its own version,
    // cache folders and timings.
    assert!(log.contains("Passed"), "{log}");
    assert!(!log.contains("usage: kernel"), "{log}");

    // `try-repo` removes its store on exit, so the hook's output tells which
    // `kernels` ran: ours says the lock is up to date (nothing else on PATH is a
    // `kernels` at all: asserted above).
    assert!(log.contains("kernels.lock is up to date"), "{log}");
}
