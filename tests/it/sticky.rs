//! Sticky `kernels lock`: entries are kept while their requirement is unchanged
//! and still satisfied; `--upgrade` / `--upgrade-package` move them; the change
//! lines on stderr (snapshots); `--check` / `--locked` fail only when the manifest
//! changed. Upstream changes are made by moving branches at runtime
//! (`--test-control`) or by serving a modified copy of a mirror repository.

use std::path::{Path, PathBuf};

use kernels_test_support::{self as common, Server, TestContext, snapshot};

const VERSIONS_V1: &str = "kernels-test/versions";

pub(crate) fn manifest(deps: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n{deps}"
    )
}

/// A context over `server` whose project depends on `deps`.
fn context(server: Server, deps: &str) -> TestContext {
    TestContext::with_server(server).with_pyproject(&manifest(deps))
}

/// [`manifest`] locked for kernels 0.16.2: a variant-hash lock, which records
/// only each commit, so a moved branch is followed by the commit's history
/// (a `KernelLocks` lock, the first lock's format when no runtime is named,
/// records the version instead).
fn variant_hash_manifest(deps: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\n\n[tool.kernels.dependencies]\n{deps}"
    )
}

/// A context over `server` whose project depends on `deps`, locked in the
/// variant-hash format ([`variant_hash_manifest`]).
fn variant_hash_context(server: Server, deps: &str) -> TestContext {
    TestContext::with_server(server).with_pyproject(&variant_hash_manifest(deps))
}

fn set_variant_hash_deps(context: &TestContext, deps: &str) {
    context.write("pyproject.toml", &variant_hash_manifest(deps));
}

fn set_deps(context: &TestContext, deps: &str) {
    context.write("pyproject.toml", &manifest(deps));
}

/// The commits a lock pins, in the order the lock names them, each once: the
/// 40-hex-digit words of its text (variant hashes are 64 digits long), for
/// every lock format.
pub(crate) fn locked_commits(lock: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in lock.split(|c: char| !c.is_ascii_alphanumeric()) {
        if word.len() == 40
            && word.chars().all(|c| c.is_ascii_hexdigit())
            && !out.iter().any(|seen| seen == word)
        {
            out.push(word.to_owned());
        }
    }
    out
}

/// The commit the server's `refs` give for a ref of a repo.
pub(crate) fn commit_of(endpoint: &str, repo: &str, name: &str) -> String {
    let refs: serde_json::Value = serde_json::from_str(&http(
        "GET",
        endpoint,
        &format!("/api/kernels/{repo}/refs"),
        "",
    ))
    .unwrap();
    for kind in ["branches", "tags"] {
        if let Some(r) = refs[kind]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
        {
            return r["targetCommit"].as_str().unwrap().to_owned();
        }
    }
    panic!("{repo} has no ref {name}")
}

fn http(method: &str, endpoint: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 2"), "{head}");
    body.to_owned()
}

