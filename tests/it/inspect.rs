//! `kernels tree`, `kernels outdated` and `kernels versions` against the
//! bundled mirror, with a branch moved upstream at runtime (`--test-control`).

use std::process::Output;

use kernels_test_support::{self as common, Server, TestContext, snapshot};

const VERSIONS_V2: &str = "f609e51b856b3d874b0ae8445913e200f02c1735";
const VERSIONS_V1: &str = "2359bfbb38d7db7fb8069128596cff30b044053a";

/// A context over `server` whose Python is the stub torch (CPU) and whose
/// commands do not retry.
fn context(server: Server) -> TestContext {
    TestContext::with_server(server)
        .with_stub_torch()
        .with_env("KERNELS_MAX_RETRIES", "0")
}

/// A [`context`] with a project depending on `deps`, locked for `runtime`.
fn locked(server: Server, runtime: &str, deps: &str) -> TestContext {
    let context = context(server).with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n{deps}"
    ));
    context.run_ok(&["lock", "--target-runtime", runtime]);
    context
}

/// `kernels ARGS` against an endpoint nothing listens on.
fn unreachable(context: &TestContext, args: &[&str]) -> Output {
    context.kernels_without_hub().args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
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

#[test]
fn tree_and_outdated_show_moved_refs() {
    let context = locked(
        Server::start_with_args(&common::mirror_dir(), &["--test-control"]),
        "0.17.2",
        "\"kernels-test/kernel-deps\" = 1\n\"kernels-test/versions\" = 1\n",
    );
    let ep = context.endpoint();
    snapshot!("tree", context.run_ok(&["tree"]));
    snapshot!("tree_depth_0", context.run_ok(&["tree", "--depth", "0"]));

    move_branch(ep, "kernels-test/versions", "v1", VERSIONS_V2);
    let lock_before = context.lockfile();
    snapshot!(
        "tree_outdated_moved",
        context.run_ok(&["tree", "--outdated"])
    );
    snapshot!("outdated_moved", context.run_ok(&["outdated"]));
    let json: serde_json::Value =
        serde_json::from_slice(&context.run_ok(&["outdated", "--format", "json"]).stdout).unwrap();
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
    assert_eq!(context.lockfile(), lock_before);
}

#[test]
fn outdated_for_tag_specifiers_compares_tags() {
    let context = locked(
        Server::bundled(),
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n",
    );
    snapshot!("outdated_tags", context.run_ok(&["outdated"]));
}

#[test]
fn versions_lists_branches_and_tags_with_matching_variants() {
    let context = context(Server::start_with_args(
        &common::mirror_dir(),
        &["--test-control"],
    ));
    move_branch(
        context.endpoint(),
        "kernels-test/versions",
        "v1",
        VERSIONS_V2,
    );
    snapshot!(
        "versions",
        context.run_ok(&["versions", "kernels-test/versions"])
    );
    snapshot!(
        "versions_variants",
        context.run_ok(&["versions", "kernels-test/versions", "--variants"])
    );
    let json: serde_json::Value = serde_json::from_slice(
        &context
            .run_ok(&["versions", "kernels-test/versions", "--format", "json"])
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
    let context = locked(
        Server::bundled(),
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n\"kernels-community/rotary\" = \">=0.0.1\"\n",
    );
    snapshot!("outdated_unreachable", unreachable(&context, &["outdated"]));

    let out = unreachable(&context, &["outdated", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{doc:#}");
    for (i, k) in kernels.iter().enumerate() {
        assert_eq!(k["status"], "unknown", "{doc:#}");
        assert_eq!(k["outdated"], serde_json::Value::Null, "{doc:#}");
        assert_eq!(k["compatible"], serde_json::Value::Null, "{doc:#}");
        assert_eq!(k["error"]["code"], "kernels::hub::transport", "{doc:#}");
        // The message names the endpoint, 127.0.0.1:9.
        snapshot!(
            format!("outdated_unreachable_json_message_{i}"),
            k["error"]["message"].as_str().unwrap()
        );
    }
    assert_eq!(kernels[0]["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(kernels[0]["requirement_kind"], "specifier", "{doc:#}");

    // The tree is still shown (exit 0); each entry is marked, one warning.
    snapshot!(
        "tree_outdated_unreachable",
        unreachable(&context, &["tree", "--outdated"])
    );
    let doc = json(&unreachable(
        &context,
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
    let context = locked(
        Server::start_with_args(&common::mirror_dir(), &["--test-control"]),
        "0.17.2",
        "\"kernels-test/versions\" = 1\n\"kernels-community/relu\" = 1\n\"kernels-community/einops\" = 1\n",
    );
    let ep = context.endpoint();
    move_branch(ep, "kernels-test/versions", "v1", VERSIONS_V2);
    add_fault(
        ep,
        r#"[{"path": "/api/kernels/kernels-community/relu/refs", "status": 500},
            {"path": "/api/kernels/kernels-community/einops/refs", "status": 403}]"#,
    );
    snapshot!("outdated_two_causes", context.run(&["outdated"]));
    let doc = json(&context.run(&["outdated", "--format", "json"]));
    let mut status: Vec<(&str, &str)> = doc["kernels"]
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
    status.sort_unstable();
    assert_eq!(
        status,
        [
            ("kernels-community/einops", "unknown"),
            ("kernels-community/relu", "unknown"),
            ("kernels-test/versions", "outdated"),
        ],
        "{doc:#}"
    );

    snapshot!(
        "tree_outdated_two_causes",
        context.run_ok(&["tree", "--outdated"])
    );
}

/// A variant-hash lock keeps no tag: `tree` shows the short commit with the
/// requirement labelled, or the version when the cache's `refs/` names the
/// locked commit; JSON has the plain requirement and a label that is a
/// version or the short commit, with or without `--outdated`.
#[test]
fn tree_of_a_variant_hash_lock_labels_versions() {
    let context = locked(
        Server::bundled(),
        "0.10.5",
        "\"kernels-test/versions\" = \">=0.1.0,<0.2\"\n",
    );
    snapshot!("tree_variant_hash", context.run_ok(&["tree"]));
    let doc = json(&context.run_ok(&["tree", "--format", "json"]));
    let entry = &doc["dependencies"][0];
    assert_eq!(entry["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(entry["requirement_kind"], "specifier", "{doc:#}");
    // Before any download the Hub's refs name the tag `kernels lock` printed;
    // without the Hub (and no cached refs) only the commit is known.
    assert_eq!(entry["locked"]["label"], "v0.1.1", "{doc:#}");
    let doc = json(&unreachable(&context, &["tree", "--format", "json"]));
    assert_eq!(
        doc["dependencies"][0]["locked"]["label"], "dc142fd",
        "{doc:#}"
    );
    let doc = json(&context.run_ok(&["tree", "--outdated", "--format", "json"]));
    let entry = &doc["dependencies"][0];
    assert_eq!(entry["requirement"], ">=0.1.0, <0.2", "{doc:#}");
    assert_eq!(entry["locked"]["label"], "v0.1.1", "{doc:#}");
    assert_eq!(entry["status"], "outdated", "{doc:#}");

    // The runtime loading by tag records it in the cache as `huggingface_hub`
    // does (`refs/<tag>`); offline, `tree` then names the version.
    context.run_ok(&["download"]);
    let folder = fs_err::read_dir(&context.cache)
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
    snapshot!(
        "tree_variant_hash_tag_from_refs",
        unreachable(&context, &["tree"])
    );
    let doc = json(&unreachable(&context, &["tree", "--format", "json"]));
    assert_eq!(
        doc["dependencies"][0]["locked"]["label"], "v0.1.1",
        "{doc:#}"
    );
    let out = unreachable(&context, &["outdated", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["kernels"][0]["locked"]["label"], "v0.1.1", "{doc:#}");
    assert_eq!(doc["kernels"][0]["status"], "unknown", "{doc:#}");
}

/// `versions` takes the environment overrides of `download`: the stub torch
/// says CPU, `--cuda-version` makes the CUDA variant the match; a bad value is
/// refused before any request.
#[test]
fn versions_marks_variants_for_the_given_environment() {
    let context = context(Server::start_with_args(
        &common::mirror_dir(),
        &["--test-control"],
    ));
    let ep = context.endpoint();
    let args = [
        "versions",
        "kernels-test/versions",
        "--torch-version",
        "2.8",
        "--cuda-version",
        "12.6",
    ];
    snapshot!("versions_cuda_override", context.run_ok(&args));
    let doc = json(&context.run_ok(&[&args[..], &["--format", "json"]].concat()));
    assert_eq!(doc["versions"][0]["matching"], "torch-cuda", "{doc:#}");
    // "… CUDA 12.6 …".
    snapshot!(
        "versions_cuda_override_json_environment",
        doc["environment"].as_str().unwrap()
    );

    let relu = context.run_ok(&[
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
    ]);
    snapshot!("versions_relu_linux_cuda", relu);

    let before = requests(ep).len();
    let out = context.run(&[
        "versions",
        "kernels-test/versions",
        "--torch-version",
        "2.8",
        "--cuda-version",
        "twelve",
    ]);
    snapshot!("versions_bad_override", out);
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
    let context = locked(
        Server::start_with_args(&common::mirror_dir(), &["--test-control"]),
        "0.17.2",
        "\"kernels-test/kernel-deps\" = 1\n\"kernels-test/versions\" = 1\n",
    );
    let before = requests(context.endpoint()).len();
    let lock = context.lockfile();
    context.run_ok(&["lock"]);
    assert_eq!(context.lockfile(), lock);
    let mut paths: Vec<String> = requests(context.endpoint())[before..].to_vec();
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
