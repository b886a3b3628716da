//! `kernels mirror`: a mirror written from server A (the bundled mirror),
//! served as B, answers `kernels lock`/`download` and huggingface_hub as A
//! does; re-running fetches nothing; bad input leaves the output untouched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernels_test_support::snapshot::{SnapshotText, sorted_kernel_lines};
use kernels_test_support::{self as common, TestContext, snapshot};
use serde_json::{Value, json};

/// The text-generation-inference project of `fixtures/projects`.
const TGI: &str = "tgi-server-db931fcf";

/// A context with the TGI project, serving what `context` makes.
fn tgi(context: TestContext) -> TestContext {
    context.with_fixture_project(TGI)
}

fn control(endpoint: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    request(method, &format!("{endpoint}/__fixture/{path}"), body)
}

fn request(method: reqwest::Method, url: &str, body: Option<Value>) -> Value {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut req = reqwest::Client::new().request(method, url);
            if let Some(body) = body {
                req = req.json(&body);
            }
            let resp = req.send().await.unwrap();
            assert!(resp.status().is_success(), "{url}: {}", resp.status());
            serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null)
        })
}

/// Every path under `root` → file bytes or `link -> target` (receipts by name only).
fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    // The stored interpreter probes are keyed by each run's environment
    // (its endpoint differs between the two projects): left out.
    let walk = walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !e.path().ends_with(".locks/kernels-probes"));
    for entry in walk {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap().to_owned();
        if entry.path_is_symlink() {
            let target = fs_err::read_link(entry.path()).unwrap();
            out.insert(rel, format!("-> {}", target.display()).into_bytes());
        } else if entry.file_type().is_file()
            && rel
                .components()
                .any(|c| c.as_os_str() == ".kernels-receipts")
        {
            // Receipts hold inode numbers and times: the same names, never the same bytes.
            out.insert(rel, b"<receipt>".to_vec());
        } else if entry.file_type().is_file() {
            out.insert(rel, fs_err::read(entry.path()).unwrap());
        } else {
            out.insert(rel, b"<dir>".to_vec());
        }
    }
    out
}

const HUB_SCRIPT: &str = r#"
import hashlib, json, os, sys
from huggingface_hub import HfApi, snapshot_download
repo, rev, variant = sys.argv[1:4]
api = HfApi()
refs = api.list_repo_refs(repo, repo_type="model")
tree = [[e.path, getattr(e, "blob_id", None), getattr(e, "size", None),
         (e.lfs.sha256 if getattr(e, "lfs", None) else None)]
        for e in api.list_repo_tree(repo, revision=rev, recursive=True, repo_type="model")]