fn move_branch(endpoint: &str, repo: &str, branch: &str, to: &str) {
    http(
        "POST",
        endpoint,
        "/__fixture/refs",
        &format!(r#"{{"repo": "{repo}", "ref": "{branch}", "to_commit": "{to}"}}"#),
    );
}

/// A mirror with only `kernels-test/versions` (and the organizations), its
/// `repo.toml` edited by `edit`; extra commit directories are copied from
/// existing ones with `(new label, from label, commit.toml text)`.
pub(crate) fn edited_mirror(
    edit: impl Fn(String) -> String,
    extra: &[(&str, &str, &str)],
) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let src = common::mirror_dir();
    copy_dir(&src.join("orgs"), &root.path().join("orgs"));
    let repo_rel = PathBuf::from("repos/kernels/kernels-test/versions");
    let repo = root.path().join(&repo_rel);
    copy_dir(&src.join(&repo_rel), &repo);
    for (label, from, commit_toml) in extra {
        copy_dir(
            &repo.join("commits").join(from),
            &repo.join("commits").join(label),
        );
        fs_err::write(
            repo.join("commits").join(label).join("commit.toml"),
            commit_toml,
        )
        .unwrap();
    }
    let toml_path = repo.join("repo.toml");
    let text = fs_err::read_to_string(&toml_path).unwrap();
    fs_err::write(&toml_path, edit(text)).unwrap();
    root
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            fs_err::create_dir_all(&target).unwrap();
        } else {
            fs_err::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn tag_requirement_keeps_its_version_until_upgraded() {
    let context = context(
        Server::bundled(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"),
    );
    context.run_ok(&["lock"]);
    let first = context.lockfile();
    let v011 = commit_of(context.endpoint(), VERSIONS_V1, "v0.1.1");
    assert_eq!(locked_commits(&first), [v011], "{first}");

    // Relaxing the specifier keeps v0.1.1, which still satisfies it.
    set_deps(&context, &format!("\"{VERSIONS_V1}\" = \">=0.1.0\"\n"));
    snapshot!("tag_relaxed_keeps_the_lock", context.run_ok(&["lock"]));
    assert_eq!(context.lockfile(), first);
    context.run_ok(&["lock", "--check"]);
    context.run_ok(&["lock", "--locked"]);

    // --dry-run prints the upgrade and writes nothing.
    snapshot!(
        "tag_upgrade_dry_run",
        context.run_ok(&["lock", "-U", "--dry-run"])
    );
    assert_eq!(context.lockfile(), first);

    // -P upgrades that repo, with the JSON carrying the change.
    let json = context.run_ok(&["lock", "-P", VERSIONS_V1, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["changes"][0]["change"], "updated", "{doc}");
    assert_eq!(doc["changes"][0]["from_version"], "v0.1.1");
    assert_eq!(doc["changes"][0]["to_version"], "v0.2.0");
    let v020 = commit_of(context.endpoint(), VERSIONS_V1, "v0.2.0");
    assert_eq!(locked_commits(&context.lockfile()), [v020]);

    // An unknown -P is an error listing the dependencies; nothing written.
    let before = context.lockfile();
    snapshot!(
        "unknown_upgrade_package",
        context.run(&["lock", "-P", "kernels-community/nope"])
    );
    assert_eq!(context.lockfile(), before);
}

#[test]
fn added_and_removed_entries_are_reported() {
    let context = context(
        Server::bundled(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"),
    );
    context.run_ok(&["lock"]);
    set_deps(
        &context,
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0\"\n\"kernels-community/relu\" = 1\n"),
    );
    // --locked fails naming the entry, without a raw diff on stdout.
    snapshot!("added_locked", context.run(&["lock", "--locked"]));
    snapshot!("added", context.run_ok(&["lock"]));
    set_deps(&context, "\"kernels-community/relu\" = 1\n");
    snapshot!("removed", context.run_ok(&["lock"]));
}

/// A requirement changed from `1` to `2` where `v2` descends from `v1`'s
/// locked commit (issue 42): the commit is `v1`'s, so every gate says the
/// lock is stale and names `kernels lock`, which moves the entry to `v2`'s
/// head and names the old commit by `v1`, the ref still pointing at it; then
/// every gate passes.
#[test]
fn a_requirement_changed_from_1_to_2_moves_to_v2s_head() {
    let context = context(Server::bundled(), &format!("\"{VERSIONS_V1}\" = 1\n"));
    context.run_ok(&["lock"]);
    // The cache knows the locked commit as `v1`.
    context.run_ok(&["download", "--all-variants"]);
    let v1 = commit_of(context.endpoint(), VERSIONS_V1, "v1");
    let v2 = commit_of(context.endpoint(), VERSIONS_V1, "v2");
    assert_eq!(
        locked_commits(&context.lockfile()),
        std::slice::from_ref(&v1)
    );
    set_deps(&context, &format!("\"{VERSIONS_V1}\" = 2\n"));
    snapshot!(
        "integer_1_to_2_check_offline",
        context.run(&["lock", "--check", "--offline"])
    );
    snapshot!(
        "integer_1_to_2_verify",
        context.run(&["verify", "--all-variants"])
    );
    snapshot!(
        "integer_1_to_2_download_offline",
        context.run(&["download", "--all-variants", "--offline"])
    );
    snapshot!("integer_1_to_2_check", context.run(&["lock", "--check"]));
    snapshot!("integer_1_to_2", context.run_ok(&["lock"]));
    assert_eq!(
        locked_commits(&context.lockfile()),
        std::slice::from_ref(&v2)
    );
    let relocked = context.lockfile();
    context.run_ok(&["lock", "--check"]);
    // Not downloaded yet: the cache does not know `v2`'s commit, so offline
    // the entry cannot be decided (exit 0, a note), never "run `kernels lock`".
    let offline = context.run_ok(&["lock", "--check", "--offline"]);
    assert!(
        // A negative check: any wording, as long as it never asks for a relock.
        !String::from_utf8_lossy(&offline.stderr).contains("run `kernels lock`"),
        "{offline:?}"
    );
    snapshot!(
        "integer_1_to_2_download",
        context.run_ok(&["download", "--all-variants"])
    );
    assert_eq!(context.lockfile(), relocked);
    snapshot!(
        "integer_1_to_2_check_offline_after",
        context.run_ok(&["lock", "--check", "--offline"])
    );
    context.run_ok(&["verify", "--all-variants"]);
    context.run_ok(&["download", "--all-variants", "--offline"]);
}

/// `1 -> 2` while `v2` points at `v1`'s locked commit itself: `kernels lock`
/// keeps it (it is `v2`'s head), and records `refs/v2` in the cache, which
/// knew the commit only as `v1`, so the offline check that asked for
/// `kernels lock` passes afterwards instead of asking again.
#[test]
fn a_requirement_moved_to_a_branch_at_the_locked_commit_converges_offline() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let context = variant_hash_context(server, &format!("\"{VERSIONS_V1}\" = 1\n"));
    context.run_ok(&["lock"]);
    context.run_ok(&["download", "--all-variants"]);
    let v1 = commit_of(context.endpoint(), VERSIONS_V1, "v1");
    move_branch(context.endpoint(), VERSIONS_V1, "v2", &v1);
    let locked = context.lockfile();
    set_variant_hash_deps(&context, &format!("\"{VERSIONS_V1}\" = 2\n"));
    let stale = context.run(&["lock", "--check", "--offline"]);
    assert_eq!(stale.status.code(), Some(1), "{stale:?}");
    context.run_ok(&["lock", "--check"]);
    snapshot!("branch_at_locked_commit", context.run_ok(&["lock"]));
    assert_eq!(context.lockfile(), locked);
    snapshot!(
        "branch_at_locked_commit_check_offline",
        context.run_ok(&["lock", "--check", "--offline"])
    );
    context.run_ok(&["verify", "--all-variants"]);
}

/// A commit of `v10` that `v2` descends from (and `v1` does not have) is
/// one of `v2`'s: `10 -> 2` keeps it under a plain `kernels lock`, offline
/// says it cannot decide, and `kernels add REPO 2` relocks the entry as
/// `kernels lock --breaking` / `-P` do.
#[test]
fn add_of_a_changed_requirement_relocks_that_entry() {
    let context = variant_hash_context(Server::bundled(), &format!("\"{VERSIONS_V1}\" = 10\n"));
    context.run_ok(&["lock"]);
    context.run_ok(&["download", "--all-variants"]);
    let v10 = commit_of(context.endpoint(), VERSIONS_V1, "v10");
    let v2 = commit_of(context.endpoint(), VERSIONS_V1, "v2");
    assert_eq!(
        locked_commits(&context.lockfile()),
        std::slice::from_ref(&v10)
    );
    let before = context.lockfile();
    set_variant_hash_deps(&context, &format!("\"{VERSIONS_V1}\" = 2\n"));
    context.run_ok(&["lock", "--check"]);
    snapshot!(
        "integer_10_to_2_check_offline",
        context.run_ok(&["lock", "--check", "--offline", "-v"])
    );
    assert_eq!(context.lockfile(), before);
    set_variant_hash_deps(&context, &format!("\"{VERSIONS_V1}\" = 10\n"));
    snapshot!(
        "add_changed_requirement",
        context.run_ok(&["add", VERSIONS_V1, "2"])
    );
    assert_eq!(
        locked_commits(&context.lockfile()),
        std::slice::from_ref(&v2)
    );
    // The same requirement again changes nothing.
    context.run_ok(&["add", VERSIONS_V1, "2"]);
    assert_eq!(
        locked_commits(&context.lockfile()),
        std::slice::from_ref(&v2)
    );
}

#[test]
fn moved_branches_keep_the_lock_until_history_drops_the_commit() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let context = variant_hash_context(server, &format!("\"{VERSIONS_V1}\" = 1\n"));
    let endpoint = context.endpoint();
    context.run_ok(&["lock"]);
    let first = context.lockfile();
    // v1 moves forward (to a descendant): the lock stays, checks pass.
    let newer = commit_of(endpoint, VERSIONS_V1, "v10");
    move_branch(endpoint, VERSIONS_V1, "v1", &newer);
    context.run_ok(&["lock", "--check"]);
    snapshot!("branch_moved_forward", context.run_ok(&["lock"]));
    assert_eq!(context.lockfile(), first);
    snapshot!(
        "branch_moved_forward_upgrade",
        context.run_ok(&["lock", "-U"])
    );

    // Force-moved back to a commit whose history lacks the locked one: resolved again.
    let older = commit_of(endpoint, VERSIONS_V1, "v0.1.1");
    move_branch(endpoint, VERSIONS_V1, "v1", &older);
    snapshot!("branch_moved_back_check", context.run(&["lock", "--check"]));
    snapshot!("branch_moved_back", context.run_ok(&["lock"]));
}

#[test]
fn branch_force_moved_to_unrelated_history() {
    let mut context = variant_hash_context(Server::bundled(), &format!("\"{VERSIONS_V1}\" = 1\n"));
    context.run_ok(&["lock"]);
    let v1 = commit_of(context.endpoint(), VERSIONS_V1, "v1");
    // A root commit (no parent) with v1's files; branch v1 points at it.
    let mirror = edited_mirror(
        |text| {
            text.replace(
                "\"v10\", \"f609e51b\"]",
                "\"v10\", \"f609e51b\", \"orphan\"]",
            )
            .replace("\"v1\" = \"v1\"", "\"v1\" = \"orphan\"")
        },
        &[("orphan", "v1", "title = \"Rewritten\"\nparent = \"\"\n")],
    );
    context.server = Server::start(mirror.path());
    let history: serde_json::Value = serde_json::from_str(&http(
        "GET",
        context.endpoint(),
        &format!("/api/kernels/{VERSIONS_V1}/commits/v1"),
        "",
    ))
    .unwrap();
    assert_eq!(history.as_array().unwrap().len(), 1, "{history}");
    let orphan = commit_of(context.endpoint(), VERSIONS_V1, "v1");
    assert_ne!(orphan, v1);
    snapshot!("branch_unrelated_check", context.run(&["lock", "--check"]));
    snapshot!("branch_unrelated", context.run_ok(&["lock"]));
}

#[test]
fn deleted_and_moved_tags_are_resolved_again() {
    let mut context = context(
        Server::bundled(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"),
    );
    context.run_ok(&["lock"]);
    let locked = context.lockfile();

    // Deleted: the newest remaining match, v0.1.0.
    let deleted = edited_mirror(|t| t.replace("\"v0.1.1\" = \"dc142fd6\"\n", ""), &[]);
    context.server = Server::start(deleted.path());
    snapshot!("tag_deleted_check", context.run(&["lock", "--check"]));
    snapshot!("tag_deleted", context.run_ok(&["lock"]));

    // Moved to another commit: resolved to the tag's new commit.
    context.write("kernels.lock", &locked);
    let moved = edited_mirror(
        |t| t.replace("\"v0.1.1\" = \"dc142fd6\"", "\"v0.1.1\" = \"v0.1.2rc1\""),
        &[],
    );
    context.server = Server::start(moved.path());
    snapshot!("tag_moved", context.run_ok(&["lock"]));
}

#[test]
fn kernel_locks_keep_commits_of_unchanged_requirements() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let context = context(
        server,
        &format!("\"{VERSIONS_V1}\" = 1\n\"kernels-test/kernel-deps\" = 1\n"),
    );
    let endpoint = context.endpoint();
    context.run_ok(&["lock", "--target-runtime", "0.17.2"]);
    let first = context.lockfile();
    let v10 = commit_of(endpoint, VERSIONS_V1, "v10");
    move_branch(endpoint, VERSIONS_V1, "v1", &v10);
    context.run_ok(&["lock", "--check"]);
    context.run_ok(&["lock", "--locked"]);
    snapshot!("kernel_locks_branch_moved", context.run_ok(&["lock"]));
    assert_eq!(context.lockfile(), first);
    snapshot!(
        "kernel_locks_upgrade_package",
        context.run_ok(&["lock", "-P", VERSIONS_V1])
    );
}

#[test]
fn download_relocks_a_hand_edited_manifest_and_says_so() {
    let context = context(
        Server::bundled(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"),
    );
    context.run_ok(&["lock"]);
    let first = context.lockfile();
    set_deps(
        &context,
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n\"kernels-community/relu\" = 1\n"),
    );
    // --locked fails naming the entry; offline fails naming it and `kernels lock`.
    snapshot!(
        "download_locked_stale",
        context.run(&["download", "--locked", "--all-variants"])
    );
    snapshot!(
        "download_offline_stale",
        context.run(&["download", "--all-variants", "--offline"])
    );
    snapshot!("verify_stale", context.run(&["verify", "--all-variants"]));
    assert_eq!(context.lockfile(), first);
    // --frozen uses the lock as it is.
    context.run_ok(&["download", "--frozen", "--all-variants"]);
    assert_eq!(context.lockfile(), first);
    // No flags: re-lock only that entry, say so, download it.
    snapshot!(
        "download_relocks",
        context.run_ok(&["download", "--all-variants"])
    );
    // The versions entry is kept; relu's `v1` is added.
    let mut expected = locked_commits(&first);
    expected.push(commit_of(
        context.endpoint(),
        "kernels-community/relu",
        "v1",
    ));
    let mut locked = locked_commits(&context.lockfile());
    locked.sort();
    expected.sort();
    assert_eq!(locked, expected);
    context.run_ok(&["verify", "--all-variants"]);
}
