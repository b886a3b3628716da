//! The lock lifecycle's edges (issue 23, item 5): `--check` / `--locked` with
//! an upgrade, `-P` spelled in another case, `remove X X`, `-P` of one entry
//! while another entry's tag was deleted upstream, a commit without builds,
//! short-commit revisions, CRLF and inline tables in `add` / `remove`, Ctrl-C
//! during `add`, the labels of a `--frozen` download; and (item 1) what
//! `outdated` says the cooldown holds back.

use kernels_test_support::snapshot::sorted_kernel_lines;
use kernels_test_support::{Server, TestContext, snapshot, stderr};

use crate::sticky::{commit_of, copy_dir, edited_mirror, manifest};

const VERSIONS: &str = "kernels-test/versions";

#[test]
fn check_and_locked_refuse_an_upgrade() {
    let context = TestContext::new()
        .with_pyproject(&manifest(&format!("\"{VERSIONS}\" = \">=0.1.0,<0.2\"\n")));
    context.run_ok(&["lock"]);
    context.write(
        "pyproject.toml",
        &manifest(&format!("\"{VERSIONS}\" = \">=0.1.0\"\n")),
    );
    // The lock is sticky-fresh, but `-U` would move it: never "up to date".
    snapshot!("check_upgrade", context.run(&["lock", "--check", "-U"]));
    snapshot!(
        "locked_upgrade_package",
        context.run(&["lock", "--locked", "-P", VERSIONS])
    );
    snapshot!(
        "upgrade_dry_run",
        context.run_ok(&["lock", "-U", "--dry-run"])
    );
}

#[test]
fn upgrade_package_matches_without_case() {
    let context = TestContext::new()
        .with_pyproject(&manifest(&format!("\"{VERSIONS}\" = \">=0.1.0,<0.2\"\n")));
    context.run_ok(&["lock"]);
    context.write(
        "pyproject.toml",
        &manifest(&format!("\"{VERSIONS}\" = \">=0.1.0\"\n")),
    );
    snapshot!(
        "upgrade_package_other_case",
        context.run_ok(&["lock", "-P", "Kernels-Test/VERSIONS"])
    );
    let v020 = commit_of(context.endpoint(), VERSIONS, "v0.2.0");
    assert_eq!(crate::sticky::locked_commits(&context.lockfile()), [v020]);
}

#[test]
fn remove_named_twice_removes_it() {
    let context = TestContext::new().with_pyproject(&manifest(&format!(
        "\"{VERSIONS}\" = 1\n\"kernels-community/relu\" = 1\n"
    )));
    snapshot!(
        "remove_twice",
        context.run_ok(&["remove", VERSIONS, "Kernels-Test/Versions"])
    );
    assert_eq!(
        context.read("pyproject.toml"),
        manifest("\"kernels-community/relu\" = 1\n")
    );
}

#[test]
fn upgrade_package_keeps_an_entry_whose_tag_was_deleted() {
    let mut context = TestContext::new().with_pyproject(&manifest(&format!(
        "\"{VERSIONS}\" = \"==0.1.1\"\n\"kernels-community/relu\" = 1\n"
    )));
    context.run_ok(&["lock"]);
    let locked = context.lockfile();
    // kernels-test/versions without its tag v0.1.1, and kernels-community/relu.
    let deleted = edited_mirror(|t| t.replace("\"v0.1.1\" = \"dc142fd6\"\n", ""), &[]);
    let relu = "repos/kernels/kernels-community/relu";
    copy_dir(
        &kernels_test_support::mirror_dir().join(relu),
        &deleted.path().join(relu),
    );
    context.server = Server::start(deleted.path());
    // `-P relu` keeps versions as locked.
    snapshot!(
        "deleted_tag_kept_by_other_upgrade_package",
        context.run_ok(&["lock", "-P", "kernels-community/relu"])
    );
    let entry = commit_of_lock(&locked, VERSIONS);
    assert_eq!(commit_of_lock(&context.lockfile(), VERSIONS), entry);
    // Resolving that entry again fails: no tag satisfies `==0.1.1` any more.
    snapshot!(
        "deleted_tag_upgrade_package",
        context.run(&["lock", "-P", VERSIONS])
    );
}

