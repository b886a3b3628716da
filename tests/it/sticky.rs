//! Sticky `kernels lock`: entries are kept while their requirement is unchanged
//! and still satisfied; `--upgrade` / `--upgrade-package` move them; the change
//! lines on stderr; `--check` / `--locked` fail only when the manifest changed.
//! Upstream changes are made by moving branches at runtime (`--test-control`) or by
//! serving a modified copy of a mirror repository.

use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_test_support::{self as common, Server};

const VERSIONS_V1: &str = "kernels-test/versions";

fn project(pyproject: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    dir
}

fn manifest(deps: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n{deps}"
    )
}

fn set_deps(dir: &Path, deps: &str) {
    fs_err::write(dir.join("pyproject.toml"), manifest(deps)).unwrap();
}

fn run(endpoint: &str, dir: &Path, args: &[&str]) -> Output {
    let cache = dir.join(".cache");
    common::kernels(endpoint, &cache)
        .args(args)
        .arg(dir)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed ({:?}):\n{}",
        output.status,
        stderr(output)
    );
    stderr(output)
}

fn read(dir: &Path) -> String {
    fs_err::read_to_string(dir.join("kernels.lock")).unwrap()
}

/// The commit the server's `refs` give for a ref of a repo.
fn commit_of(endpoint: &str, repo: &str, name: &str) -> String {
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
fn edited_mirror(
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

fn copy_dir(from: &Path, to: &Path) {
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
    let server = Server::bundled();
    let dir = project(&manifest(&format!(
        "\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"
    )));
    ok(&run(&server.endpoint, dir.path(), &["lock"]));
    let first = read(dir.path());
    let v011 = commit_of(&server.endpoint, VERSIONS_V1, "v0.1.1");
    assert!(first.contains(&v011), "{first}");

    // Relaxing the specifier keeps v0.1.1, which still satisfies it.
    set_deps(dir.path(), &format!("\"{VERSIONS_V1}\" = \">=0.1.0\"\n"));
    let again = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert_eq!(read(dir.path()), first);
    assert!(again.contains("Resolved 1 kernel in "), "{again}");
    assert!(!again.contains("Updated"), "{again}");
    ok(&run(&server.endpoint, dir.path(), &["lock", "--check"]));
    ok(&run(&server.endpoint, dir.path(), &["lock", "--locked"]));

    // --dry-run prints the upgrade and writes nothing.
    let dry = ok(&run(
        &server.endpoint,
        dir.path(),
        &["lock", "-U", "--dry-run"],
    ));
    let v020 = commit_of(&server.endpoint, VERSIONS_V1, "v0.2.0");
    let line = format!(
        "Updated {VERSIONS_V1} v0.1.1 -> v0.2.0 ({} -> {})",
        &v011[..7],
        &v020[..7]
    );
    assert!(dry.contains(&line), "{dry}");
    assert_eq!(read(dir.path()), first);

    // -P upgrades that repo, with the JSON carrying the change.
    let json = run(
        &server.endpoint,
        dir.path(),
        &["lock", "-P", VERSIONS_V1, "--format", "json"],
    );
    ok(&json);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["changes"][0]["change"], "updated", "{doc}");
    assert_eq!(doc["changes"][0]["from_version"], "v0.1.1");
    assert_eq!(doc["changes"][0]["to_version"], "v0.2.0");
    assert!(read(dir.path()).contains(&v020));

    // An unknown -P is an error listing the dependencies; nothing written.
    let before = read(dir.path());
    let bad = run(
        &server.endpoint,
        dir.path(),
        &["lock", "-P", "kernels-community/nope"],
    );
    assert_eq!(bad.status.code(), Some(1));
    let text = stderr(&bad)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("kernels-community/nope"), "{text}");
    assert!(text.contains(VERSIONS_V1), "{text}");
    assert_eq!(read(dir.path()), before);
}

#[test]
fn added_and_removed_entries_are_reported() {
    let server = Server::bundled();
    let dir = project(&manifest(&format!(
        "\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"
    )));
    ok(&run(&server.endpoint, dir.path(), &["lock"]));
    set_deps(
        dir.path(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0\"\n\"kernels-community/relu\" = 1\n"),
    );
    // --locked fails naming the entry, without a raw diff on stdout.
    let locked = run(&server.endpoint, dir.path(), &["lock", "--locked"]);
    assert_eq!(locked.status.code(), Some(1));
    assert!(locked.stdout.is_empty());
    assert!(
        stderr(&locked).contains("Added kernels-community/relu v1"),
        "{}",
        stderr(&locked)
    );
    let added = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(
        added.contains("Added kernels-community/relu v1 ("),
        "{added}"
    );
    assert!(!added.contains(VERSIONS_V1), "{added}");
    set_deps(dir.path(), "\"kernels-community/relu\" = 1\n");
    let removed = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(
        removed.contains(&format!("Removed {VERSIONS_V1}")),
        "{removed}"
    );
}

