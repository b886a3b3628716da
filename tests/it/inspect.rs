//! `kernels tree`, `kernels outdated` and `kernels versions` against the
//! bundled mirror, with a branch moved upstream at runtime (`--test-control`).

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, Server};

const VERSIONS_V2: &str = "f609e51b856b3d874b0ae8445913e200f02c1735";
const VERSIONS_V1: &str = "2359bfbb38d7db7fb8069128596cff30b044053a";

/// A closed port: every request fails to connect.
const NO_HUB: &str = "http://127.0.0.1:9";

fn run_any(endpoint: &str, dir: &Path, args: &[&str]) -> Output {
    common::kernels(endpoint, &dir.join(".cache"))
        .current_dir(dir)
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .env("KERNELS_MAX_RETRIES", "0")
        .args(args)
        .output()
        .unwrap()
}

fn run(endpoint: &str, dir: &Path, args: &[&str]) -> Output {
    let out = run_any(endpoint, dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a command that must exit 1.
fn run_fails(endpoint: &str, dir: &Path, args: &[&str]) -> Output {
    let out = run_any(endpoint, dir, args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn add_fault(endpoint: &str, rules: &str) {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "POST /__fixture/faults HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{rules}",
        rules.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 2"), "{response}");
}

fn move_branch(endpoint: &str, repo: &str, branch: &str, to: &str) {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let body = format!(r#"{{"repo": "{repo}", "ref": "{branch}", "to_commit": "{to}"}}"#);
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "POST /__fixture/refs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 2"), "{response}");
}

fn project(server: &Server, runtime: &str, deps: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("pyproject.toml"),
        format!("[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n{deps}"),
    )
    .unwrap();
    run(
        &server.endpoint,
        dir.path(),
        &["lock", "--target-runtime", runtime],
    );
    dir
}

#[test]
fn tree_and_outdated_show_moved_refs() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = project(
        &server,
        "0.17.2",
        "\"kernels-test/kernel-deps\" = 1\n\"kernels-test/versions\" = 1\n",
    );
    let ep = &server.endpoint;
    let tree = stdout(&run(ep, dir.path(), &["tree"]));
    assert_eq!(
        tree,
        "kernels-test/kernel-deps v1 (b1c7a50)\n└── kernels-community/einops v1 (0bd0077)\nkernels-test/versions v1 (2359bfb)\n"
    );
    assert_eq!(
        stdout(&run(ep, dir.path(), &["tree", "--depth", "0"])),
        "kernels-test/kernel-deps v1 (b1c7a50)\nkernels-test/versions v1 (2359bfb)\n"
    );

    move_branch(ep, "kernels-test/versions", "v1", VERSIONS_V2);
    let lock_before = fs_err::read(dir.path().join("kernels.lock")).unwrap();
    let tree = stdout(&run(ep, dir.path(), &["tree", "--outdated"]));
    assert!(
        tree.contains("kernels-test/versions v1 (2359bfb) [newest compatible: v1 (f609e51), newest: v10 (3df70ae)]"),
        "{tree}"
    );
    assert!(
        tree.contains("└── kernels-community/einops v1 (0bd0077)\n"),
        "{tree}"
    );

    let table = stdout(&run(ep, dir.path(), &["outdated"]));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[0].starts_with("Repository"), "{table}");
    assert!(
        lines[1].split_whitespace().eq([
            "kernels-test/versions",
            "v1",
            "(2359bfb)",
            "v1",
            "(f609e51)",
            "v10",
            "(3df70ae)"
        ]),
        "{table}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&run(ep, dir.path(), &["outdated", "--format", "json"]).stdout)
            .unwrap();
    let versions = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["repo_id"] == "kernels-test/versions")
        .unwrap();
    assert_eq!(versions["locked"]["commit"], VERSIONS_V1);
    assert_eq!(versions["compatible"]["commit"], VERSIONS_V2);
    assert_eq!(versions["newest"]["label"], "v10");
    assert_eq!(versions["outdated"], true);
    // Looking changes nothing: the lock is sticky.
    assert_eq!(
        fs_err::read(dir.path().join("kernels.lock")).unwrap(),
        lock_before
    );
}

#[test]
fn outdated_for_tag_specifiers_compares_tags() {
    let server = Server::bundled();
    let dir = project(
        &server,
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n",
    );
    let table = stdout(&run(&server.endpoint, dir.path(), &["outdated"]));
    assert!(
        table.lines().nth(1).unwrap().split_whitespace().eq([
            "kernels-test/versions",
            "v0.1.1",
            "(dc142fd)",
            "v0.1.1",
            "(dc142fd)",
            "v0.2.0",
            "(d09e74f)"
        ]),
        "{table}"
    );
}