/// The `sha` of `repo`'s entry in a variant-hash lock.
fn commit_of_lock(lock: &str, repo: &str) -> String {
    let doc: serde_json::Value = serde_json::from_str(lock).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .find(|e| e["repo_id"] == repo)
        .map(|e| e["sha"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{repo} is not in {lock}"))
}

/// A mirror whose `kernels-test/versions` branch `v1` points at a new commit
/// `nobuild` (parent: the old `v1`) that has no `build/` directory.
fn mirror_without_build() -> tempfile::TempDir {
    let mirror = edited_mirror(
        |t| {
            t.replace("\"f609e51b\"]", "\"f609e51b\", \"nobuild\"]")
                .replace("\"v1\" = \"v1\"", "\"v1\" = \"nobuild\"")
        },
        &[(
            "nobuild",
            "v1",
            "parent = \"v1\"\ntitle = \"Drop the builds\"\ndate = \"2026-02-01T10:00:00Z\"\n",
        )],
    );
    let build = mirror
        .path()
        .join("repos/kernels/kernels-test/versions/commits/nobuild/tree/build");
    fs_err::remove_dir_all(build).unwrap();
    mirror
}

#[test]
fn a_commit_without_builds_is_never_locked_silently() {
    let mirror = mirror_without_build();
    // The variant-hash format (kernels ≤0.16), which records the variants.
    let context = TestContext::with_server(Server::start(mirror.path())).with_pyproject(
        &format!(
            "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"{VERSIONS}\" = 1\n"
        ),
    );
    snapshot!("no_build_lock", context.run_ok(&["lock"]));
    snapshot!("no_build_check", context.run(&["lock", "--check"]));
    snapshot!(
        "no_build_download_all_variants",
        context.run(&["download", "--all-variants"])
    );
    snapshot!(
        "no_build_verify",
        context.run(&["verify", "--all-variants"])
    );
    // The 0.17 format records no variants; the warning is the same.
    let context = TestContext::with_server(Server::start(mirror.path()))
        .with_pyproject(&manifest(&format!("\"{VERSIONS}\" = 1\n")));
    snapshot!(
        "no_build_lock_kernel_locks",
        context.run_ok(&["lock", "--target-runtime", "0.17.2"])
    );
    snapshot!(
        "no_build_check_kernel_locks",
        context.run(&["lock", "--check", "--target-runtime", "0.17.2"])
    );
}

/// A project whose `kernels-test/versions` is pinned to `revision`, locked
/// for kernels 0.16.2 (a variant-hash lock): the tagged builds of
/// `kernels-test/versions` predate `metadata.json`, so 0.17+ (the first lock's
/// runtime when none is named) cannot lock them.
fn pinned(revision: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n\"{VERSIONS}\" = {{ revision = \"{revision}\" }}\n"
    )
}

#[test]
fn a_short_commit_revision_is_resolved_to_its_commit() {
    let context = TestContext::new();
    let full = commit_of(context.endpoint(), VERSIONS, "v0.1.1");
    context.write("pyproject.toml", &pinned(&full[..7]));
    snapshot!("short_revision_lock", context.run_ok(&["lock"]));
    let lock = context.lockfile();
    assert_eq!(commit_of_lock(&lock, VERSIONS), full);
    snapshot!("short_revision_check", context.run_ok(&["lock", "--check"]));
    // `-U` resolves it again, to the same commit.
    context.run_ok(&["lock", "-U"]);
    assert_eq!(context.lockfile(), lock);
    context.run_ok(&["download", "--all-variants"]);
    let snapshot = context
        .cache
        .join("kernels--kernels-test--versions/snapshots")
        .join(&full);
    assert!(snapshot.is_dir(), "{}", snapshot.display());
    // Upper case and more digits name the same commit.
    context.write("pyproject.toml", &pinned(&full[..12].to_ascii_uppercase()));
    context.run_ok(&["lock", "-U"]);
    assert_eq!(commit_of_lock(&context.lockfile(), VERSIONS), full);
}

#[test]
fn a_short_commit_that_names_nothing_is_refused_by_lock_and_check() {
    let context = TestContext::new();
    let full = commit_of(context.endpoint(), VERSIONS, "v0.1.1");
    context.write("pyproject.toml", &pinned(&full[..7]));
    context.run_ok(&["lock"]);
    // A pin the lock's commit does not start with: never up to date.
    context.write("pyproject.toml", &pinned("0000000"));
    snapshot!(
        "short_revision_unknown_check",
        context.run(&["lock", "--check"])
    );
    snapshot!(
        "short_revision_unknown_upgrade",
        context.run(&["lock", "-U"])
    );
}

const CRLF: &str = "[project]\r\nname = \"demo\"\r\n\r\n[tool.kernels]\r\ndependencies = { \"kernels-community/relu\" = 1 }\r\n";

#[test]
fn add_and_remove_keep_crlf_and_write_no_stray_spaces() {
    let context = TestContext::new().with_pyproject(CRLF);
    context.run_ok(&["add", VERSIONS, "1"]);
    assert_eq!(
        context.read("pyproject.toml"),
        CRLF.replace(" = 1 }", &format!(" = 1, \"{VERSIONS}\" = 1 }}"))
    );
    context.run_ok(&["remove", VERSIONS]);
    assert_eq!(context.read("pyproject.toml"), CRLF);
}

#[cfg(unix)]
#[test]
fn interrupted_add_restores_the_files() {
    for signal in ["INT", "TERM"] {
        let context = TestContext::with_test_control().with_pyproject(CRLF);
        context.run_ok(&["lock"]);
        let (pyproject, lock) = (context.read("pyproject.toml"), context.lockfile());
        // Every answer about the new kernel waits, so `add` is still locking.
        kernels_test_support::world::add_fault(
            context.endpoint(),
            serde_json::json!({"path": format!("/api/kernels/{VERSIONS}*"), "latency_ms": 20000}),
        );
        let child = context
            .kernels()
            .args(["add", VERSIONS, "1"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while context.read("pyproject.toml") == pyproject {
            assert!(std::time::Instant::now() < deadline, "add never edited");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Locking has started (the edit is written); give it a moment to ask.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let killed = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let out = child.wait_with_output().unwrap();
        let code = if signal == "INT" { 130 } else { 143 };
        assert_eq!(out.status.code(), Some(code), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Stays a substring check: what is printed before the signal lands varies.
        assert!(
            stderr.contains(
                "Interrupted: ./pyproject.toml and ./kernels.lock were left as they were"
            ),
            "{stderr}"
        );
        assert_eq!(context.read("pyproject.toml"), pyproject);
        assert_eq!(context.lockfile(), lock);
    }
}

#[test]
fn outdated_shows_what_the_cooldown_holds_back_and_until_when() {
    let mirror = crate::cooldown::fresh_mirror();
    let context = TestContext::with_server(Server::start(mirror.path())).with_pyproject(
        &crate::cooldown::project("exclude-newer = \"7 days\"\n", "1"),
    );
    context.run_ok(&["lock"]);
    let head = commit_of(context.endpoint(), VERSIONS, "v1");
    let out = context.run_ok(&["outdated", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let held = &doc["kernels"][0]["held_back"];
    assert_eq!(held["newest"]["id"], head.as_str(), "{doc}");
    assert_eq!(held["setting"], "exclude-newer = \"7 days\"");
    // The head was committed an hour ago: it leaves the cooldown in 7 days less an hour.
    let until: jiff::Timestamp = held["until"].as_str().unwrap().parse().unwrap();
    let expected = jiff::Timestamp::now() + jiff::SignedDuration::from_hours(7 * 24 - 1);
    assert!((until - expected).get_seconds().abs() < 120, "{until}");
    let out = context.run_ok(&["outdated"]);
    // The note names v1's head and the instant the JSON gives.
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&until.to_string(), "[UNTIL]");
    snapshot!("outdated_held_back_note", stderr);
    // Exempted, nothing is held back.
    context.write(
        "pyproject.toml",
        &context.read("pyproject.toml").replace(
            "\n[tool.kernels.dependencies]",
            &format!("exclude-newer-package = {{ \"{VERSIONS}\" = false }}\n\n[tool.kernels.dependencies]"),
        ),
    );
    let out = context.run_ok(&["outdated", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["kernels"][0]["held_back"].is_null(), "{doc}");
}

/// `text` with its `Cached owner/name …` lines sorted in place: kernels are
/// reported as they finish.
fn sorted_cached_lines(text: &str) -> String {
    // Recognising a kernel's line (its second word names `owner/name`), not
    // asserting output.
    let is_cached = |l: &&str| {
        l.strip_prefix("Cached ")
            .and_then(|rest| rest.split(' ').next())
            .is_some_and(|repo| repo.contains('/'))
    };
    let mut cached: Vec<&str> = text.lines().filter(is_cached).collect();
    cached.sort_unstable();
    let mut cached = cached.into_iter();
    text.lines()
        .map(|l| {
            if is_cached(&l) {
                cached.next().unwrap_or_default()
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `download --frozen` (and `KERNELS_FROZEN=1`) use the lock as it is, so a
/// locked commit goes by the refs at that commit (the Hub's, or the cache's
/// offline), never by a requirement edited in `pyproject.toml` since.
#[test]
fn a_frozen_download_labels_each_commit_by_its_own_version() {
    let context = TestContext::new().with_pyproject(&manifest(&format!(
        "\"{VERSIONS}\" = 1\n\"kernels-community/relu\" = 1\n"
    )));
    context.run_ok(&["lock"]);
    context.write(
        "pyproject.toml",
        &manifest(&format!(
            "\"{VERSIONS}\" = 10\n\"kernels-community/relu\" = {{ revision = \"v9\" }}\n"
        )),
    );
    let frozen_env = |args: &[&str]| {
        let out = context
            .kernels()
            .env("KERNELS_FROZEN", "1")
            .args(args)
            .output()
            .expect("run kernels");
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let runs = [
        context.run_ok(&["download", "--frozen", "--all-variants"]),
        frozen_env(&["download", "--all-variants"]),
        context.run_ok(&["download", "--frozen", "--offline", "--all-variants"]),
    ];
    // Each names both kernels `v1`, never `v10` or `v9`; kernels are
    // reported as they finish.
    for (name, out) in ["frozen_flag", "frozen_env", "frozen_offline"]
        .iter()
        .zip(runs)
    {
        snapshot!(
            *name,
            sorted_kernel_lines(&sorted_cached_lines(&stderr(&out)))
        );
    }
}