#[test]
fn integer_requirement_changed_from_1_to_2_where_v2_descends_from_v1() {
    let server = Server::bundled();
    let dir = project(&manifest(&format!("\"{VERSIONS_V1}\" = 1\n")));
    ok(&run(&server.endpoint, dir.path(), &["lock"]));
    let v1 = commit_of(&server.endpoint, VERSIONS_V1, "v1");
    let v2 = commit_of(&server.endpoint, VERSIONS_V1, "v2");
    assert!(read(dir.path()).contains(&v1));
    set_deps(dir.path(), &format!("\"{VERSIONS_V1}\" = 2\n"));
    let check = run(&server.endpoint, dir.path(), &["lock", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    let line = format!(
        "Updated {VERSIONS_V1} v1 -> v2 ({} -> {})",
        &v1[..7],
        &v2[..7]
    );
    assert!(out.contains(&line), "{out}");
    assert!(read(dir.path()).contains(&v2));
}

#[test]
fn moved_branches_keep_the_lock_until_history_drops_the_commit() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = project(&manifest(&format!("\"{VERSIONS_V1}\" = 1\n")));
    ok(&run(&server.endpoint, dir.path(), &["lock"]));
    let first = read(dir.path());
    let v1 = commit_of(&server.endpoint, VERSIONS_V1, "v1");
    // v1 moves forward (to a descendant): the lock stays, checks pass.
    let newer = commit_of(&server.endpoint, VERSIONS_V1, "v10");
    move_branch(&server.endpoint, VERSIONS_V1, "v1", &newer);
    ok(&run(&server.endpoint, dir.path(), &["lock", "--check"]));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(!out.contains("Updated"), "{out}");
    assert_eq!(read(dir.path()), first);
    let up = ok(&run(&server.endpoint, dir.path(), &["lock", "-U"]));
    assert!(
        up.contains(&format!(
            "Updated {VERSIONS_V1} v1 ({} -> {})",
            &v1[..7],
            &newer[..7]
        )),
        "{up}"
    );

    // Force-moved back to a commit whose history lacks the locked one: resolved again.
    let older = commit_of(&server.endpoint, VERSIONS_V1, "v0.1.1");
    move_branch(&server.endpoint, VERSIONS_V1, "v1", &older);
    let check = run(&server.endpoint, dir.path(), &["lock", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(out.contains(&format!("-> {})", &older[..7])), "{out}");
}

#[test]
fn branch_force_moved_to_unrelated_history() {
    let bundled = Server::bundled();
    let dir = project(&manifest(&format!("\"{VERSIONS_V1}\" = 1\n")));
    ok(&run(&bundled.endpoint, dir.path(), &["lock"]));
    let v1 = commit_of(&bundled.endpoint, VERSIONS_V1, "v1");
    drop(bundled);
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
    let server = Server::start(mirror.path());
    let history: serde_json::Value = serde_json::from_str(&http(
        "GET",
        &server.endpoint,
        &format!("/api/kernels/{VERSIONS_V1}/commits/v1"),
        "",
    ))
    .unwrap();
    assert_eq!(history.as_array().unwrap().len(), 1, "{history}");
    let orphan = commit_of(&server.endpoint, VERSIONS_V1, "v1");
    assert_ne!(orphan, v1);
    let check = run(&server.endpoint, dir.path(), &["lock", "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(
        out.contains(&format!("({} -> {})", &v1[..7], &orphan[..7])),
        "{out}"
    );
}

#[test]
fn deleted_and_moved_tags_are_resolved_again() {
    let bundled = Server::bundled();
    let dir = project(&manifest(&format!(
        "\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"
    )));
    ok(&run(&bundled.endpoint, dir.path(), &["lock"]));
    let v010 = commit_of(&bundled.endpoint, VERSIONS_V1, "v0.1.0");
    let v011 = commit_of(&bundled.endpoint, VERSIONS_V1, "v0.1.1");
    let rc = commit_of(&bundled.endpoint, VERSIONS_V1, "v0.1.2rc1");
    drop(bundled);
    let locked = read(dir.path());

    // Deleted: the newest remaining match, v0.1.0.
    let deleted = edited_mirror(|t| t.replace("\"v0.1.1\" = \"dc142fd6\"\n", ""), &[]);
    let server = Server::start(deleted.path());
    let check = run(&server.endpoint, dir.path(), &["lock", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(
        out.contains(&format!(
            "Updated {VERSIONS_V1} v0.1.0 ({} -> {})",
            &v011[..7],
            &v010[..7]
        )) || out.contains(&format!("-> v0.1.0 ({} -> {})", &v011[..7], &v010[..7])),
        "{out}"
    );
    drop(server);

    // Moved to another commit: resolved to the tag's new commit.
    fs_err::write(dir.path().join("kernels.lock"), &locked).unwrap();
    let moved = edited_mirror(
        |t| t.replace("\"v0.1.1\" = \"dc142fd6\"", "\"v0.1.1\" = \"v0.1.2rc1\""),
        &[],
    );
    let server = Server::start(moved.path());
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(
        out.contains(&format!("v0.1.1 ({} -> {})", &v011[..7], &rc[..7])),
        "{out}"
    );
}

#[test]
fn kernel_locks_keep_commits_of_unchanged_requirements() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = project(&manifest(&format!(
        "\"{VERSIONS_V1}\" = 1\n\"kernels-test/kernel-deps\" = 1\n"
    )));
    ok(&run(
        &server.endpoint,
        dir.path(),
        &["lock", "--target-runtime", "0.17.2"],
    ));
    let first = read(dir.path());
    let v1 = commit_of(&server.endpoint, VERSIONS_V1, "v1");
    let v10 = commit_of(&server.endpoint, VERSIONS_V1, "v10");
    move_branch(&server.endpoint, VERSIONS_V1, "v1", &v10);
    ok(&run(&server.endpoint, dir.path(), &["lock", "--check"]));
    ok(&run(&server.endpoint, dir.path(), &["lock", "--locked"]));
    let out = ok(&run(&server.endpoint, dir.path(), &["lock"]));
    assert!(!out.contains("Updated"), "{out}");
    assert_eq!(read(dir.path()), first);
    let up = ok(&run(
        &server.endpoint,
        dir.path(),
        &["lock", "-P", VERSIONS_V1],
    ));
    assert!(
        up.contains(&format!(
            "Updated {VERSIONS_V1} v1 ({} -> {})",
            &v1[..7],
            &v10[..7]
        )),
        "{up}"
    );
    assert!(!up.contains("kernel-deps"), "{up}");
}

#[test]
fn download_relocks_a_hand_edited_manifest_and_says_so() {
    let server = Server::bundled();
    let dir = project(&manifest(&format!(
        "\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n"
    )));
    ok(&run(&server.endpoint, dir.path(), &["lock"]));
    let first = read(dir.path());
    set_deps(
        dir.path(),
        &format!("\"{VERSIONS_V1}\" = \">=0.1.0,<0.2\"\n\"kernels-community/relu\" = 1\n"),
    );
    let download = ["download", "--all-variants"];
    // --locked fails naming the entry; offline fails naming it and `kernels lock`.
    let locked = run(
        &server.endpoint,
        dir.path(),
        &["download", "--locked", "--all-variants"],
    );
    assert_eq!(locked.status.code(), Some(1));
    assert!(
        stderr(&locked).contains("kernels-community/relu"),
        "{}",
        stderr(&locked)
    );
    let offline = run(
        &server.endpoint,
        dir.path(),
        &["download", "--all-variants", "--offline"],
    );
    assert_eq!(offline.status.code(), Some(1));
    let text = stderr(&offline)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("kernels-community/relu") && text.contains("kernels lock"),
        "{text}"
    );
    let verify = run(&server.endpoint, dir.path(), &["verify", "--all-variants"]);
    assert_eq!(verify.status.code(), Some(1));
    assert!(
        stderr(&verify).contains("kernels-community/relu"),
        "{}",
        stderr(&verify)
    );
    assert_eq!(read(dir.path()), first);
    // --frozen uses the lock as it is.
    ok(&run(
        &server.endpoint,
        dir.path(),
        &["download", "--frozen", "--all-variants"],
    ));
    assert_eq!(read(dir.path()), first);
    // No flags: re-lock only that entry, say so, download it.
    let out = ok(&run(&server.endpoint, dir.path(), &download));
    assert!(out.contains("locking again"), "{out}");
    assert!(out.contains("Added kernels-community/relu v1"), "{out}");
    assert!(!out.contains(&format!("Updated {VERSIONS_V1}")), "{out}");
    assert!(read(dir.path()).contains("kernels-community/relu"));
    ok(&run(
        &server.endpoint,
        dir.path(),
        &["verify", "--all-variants"],
    ));
}
