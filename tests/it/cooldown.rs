//! The release cooldown (`[tool.kernels] exclude-newer`, `lock
//! --exclude-newer`): against a copy of `kernels-test/versions` whose `v1`
//! head (and tag `v0.3.0`) was committed an hour before the test ran, `lock`
//! takes the newest commit older than the cut-off and says so, records a
//! span's instant in `pyproject.toml` for `--check`, and the exemption takes
//! the head.

use crate::sticky::{copy_dir, locked_commits};

use kernels_test_support::{self as common, Server, TestContext, snapshot};

const REPO: &str = "kernels-test/versions";

/// A mirror with `kernels-test/versions` whose `v1` branch and tag `v0.3.0`
/// point at a new commit `fresh` (the files of `v1`, parent `v1`) dated one
/// hour ago.
pub(crate) fn fresh_mirror() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let src = common::mirror_dir();
    copy_dir(&src.join("orgs"), &root.path().join("orgs"));
    let rel = "repos/kernels/kernels-test/versions";
    let repo = root.path().join(rel);
    copy_dir(&src.join(rel), &repo);
    copy_dir(&repo.join("commits/v1"), &repo.join("commits/fresh"));
    let hour_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(1);
    fs_err::write(
        repo.join("commits/fresh/commit.toml"),
        format!(
            "parent = \"v1\"\ntitle = \"Fresh build\"\ndate = \"{}\"\n",
            jiff::Timestamp::from_second(hour_ago.as_second()).unwrap()
        ),
    )
    .unwrap();
    let toml = fs_err::read_to_string(repo.join("repo.toml")).unwrap();
    let toml = toml
        .replace("\"f609e51b\"]", "\"f609e51b\", \"fresh\"]")
        .replace("\"v1\" = \"v1\"", "\"v1\" = \"fresh\"")
        .replace("[tags]\n", "[tags]\n\"v0.3.0\" = \"fresh\"\n");
    fs_err::write(repo.join("repo.toml"), toml).unwrap();
    root
}

pub(crate) fn project(tool: &str, requirement: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels]\n# Hold back releases for a week.\n{tool}\n[tool.kernels.dependencies]\n\"{REPO}\" = {requirement}\n"
    )
}

/// `GET path` of the context's server, as JSON.
fn get(context: &TestContext, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let host = context.endpoint().trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap()
}

/// The commit `name` (a branch or tag) of the served repository.
fn commit_of(context: &TestContext, name: &str) -> String {
    let refs = get(context, &format!("/api/kernels/{REPO}/refs"));
    ["branches", "tags"]
        .iter()
        .flat_map(|kind| refs[kind].as_array().unwrap())
        .find(|r| r["name"] == name)
        .map(|r| r["targetCommit"].as_str().unwrap().to_owned())
        .unwrap()
}

/// The commit before `v1`'s head (the bundled mirror's `v1`).
fn below_head(context: &TestContext) -> String {
    let history = get(context, &format!("/api/kernels/{REPO}/commits/v1"));
    history[1]["id"].as_str().unwrap().to_owned()
}

#[test]
fn branch_head_inside_the_cooldown_is_held_back() {
    let mirror = fresh_mirror();
    let context = TestContext::with_server(Server::start(mirror.path()))
        .with_pyproject(&project("exclude-newer = \"7 days\"\n", "1"));
    let head = commit_of(&context, "v1");
    snapshot!("cooldown_branch_held_back", context.run_ok(&["lock"]));
    let lock = context.lockfile();
    assert_ne!(head, below_head(&context));
    assert_eq!(locked_commits(&lock), [below_head(&context)], "{lock}");
    // The span's instant is recorded next to it, comments kept.
    let pyproject = context.read("pyproject.toml");
    snapshot!("cooldown_recorded_pyproject", pyproject);
    // The check uses the recorded instant: up to date.
    context.run_ok(&["lock", "--check"]);
    // A second lock changes nothing, not even the record.
    context.run_ok(&["lock"]);
    assert_eq!(context.read("pyproject.toml"), pyproject);

    // Exempted, the head is taken (and the record stays for the others).
    context.write(
        "pyproject.toml",
        &pyproject.replace(
            "\n[tool.kernels.dependencies]",
            &format!(
                "exclude-newer-package = {{ \"{REPO}\" = false }}\n\n[tool.kernels.dependencies]"
            ),
        ),
    );
    // `-U` resolves the span again; a second later its instant always differs from the
    // record, so the line that re-records it is always printed.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    snapshot!("cooldown_branch_exempt", context.run_ok(&["lock", "-U"]));
    assert_eq!(locked_commits(&context.lockfile()), [head]);
}

