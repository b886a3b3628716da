//! The target runtime's digest receipts (issue 41, item 3): after its own
//! full check, `kernels download` for a 0.18/0.19 target writes the receipt
//! that runtime writes after its first verified load, with the same name and
//! bytes (compared live with what 0.19.1 and 0.18.3 write into a cache of
//! their own), and the runtime then loads the variant from our cache without
//! hashing it. A 0.17 target gets none, and `--no-runtime-receipts` or
//! `runtime-receipts = false` under `[tool.kernels]` turn them off;
//! `cache ls` lists no repository for the folder and `cache prune` removes
//! the receipts of variants gone from the cache.

use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_test_support::{self as common, MirrorFile, TestContext, assert_ok, so_bytes};

const REPO: &str = "acme/good";
const SHA: &str = "abababababababababababababababababababab";
const VARIANT: &str = "torch-cpu";

/// The variant's files and its `metadata.json` with their sha256 digest
/// (base64, as kernel-builder writes it).
fn mirror_files() -> Vec<MirrorFile> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let built: Vec<(&str, Vec<u8>)> = vec![
        ("__init__.py", b"from ._ops import OPS\n".to_vec()),
        ("_ops.py", b"OPS = 2\n".to_vec()),
        ("_lib.so", so_bytes(11, 4_000)),
    ];
    let digest: serde_json::Map<String, serde_json::Value> = built
        .iter()
        .map(|(path, content)| {
            let hash = sha2::Sha256::digest(content);
            let hash = base64::engine::general_purpose::STANDARD.encode(hash);
            ((*path).to_owned(), hash.into())
        })
        .collect();
    let metadata = serde_json::json!({
        "name": "good", "id": "_good_cpu_5e1f7a9", "version": 1,
        "license": "apache-2.0", "python-depends": [], "backend": {"type": "cpu"},
        "digest": {"algorithm": "sha256", "files": digest},
    });
    built
        .into_iter()
        .chain([("metadata.json", format!("{metadata:#}\n").into_bytes())])
        .map(|(path, content)| MirrorFile {
            path: format!("build/{VARIANT}/{path}"),
            content,
        })
        .collect()
}

fn context() -> TestContext {
    let p = TestContext::with_generated_mirror(
        |mirror| {
            common::write_repo(mirror, REPO, SHA, &mirror_files());
            let toml = mirror.join("repos/kernels").join(REPO).join("repo.toml");
            let text = fs_err::read_to_string(&toml).unwrap();
            fs_err::write(
                &toml,
                text.replace("main = \"c1\"", "main = \"c1\"\nv1 = \"c1\""),
            )
            .unwrap();
        },
        &[],
    );
    p.lock_b(&[(REPO, SHA)]);
    p
}

/// `kernels download --all-variants --cache-dir CACHE --target-runtime RUNTIME ARGS`.
fn download(p: &TestContext, cache: &Path, runtime: &str, args: &[&str]) -> Output {
    let mut all = vec!["--all-variants", "--target-runtime", runtime, "--cache-dir"];
    let cache = cache.display().to_string();
    all.push(&cache);
    all.extend_from_slice(args);
    p.download(&all)
}