path = snapshot_download(repo, revision=rev, allow_patterns=[f"build/{variant}/*"])
files = {}
for d, _, names in os.walk(path):
    for n in names:
        p = os.path.join(d, n)
        files[os.path.relpath(p, path)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
print(json.dumps({
    "branches": {r.name: r.target_commit for r in refs.branches},
    "tags": {r.name: r.target_commit for r in refs.tags},
    "tree": sorted(tree), "files": files,
}))
"#;

fn hub_answers(endpoint: &str, repo: &str, rev: &str, variant: &str) -> Value {
    let cache = tempfile::tempdir().unwrap();
    let out = common::python("hub-2.4.0", endpoint, cache.path())
        .args(["-c", HUB_SCRIPT, repo, rev, variant])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "huggingface_hub against {endpoint}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn round_trip_of_the_tgi_project() {
    let a = tgi(TestContext::with_test_control());
    snapshot!("round_trip_lock_a", a.run_ok(&["lock"]));

    let mirror = a.tmp.path().join("mirror");
    let m = mirror.to_str().unwrap();
    // Every kernel of the lock, its files and the totals.
    snapshot!("round_trip_mirror", a.run_ok(&["mirror", ".", "--out", m]));

    // B answers `kernels lock` and `kernels download` exactly as A.
    let b = tgi(TestContext::with_mirror(&mirror));
    snapshot!("round_trip_lock_b", b.run_ok(&["lock"]));
    assert_eq!(
        a.lockfile(),
        b.lockfile(),
        "the lock against the mirror differs"
    );
    // Kernels finish, and are reported, in any order.
    let download = |p: &TestContext| {
        sorted_kernel_lines(&p.run_ok(&["download", "--all-variants"]).snapshot_text())
    };
    snapshot!("round_trip_download_a", download(&a));
    snapshot!("round_trip_download_b", download(&b));
    let (tree_a, tree_b) = (tree(&a.cache), tree(&b.cache));
    assert_eq!(
        tree_a.keys().collect::<Vec<_>>(),
        tree_b.keys().collect::<Vec<_>>()
    );
    assert!(tree_a == tree_b, "the caches differ");
    snapshot!(
        "round_trip_verify_b",
        b.run_ok(&["verify", "--all-variants"])
    );

    // huggingface_hub gets the same refs (those the mirror keeps), listing and files.
    let lock: Value = serde_json::from_str(&a.lockfile()).unwrap();
    let first = &lock[0];
    let (repo, sha) = (
        first["repo_id"].as_str().unwrap(),
        first["sha"].as_str().unwrap(),
    );
    let variant = first["variants"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap();
    let from_a = hub_answers(a.endpoint(), repo, sha, variant);
    let from_b = hub_answers(b.endpoint(), repo, sha, variant);
    assert_eq!(from_a["tree"], from_b["tree"]);
    assert_eq!(from_a["files"], from_b["files"]);
    assert!(!from_b["files"].as_object().unwrap().is_empty());
    for kind in ["branches", "tags"] {
        for (name, target) in from_b[kind].as_object().unwrap() {
            assert_eq!(&from_a[kind][name], target, "{kind} {name}");
        }
    }
    assert!(
        from_b["tags"]
            .as_object()
            .unwrap()
            .values()
            .any(|t| t == sha)
    );

    // Re-running fetches nothing ("0 new commit(s)"): no file request reaches A.
    control(a.endpoint(), reqwest::Method::POST, "reset", None);
    snapshot!(
        "round_trip_mirror_again",
        a.run_ok(&["mirror", ".", "--out", m])
    );
    let log = control(a.endpoint(), reqwest::Method::GET, "requests", None);
    let fetches: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["listener"] == "cdn"
                // A substring check on a logged request's path, not on output.
                || ["/resolve/", "/tree/"]
                    .iter()
                    .any(|p| r["path"].as_str().unwrap_or("").contains(p))
        })
        .collect();
    assert!(fetches.is_empty(), "re-run fetched: {fetches:?}");
}

#[test]
fn named_repos_all_refs_and_interrupted_runs() {
    let a = TestContext::with_test_control();
    let out = a.tmp.path().join("out");
    let m = out.to_str().unwrap();
    let repo = "kernels-community/rotary";
    snapshot!(
        "named_repo_at_tag",
        a.run_ok(&["mirror", &format!("{repo}@v0.0.2"), "--out", m])
    );
    let repo_dir = out.join("repos/kernels").join(repo);
    let before = tree(&repo_dir);

    // Every file fetch fails: the run stops, the mirror is as it was and loads.
    control(
        a.endpoint(),
        reqwest::Method::POST,
        "faults",
        Some(json!({"listener": "cdn", "status": 404})),
    );
    let failed = a.run(&["mirror", repo, "--all-refs", "--out", m]);
    assert_eq!(failed.status.code(), Some(1));
    snapshot!("all_refs_file_fetches_fail", failed);
    assert!(tree(&repo_dir) == before, "a failed run changed the mirror");
    drop(common::Server::start(&out));

    control(a.endpoint(), reqwest::Method::DELETE, "faults", None);
    snapshot!(
        "all_refs",
        a.run_ok(&["mirror", repo, "--all-refs", "--out", m])
    );
    let b = common::Server::start(&out);
    let refs = |endpoint: &str| {
        request(
            reqwest::Method::GET,
            &format!("{endpoint}/api/kernels/{repo}/refs"),
            None,
        )
    };
    assert_eq!(refs(a.endpoint()), refs(&b.endpoint));
}

#[test]
fn bad_input_writes_nothing() {
    let context = TestContext::new();
    let out = tempfile::tempdir().unwrap();

    // A non-empty folder that is not a mirror.
    fs_err::write(out.path().join("notes.txt"), "mine").unwrap();
    let o = context.run(&[
        "mirror",
        "kernels-community/rotary",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    snapshot!("out_is_not_a_mirror", o);
    assert_eq!(fs_err::read_dir(out.path()).unwrap().count(), 1);

    // A repository or a revision that does not exist.
    let fresh = out.path().join("new");
    let f = fresh.to_str().unwrap();
    for (spec, name) in [
        ("kernels-community/no-such-kernel", "missing_repository"),
        ("kernels-community/rotary@v9.9.9", "missing_revision"),
    ] {
        snapshot!(name, context.run(&["mirror", spec, "--out", f]));
        assert!(!fresh.exists(), "{spec}: the output was created");
    }
}