#[test]
fn tag_range_takes_the_newest_tag_older_than_the_cutoff() {
    let mirror = fresh_mirror();
    let context = TestContext::with_server(Server::start(mirror.path()))
        .with_pyproject(&project("target-runtime = \"0.13.0\"\n", "\">=0.1\""));
    snapshot!(
        "cooldown_tag_held_back",
        context.run_ok(&["lock", "--exclude-newer", "3 days"])
    );
    assert_eq!(
        locked_commits(&context.lockfile()),
        [commit_of(&context, "v0.2.0")]
    );
    // A command-line cut-off is recorded too, so the check agrees.
    snapshot!(
        "cooldown_tag_recorded_pyproject",
        context.read("pyproject.toml")
    );
    context.run_ok(&["lock", "--check"]);
    // Without any cut-off the check would move to v0.3.0.
    let no_cutoff = context
        .read("pyproject.toml")
        .replace("exclude-newer-cutoff", "# was");
    context.write("pyproject.toml", &no_cutoff);
    snapshot!("cooldown_tag_lifted", context.run_ok(&["lock", "-U"]));
    assert_eq!(
        locked_commits(&context.lockfile()),
        [commit_of(&context, "v0.3.0")]
    );
}

#[test]
fn a_cutoff_before_every_commit_is_an_error() {
    let mirror = fresh_mirror();
    let context = TestContext::with_server(Server::start(mirror.path()))
        .with_pyproject(&project("exclude-newer = \"2020-01-01\"\n", "1"));
    snapshot!("cooldown_nothing_old_enough", context.run(&["lock"]));
    assert!(!context.project.join("kernels.lock").exists());
}

#[test]
fn bad_settings_name_the_key() {
    let context = TestContext::new().with_pyproject(&project(
        "exclude-newer = \"soon\"\nexclude-newer-package = { \"a/b\" = true }\n",
        "1",
    ));
    snapshot!("cooldown_bad_setting", context.run(&["lock"]));
    let context = TestContext::new().with_pyproject(&project(
        "exclude-newer-package = { \"a/b\" = true }\n",
        "1",
    ));
    snapshot!("cooldown_bad_exemption", context.run(&["lock"]));
}

#[test]
fn adding_a_cooldown_moves_a_fresh_lock_back() {
    for (name, runtime) in [("hashed", "0.16.2"), ("kernel_locks", "0.17.2")] {
        let mirror = fresh_mirror();
        let tool = format!("target-runtime = \"{runtime}\"\n");
        let context = TestContext::with_server(Server::start(mirror.path()))
            .with_pyproject(&project(&tool, "1"));
        context.run_ok(&["lock"]);
        let head = commit_of(&context, "v1");
        assert_eq!(locked_commits(&context.lockfile()), [head]);
        context.write(
            "pyproject.toml",
            &project(&format!("{tool}exclude-newer = \"7 days\"\n"), "1"),
        );
        snapshot!(
            format!("cooldown_added_check_{name}").as_str(),
            context.run(&["lock", "--check"])
        );
        snapshot!(
            format!("cooldown_added_lock_{name}").as_str(),
            context.run_ok(&["lock"])
        );
        assert_eq!(locked_commits(&context.lockfile()), [below_head(&context)]);
        context.run_ok(&["lock", "--check"]);
    }
}