/// The runtime receipts under `cache`, by file name, with their bytes.
fn receipts(cache: &Path) -> Vec<(String, Vec<u8>)> {
    let dir = cache.join(".verified-kernels/digest/v1");
    let Ok(entries) = fs_err::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, fs_err::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// What `runtime` does loading `acme/good` offline from `cache`
/// (`get_kernel(…, revision=SHA)`): `OPS=<value>` on success, else the
/// exception's class and message.
fn runtime_load(p: &TestContext, runtime: &str, cache: &Path) -> String {
    let script = format!(
        r#"
import kernels
try:
    module = kernels.get_kernel("{REPO}", revision="{SHA}")
    print("OPS=" + str(module.OPS))
except Exception as err:
    print("ERR " + type(err).__name__ + ": " + str(err))
"#
    );
    let mut cmd = common::python(&format!("kernels-{runtime}"), &p.server.endpoint, cache);
    cmd.env("HF_HUB_OFFLINE", "1")
        .env("KERNELS_CACHE", cache)
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .env("STUB_TORCH_VERSION", "2.10.0")
        .env_remove("HF_HUB_DISABLE_TELEMETRY")
        .args(["-c", &script]);
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        out.status.success() && !text.is_empty(),
        "{runtime} load: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Replaces the cached `_ops.py` of the variant by a regular file that the
/// digest does not allow.
fn tamper(cache: &Path) -> PathBuf {
    let path = cache
        .join("kernels--acme--good/snapshots")
        .join(SHA)
        .join("build")
        .join(VARIANT)
        .join("_ops.py");
    fs_err::remove_file(&path).unwrap();
    fs_err::write(&path, b"OPS = 3\n").unwrap();
    path
}

fn receipt_matches_the_runtime_s(runtime: &str) {
    let p = context();
    let ours = p.tmp.path().join("ours");
    let theirs = p.tmp.path().join("theirs");
    assert_ok(&download(&p, &ours, runtime, &[]));
    let written = receipts(&ours);
    assert_eq!(written.len(), 1, "{written:?}");

    // The runtime writes its own after hashing the variant in a cache
    // without ours.
    assert_ok(&download(&p, &theirs, runtime, &["--no-runtime-receipts"]));
    assert_eq!(receipts(&theirs), []);
    assert_eq!(runtime_load(&p, runtime, &theirs), "OPS=2");
    assert_eq!(
        receipts(&theirs),
        written,
        "{runtime} wrote another receipt"
    );

    // Ours makes it skip hashing: an edited file loads (what `kernels
    // verify` exists to catch); without the receipt the same edit fails the
    // runtime's digest check.
    tamper(&ours);
    assert_eq!(runtime_load(&p, runtime, &ours), "OPS=3");
    tamper(&theirs);
    fs_err::remove_dir_all(theirs.join(".verified-kernels")).unwrap();
    let refused = runtime_load(&p, runtime, &theirs);
    assert!(refused.starts_with("ERR "), "{refused}");
}

#[test]
fn download_for_0_19_writes_the_receipt_0_19_writes_and_loads_without_hashing() {
    receipt_matches_the_runtime_s("0.19.1");
}

#[test]
fn download_for_0_18_writes_the_receipt_0_18_writes_and_loads_without_hashing() {
    receipt_matches_the_runtime_s("0.18.3");
}

#[test]
fn no_receipt_for_0_17_nor_when_turned_off() {
    let p = context();
    let cache = p.tmp.path().join("c17");
    assert_ok(&download(&p, &cache, "0.17.2", &[]));
    assert!(!cache.join(".verified-kernels").exists());

    p.write(
        "pyproject.toml",
        "[tool.kernels]\nruntime-receipts = false\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n",
    );
    let cache = p.tmp.path().join("key");
    assert_ok(&download(&p, &cache, "0.19.1", &[]));
    assert!(!cache.join(".verified-kernels").exists());
}

#[test]
fn cache_ls_and_prune_handle_the_receipts_folder() {
    let p = context();
    let cache = p.tmp.path().join("cache");
    assert_ok(&download(&p, &cache, "0.19.1", &[]));
    let [(key, _)] = receipts(&cache).try_into().unwrap();
    let cache_dir = cache.display().to_string();
    let ls = p.run_ok(&["cache", "ls", "--cache-dir", &cache_dir, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
    let repos: Vec<&str> = doc["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["repo_id"].as_str().unwrap())
        .collect();
    assert_eq!(repos, [REPO]);

    // The snapshot is there: prune keeps the receipt.
    p.run_ok(&["cache", "prune", "--cache-dir", &cache_dir]);
    assert_eq!(receipts(&cache).len(), 1);
    // The snapshot is gone (as `hf cache rm` leaves it): the receipt goes.
    fs_err::remove_dir_all(cache.join("kernels--acme--good/snapshots")).unwrap();
    let pruned = p.run_ok(&["cache", "prune", "--cache-dir", &cache_dir]);
    let printed = String::from_utf8_lossy(&pruned.stdout);
    let path = cache.join(".verified-kernels/digest/v1").join(&key);
    assert!(
        printed.lines().any(|l| l == path.display().to_string()),
        "{printed}"
    );
    assert_eq!(receipts(&cache), []);
}

/// Issue 41, item 4: the runtime's variables under which it loads something
/// other than the lock pins are named once by `env`, `check` and `download`
/// (a `note:` line on stderr, `runtime_overrides` in JSON), and not at all
/// when unset.
#[test]
fn env_check_and_download_name_the_runtime_s_overrides_once() {
    let p = context();
    let cache = p.tmp.path().join("cache");
    let cache_dir = cache.display().to_string();
    let set = [
        ("UNSTABLE_KERNELS_ALL_LATEST", "1"),
        ("LOCAL_KERNELS", "acme/good=/src/good"),
    ];
    let project = p.project.display().to_string();
    let commands: [&[&str]; 3] = [
        &[
            "download",
            &project,
            "--all-variants",
            "--cache-dir",
            &cache_dir,
        ],
        &["env"],
        &["check", &project, "--cache-dir", &cache_dir],
    ];
    for args in commands {
        let mut cmd = p.kernels();
        cmd.args(args).envs(set);
        let text = String::from_utf8_lossy(&cmd.output().unwrap().stderr).into_owned();
        for (name, _) in set {
            let notes = text
                .lines()
                .filter(|l| l.starts_with(&format!("note: {name} is set: ")))
                .count();
            assert_eq!(notes, 1, "{args:?}: {text}");
        }
        let quiet = p.kernels().args(args).output().unwrap();
        let quiet = String::from_utf8_lossy(&quiet.stderr).into_owned();
        // A negative check: no note of any wording may appear.
        assert!(!quiet.contains("is set: "), "{args:?}: {quiet}");
    }
    for args in [
        &[
            "download",
            &project,
            "--all-variants",
            "--cache-dir",
            &cache_dir,
        ][..],
        &["env"],
    ] {
        let mut cmd = p.kernels();
        cmd.args(args).args(["--format", "json"]).envs(set);
        let out = cmd.output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        let names: Vec<&str> = doc["runtime_overrides"]
            .as_array()
            .unwrap_or_else(|| panic!("{args:?}: {doc}"))
            .iter()
            .map(|o| o["variable"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["UNSTABLE_KERNELS_ALL_LATEST", "LOCAL_KERNELS"]);
        assert_eq!(doc["runtime_overrides"][1]["value"], "acme/good=/src/good");
        let plain = p
            .kernels()
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
        assert!(plain.get("runtime_overrides").is_none(), "{plain}");
    }
}