#[test]
fn versions_lists_branches_and_tags_with_matching_variants() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = tempfile::tempdir().unwrap();
    move_branch(&server.endpoint, "kernels-test/versions", "v1", VERSIONS_V2);
    let out = stdout(&run(
        &server.endpoint,
        dir.path(),
        &["versions", "kernels-test/versions"],
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "Version 1 (branch v1, f609e51): 4 build variants, ✅ torch-cpu matches this environment"
    );
    assert_eq!(
        lines[2],
        "Version 10 (branch v10, 3df70ae): 4 build variants, ✅ torch-cpu matches this environment"
    );
    assert!(
        lines.contains(
            &"Tag v0.2.0 (d09e74f): 1 build variant, ✅ torch-universal matches this environment"
        ),
        "{out}"
    );
    let out = stdout(&run(
        &server.endpoint,
        dir.path(),
        &["versions", "kernels-test/versions", "--variants"],
    ));
    assert!(
        out.starts_with("Version 1 (branch v1, f609e51): 4 build variants, ✅ torch-cpu matches this environment\n  ✅ torch-cpu (compatible, preferred)\n  torch-cuda\n"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_slice(
        &run(
            &server.endpoint,
            dir.path(),
            &["versions", "kernels-test/versions", "--format", "json"],
        )
        .stdout,
    )
    .unwrap();
    let first = &json["versions"][0];
    assert_eq!(first["version"], 1);
    assert_eq!(first["commit"], VERSIONS_V2);
    assert_eq!(first["variant_count"], 4);
    assert_eq!(first["matching"], "torch-cpu");
}

/// With the Hub unreachable nothing is "up to date": `outdated` names the
/// endpoint once for every kernel and exits 1, JSON says `unknown` with the
/// error; `tree --outdated` marks the entries and warns once.
#[test]
fn unreadable_refs_are_unknown_not_up_to_date() {
    let server = Server::bundled();
    let dir = project(
        &server,
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n\"kernels-community/rotary\" = \">=0.0.1\"\n",
    );
    let out = run_fails(NO_HUB, dir.path(), &["outdated"]);
    let err = stderr(&out);
    assert_eq!(stdout(&out), "", "{err}");
    assert!(!err.contains("up to date"), "{err}");
    assert_eq!(
        err.matches("cannot reach the Hub at http://127.0.0.1:9")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains(
            "could not check the 2 locked kernels: kernels-test/versions, kernels-community/rotary"
        ),
        "{err}"
    );
    assert!(err.contains("kernels::outdated::unreachable"), "{err}");

    let out = run_fails(NO_HUB, dir.path(), &["outdated", "--format", "json"]);
    let doc = json(&out);
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{doc:#}");
    for k in kernels {
        assert_eq!(k["status"], "unknown", "{doc:#}");
        assert_eq!(k["outdated"], serde_json::Value::Null, "{doc:#}");
        assert_eq!(k["compatible"], serde_json::Value::Null, "{doc:#}");
        assert_eq!(k["error"]["code"], "kernels::hub::transport", "{doc:#}");
        assert!(
            k["error"]["message"]
                .as_str()
                .unwrap()
                .contains("127.0.0.1:9"),
            "{doc:#}"
        );
    }
    assert_eq!(kernels[0]["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(kernels[0]["requirement_kind"], "specifier", "{doc:#}");

    // The tree is still shown (exit 0); each entry is marked, one warning.
    let out = run(NO_HUB, dir.path(), &["tree", "--outdated"]);
    assert_eq!(
        stdout(&out),
        "kernels-test/versions dc142fd (requirement \">=0.1.0, <0.2\") [not checked]\n\
         kernels-community/rotary 804a326 (requirement \">=0.0.1\") [not checked]\n"
    );
    let err = stderr(&out);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains("warning: cannot reach the Hub at http://127.0.0.1:9 (")
            && err.contains(
                "not checked for newer versions: kernels-test/versions, kernels-community/rotary"
            ),
        "{err}"
    );
    let doc = json(&run(
        NO_HUB,
        dir.path(),
        &["tree", "--outdated", "--format", "json"],
    ));
    let first = &doc["dependencies"][0];
    assert_eq!(first["status"], "unknown", "{doc:#}");
    assert_eq!(first["outdated"], serde_json::Value::Null, "{doc:#}");
    assert_eq!(first["error"]["code"], "kernels::hub::transport", "{doc:#}");
}

/// Some kernels checked, others not for two different causes: the outdated
/// one is in the table, each cause is named once, the summary counts them,
/// exit 1.
#[test]
fn outdated_names_each_cause_once() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = project(
        &server,
        "0.17.2",
        "\"kernels-test/versions\" = 1\n\"kernels-community/relu\" = 1\n\"kernels-community/einops\" = 1\n",
    );
    let ep = &server.endpoint;
    move_branch(ep, "kernels-test/versions", "v1", VERSIONS_V2);
    add_fault(
        ep,
        r#"[{"path": "/api/kernels/kernels-community/relu/refs", "status": 500},
            {"path": "/api/kernels/kernels-community/einops/refs", "status": 403}]"#,
    );
    let out = run_fails(ep, dir.path(), &["outdated"]);
    let table = stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[1].starts_with("kernels-test/versions "), "{table}");
    let err = stderr(&out);
    assert_eq!(err.matches("kernels::hub::server").count(), 1, "{err}");
    assert_eq!(err.matches("kernels::hub::forbidden").count(), 1, "{err}");
    assert!(
        err.contains("cannot read the refs of kernels-community/relu"),
        "{err}"
    );
    assert!(
        err.contains("cannot read the refs of kernels-community/einops"),
        "{err}"
    );
    assert!(
        err.contains("could not check 2 of 3 locked kernels (the causes are above); the other is outdated (listed above)"),
        "{err}"
    );
    let doc = json(&run_fails(
        ep,
        dir.path(),
        &["outdated", "--format", "json"],
    ));
    let status: Vec<(&str, &str)> = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["repo_id"].as_str().unwrap(),
                k["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        status.contains(&("kernels-test/versions", "outdated")),
        "{doc:#}"
    );
    assert!(
        status.contains(&("kernels-community/relu", "unknown")),
        "{doc:#}"
    );
    assert!(
        status.contains(&("kernels-community/einops", "unknown")),
        "{doc:#}"
    );

    let out = run(ep, dir.path(), &["tree", "--outdated"]);
    let tree = stdout(&out);
    assert!(
        tree.contains("kernels-community/relu v1 (d649efb) [not checked]\n"),
        "{tree}"
    );
    assert!(
        tree.contains("kernels-test/versions v1 (2359bfb) [newest compatible"),
        "{tree}"
    );
    assert_eq!(
        stderr(&out).matches("warning:").count(),
        2,
        "{}",
        stderr(&out)
    );
}

/// A variant-hash lock keeps no tag: `tree` shows the short commit with the
/// requirement labelled, or the version when the cache's `refs/` names the
/// locked commit; JSON has the plain requirement and a label that is a
/// version or the short commit, with or without `--outdated`.
#[test]
fn tree_of_a_variant_hash_lock_labels_versions() {
    let server = Server::bundled();
    let dir = project(
        &server,
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n",
    );
    let ep = &server.endpoint;
    assert_eq!(
        stdout(&run(ep, dir.path(), &["tree"])),
        "kernels-test/versions dc142fd (requirement \">=0.1.0, <0.2\")\n"
    );
    let doc = json(&run(ep, dir.path(), &["tree", "--format", "json"]));
    let entry = &doc["dependencies"][0];
    assert_eq!(entry["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(entry["requirement_kind"], "specifier", "{doc:#}");
    assert_eq!(entry["locked"]["label"], "dc142fd", "{doc:#}");
    let doc = json(&run(
        ep,
        dir.path(),
        &["tree", "--outdated", "--format", "json"],
    ));
    let entry = &doc["dependencies"][0];
    assert_eq!(entry["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(entry["locked"]["label"], "v0.1.1", "{doc:#}");
    assert_eq!(entry["status"], "outdated", "{doc:#}");

    // The runtime loading by tag records it in the cache as `huggingface_hub`
    // does (`refs/<tag>`); offline, `tree` then names the version.
    run(ep, dir.path(), &["download"]);
    let folder = fs_err::read_dir(dir.path().join(".cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("--kernels-test--versions"))
        .expect("the kernel is in the cache");
    fs_err::create_dir_all(folder.join("refs")).unwrap();
    fs_err::write(
        folder.join("refs/v0.1.1"),
        "dc142fd6c9920c993d32be6358b78957c58681c3",
    )
    .unwrap();
    assert_eq!(
        stdout(&run(NO_HUB, dir.path(), &["tree"])),
        "kernels-test/versions v0.1.1 (dc142fd)\n"
    );
    let doc = json(&run(NO_HUB, dir.path(), &["tree", "--format", "json"]));
    assert_eq!(
        doc["dependencies"][0]["locked"]["label"], "v0.1.1",
        "{doc:#}"
    );
    let doc = json(&run_fails(
        NO_HUB,
        dir.path(),
        &["outdated", "--format", "json"],
    ));
    assert_eq!(doc["kernels"][0]["locked"]["label"], "v0.1.1", "{doc:#}");
    assert_eq!(doc["kernels"][0]["status"], "unknown", "{doc:#}");
}

/// `versions` takes the environment overrides of `download`: the stub torch
/// says CPU, `--cuda-version` makes the CUDA variant the match; a bad value is
/// refused before any request.
#[test]
fn versions_marks_variants_for_the_given_environment() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = tempfile::tempdir().unwrap();
    let ep = &server.endpoint;
    let args = [
        "versions",
        "kernels-test/versions",
        "--torch-version",
        "2.8",
        "--cuda-version",
        "12.6",
    ];
    let out = run(ep, dir.path(), &args);
    let text = stdout(&out);
    assert!(
        text.starts_with("Version 1 (branch v1, 2359bfb): 4 build variants, ✅ torch-cuda matches this environment\n"),
        "{text}"
    );
    assert!(
        stderr(&out).contains("Environment: torch 2.8 (cxx11 ABI), CUDA 12.6, "),
        "{}",
        stderr(&out)
    );
    let doc = json(&run(
        ep,
        dir.path(),
        &[&args[..], &["--format", "json"]].concat(),
    ));
    assert_eq!(doc["versions"][0]["matching"], "torch-cuda", "{doc:#}");
    assert!(
        doc["environment"].as_str().unwrap().contains("CUDA 12.6"),
        "{doc:#}"
    );

    let relu = run(
        ep,
        dir.path(),
        &[
            "versions",
            "kernels-community/relu",
            "--torch-version",
            "2.12",
            "--cuda-version",
            "12.6",
            "--os",
            "linux",
            "--arch",
            "x86_64",
            "--variants",
        ],
    );
    let text = stdout(&relu);
    assert!(
        text.starts_with("Version 1 (branch v1, d649efb): 52 build variants, ✅ torch212-cxx11-cu126-x86_64-linux matches this environment\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  ✅ torch212-cxx11-cu126-x86_64-linux (compatible, preferred)\n"),
        "{text}"
    );

    let before = requests(ep).len();
    let out = run_fails(
        ep,
        dir.path(),
        &[
            "versions",
            "kernels-test/versions",
            "--torch-version",
            "2.8",
            "--cuda-version",
            "twelve",
        ],
    );
    assert!(
        stderr(&out).contains("kernels::variant::bad_override"),
        "{}",
        stderr(&out)
    );
    assert_eq!(requests(ep).len(), before);
}

fn requests(endpoint: &str) -> Vec<String> {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /__fixture/requests HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let log: serde_json::Value = serde_json::from_str(body).unwrap();
    log.as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A re-lock with nothing changed (0.17): no refs, no `metadata.json`, one
/// `build/` listing per locked kernel (the lock does not record who requires
/// whom); the metadata blobs come from the Hub cache the first lock filled.
#[test]
fn unchanged_relock_lists_each_kernel_once() {
    let server = Server::start_with_args(&common::mirror_dir(), &["--test-control"]);
    let dir = project(
        &server,
        "0.17.2",
        "\"kernels-test/kernel-deps\" = 1\n\"kernels-test/versions\" = 1\n",
    );
    let before = requests(&server.endpoint).len();
    let lock = fs_err::read(dir.path().join("kernels.lock")).unwrap();
    run(&server.endpoint, dir.path(), &["lock"]);
    assert_eq!(fs_err::read(dir.path().join("kernels.lock")).unwrap(), lock);
    let mut paths: Vec<String> = requests(&server.endpoint)[before..].to_vec();
    paths.sort();
    assert_eq!(paths.len(), 3, "{paths:#?}");
    for (path, repo) in paths.iter().zip([
        "kernels-community/einops",
        "kernels-test/kernel-deps",
        "kernels-test/versions",
    ]) {
        assert!(
            path.starts_with(&format!("/api/kernels/{repo}/tree/")),
            "{paths:#?}"
        );
    }
}
