//! The `digest` of a variant's `metadata.json` (kernel-builder >= 0.16)
//! checked wherever a variant is used: `download` (before anything of the
//! variant is linked, and a fetched file that differs never becomes a blob),
//! `verify` and `download --offline`, `mirror`, `to-wheel` and `check`;
//! with both lock formats. The mirror is generated: one `torch-cpu` variant
//! per kernel, its digest computed from the intended files, then the served
//! tree changed per kernel. `acme/good` is signed by the test Sigstore
//! (its trusted root passed with `--trust-root`); the others are unsigned,
//! so that a digest mismatch is the digest's error.

use std::path::{Path, PathBuf};
use std::process::Output;

use base64::Engine as _;
use kernels_test_support::sigstore::{TestIdentity, TestSigstore};
use kernels_test_support::{
    self as common, MirrorFile, Server, TestContext, assert_ok, snapshot, snapshot_paths, so_bytes,
    stderr,
};

const VARIANT: &str = "torch-cpu";

/// Commit of `acme/<name>`: the kernel's letter repeated.
fn sha(name: &str) -> String {
    let letter = match name {
        "good" => 'a',
        "py-changed" => 'b',
        "so-changed" => 'c',
        "missing" => 'd',
        _ => 'e',
    };
    letter.to_string().repeat(40)
}

/// The files the kernel was built with, relative to the variant.
fn built_files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("__init__.py", b"from ._ops import OPS\n".to_vec()),
        ("_ops.py", b"OPS = 2\n".to_vec()),
        ("_lib.so", so_bytes(7, 5_000)),
    ]
}

/// `metadata.json` with the sha256 digest of `files` (base64, as the builder
/// writes it).
fn metadata(name: &str, files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use sha2::Digest as _;
    let digest: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .map(|(path, content)| {
            let hash =
                base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(content));
            ((*path).to_owned(), hash.into())
        })
        .collect();
    let doc = serde_json::json!({
        "name": name, "id": format!("_{}_cpu_5e1f7a9", name.replace('-', "_")),
        "version": 1, "license": "apache-2.0", "python-depends": [],
        "backend": {"type": "cpu"},
        "digest": {"algorithm": "sha256", "files": digest},
    });
    format!("{doc:#}\n").into_bytes()
}

/// The served files of `acme/<name>`: the built files changed as the name
/// says, bytecode (never in a digest), the metadata and a signature bundle.
fn served_files(name: &str) -> Vec<MirrorFile> {
    let mut digested = built_files();
    let mut served = built_files();
    match name {
        "py-changed" => served[1].1 = b"OPS = 3\n".to_vec(),
        "so-changed" => served[2].1[100] ^= 1,
        "missing" => digested.push(("gone.py", b"x\n".to_vec())),
        "extra" => served.push(("extra.py", b"import os\n".to_vec())),
        _ => {}
    }
    served.push(("__pycache__/__init__.cpython-312.pyc", b"bytecode".to_vec()));
    served.push(("metadata.json", metadata(name, &digested)));
    if name == "good" {
        served.push(("metadata.json.sigstore", good_bundle()));
    }
    served
        .into_iter()
        .map(|(path, content)| MirrorFile {
            path: format!("build/{VARIANT}/{path}"),
            content,
        })
        .collect()
}

thread_local! {
    /// The test Sigstore of the test, and `acme/good`'s bundle (signed once,
    /// so that every copy has the same bytes).
    static SIGNED: (TestSigstore, Vec<u8>) = {
        let sigstore = TestSigstore::new();
        let identity = TestIdentity::kernels_community("build");
        let bundle = sigstore.sign(&metadata("good", &built_files()), &identity);
        (sigstore, bundle.into_bytes())
    };
}

fn good_bundle() -> Vec<u8> {
    SIGNED.with(|(_, bundle)| bundle.clone())
}

/// `kernels download <project> --trust-root <the test root> <args>`.
fn download(p: &TestContext, args: &[&str]) -> Output {
    let root = trust_root(p);
    let mut all = vec!["--trust-root", root.as_str()];
    all.extend_from_slice(args);
    p.download(&all)
}

/// The test Sigstore's trusted root, written next to the project.
fn trust_root(p: &TestContext) -> String {
    let path = p.tmp.path().join("trusted_root.json");
    if !path.is_file() {
        SIGNED.with(|(sigstore, _)| sigstore.write_trusted_root(&path));
    }
    path.display().to_string()
}

const KERNELS: &[&str] = &["good", "py-changed", "so-changed", "missing", "extra"];

/// A mirror of every kernel of [`KERNELS`], with a `v1` branch each; `acme`
/// is a trusted publisher (a first lock is checked for one).
fn write_mirror(mirror: &Path) {
    common::write_trusted_org(mirror, "acme");
    for name in KERNELS {
        let repo = format!("acme/{name}");
        common::write_repo(mirror, &repo, &sha(name), &served_files(name));
        let toml = mirror.join("repos/kernels").join(&repo).join("repo.toml");
        let text = fs_err::read_to_string(&toml).unwrap();
        fs_err::write(
            &toml,
            text.replace("main = \"c1\"", "main = \"c1\"\nv1 = \"c1\""),
        )
        .unwrap();
    }
}

fn context() -> TestContext {
    TestContext::with_generated_mirror(write_mirror, &[])
}

/// The cached variant directory of `acme/<name>`.
fn variant_dir(p: &TestContext, name: &str) -> PathBuf {
    p.repo_dir("kernel", &format!("acme/{name}"))
        .join("snapshots")
        .join(sha(name))
        .join("build")
        .join(VARIANT)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The test Sigstore signs with fresh keys each run, so a hash over a
/// variant's files (its signature bundle among them) varies from run to run.
const BUNDLE_HASHES: &[(&str, &str)] = &[(r"sha256-[0-9a-f]{64}", "sha256-[HASH]")];

/// Exit 1 (in the snapshot `name` of the whole output).
fn assert_refused(name: &str, out: &Output) {
    let text = format!("{}{}", stdout(out), stderr(out));
    assert_eq!(out.status.code(), Some(1), "{text}");
    snapshot!(name, out, BUNDLE_HASHES);
}

/// Replaces the cached link at `relative` in the variant by a regular file.
fn plant(p: &TestContext, relative: &str, content: &[u8]) {
    let path = variant_dir(p, "good").join(relative);
    let _ = fs_err::remove_file(&path);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

#[test]
fn a_planted_file_is_refused_offline_with_a_0_17_lock() {
    let p = context();
    p.lock_b(&[("acme/good", &sha("good"))]);
    assert_ok(&download(&p, &["--all-variants"]));
    assert_ok(&p.verify(&["--all-variants"]));
    // Bytecode is never in a digest: a new one changes nothing.
    plant(&p, "__pycache__/_ops.cpython-312.pyc", b"other bytecode");
    assert_ok(&p.verify(&["--all-variants"]));

    // The issue's case: the loaded `__init__.py` replaced in the cache.
    plant(&p, "__init__.py", b"raise SystemExit(\"planted\")\n");
    // "File hash mismatch for __init__.py", online and offline.
    assert_refused("digest_verify_planted", &p.verify(&["--all-variants"]));
    let offline = download(&p, &["--all-variants", "--offline"]);
    assert_refused("digest_download_offline_planted", &offline);
    let doc: serde_json::Value =
        serde_json::from_slice(&p.verify(&["--all-variants", "--format", "json"]).stdout).unwrap();
    assert_eq!(
        doc["kernels"][0]["problems"][0]["problem"], "digest",
        "{doc}"
    );

    // An added file and a removed one are named too.
    plant(&p, "evil.py", b"import os\n");
    fs_err::remove_file(variant_dir(&p, "good").join("_ops.py")).unwrap();
    // "Unknown file: evil.py", "Missing file: _ops.py".
    assert_refused(
        "digest_verify_added_and_removed",
        &p.verify(&["--all-variants"]),
    );

    // Online, download names the planted file ("Unknown file: evil.py") and
    // links nothing of the refused variant (the removed file stays missing)
    // until it is removed.
    assert_refused(
        "digest_download_added_and_removed",
        &download(&p, &["--all-variants"]),
    );
    let ops = variant_dir(&p, "good").join("_ops.py");
    assert!(fs_err::symlink_metadata(&ops).is_err(), "linked");
    fs_err::remove_file(variant_dir(&p, "good").join("evil.py")).unwrap();
    assert_ok(&download(&p, &["--all-variants"]));
    assert_ok(&p.verify(&["--all-variants"]));
}

#[test]
fn download_refuses_served_files_that_differ_from_the_digest_and_caches_none() {
    let p = context();
    // Each names the variant, and "File hash mismatch for _ops.py" (_lib.so),
    // "Missing file: gone.py", "Unknown file: extra.py".
    for name in ["py-changed", "so-changed", "missing", "extra"] {
        let repo = format!("acme/{name}");
        p.lock_b(&[(&repo, &sha(name))]);
        let out = download(&p, &["--all-variants"]);
        assert_refused(&format!("digest_served_{name}"), &out);
        let dir = p.repo_dir("kernel", &repo);
        let snapshot = dir.join("snapshots").join(sha(name));
        assert!(
            !snapshot.exists() || snapshot_paths(&dir, &sha(name)).is_empty(),
            "{name}: linked {:?}",
            snapshot_paths(&dir, &sha(name))
        );
        // The changed file never became a blob.
        let changed = match name {
            "py-changed" => "_ops.py",
            "so-changed" => "_lib.so",
            _ => continue,
        };
        let file = served_files(name)
            .into_iter()
            .find(|f| f.path.ends_with(changed))
            .unwrap();
        assert!(
            !dir.join("blobs").join(file.etag()).exists(),
            "{name}: blob kept"
        );
    }
    // JSON names the error and the file.
    p.lock_b(&[("acme/py-changed", &sha("py-changed"))]);
    let out = download(&p, &["--all-variants", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["failed"][0]["code"], "kernels::download::digest_mismatch",
        "{doc}"
    );
    snapshot!(
        "digest_served_py_changed_json_message",
        doc["failed"][0]["message"].as_str().unwrap()
    );
}

#[test]
fn a_variant_hash_lock_gets_both_checks() {
    let p = context();
    let files = |name: &str| served_files(name);
    // The lock's hash matches what is served, the digest does not.
    let changed = files("py-changed");
    p.lock_a(&[("acme/py-changed", &sha("py-changed"), &changed)]);
    // "File hash mismatch for _ops.py".
    assert_refused(
        "digest_variant_hash_lock_download",
        &download(&p, &["--all-variants"]),
    );
    let good = files("good");
    p.lock_a(&[("acme/good", &sha("good"), &good)]);
    assert_ok(&download(&p, &["--all-variants"]));
    // The warm path (no request) checks the digest too.
    plant(&p, "__init__.py", b"raise SystemExit(\"planted\")\n");
    // "File hash mismatch for __init__.py".
    assert_refused(
        "digest_variant_hash_lock_warm_verify",
        &p.verify(&["--all-variants"]),
    );
    assert_ok(&download(&p, &["--all-variants"]));
    assert_ok(&p.verify(&["--all-variants"]));
}

/// The path of every `metadata.json.sigstore` under `dir`, with its bytes.
fn bundles_under(dir: &Path) -> Vec<Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "metadata.json.sigstore")
        .map(|e| fs_err::read(e.path()).unwrap())
        .collect()
}

#[test]
fn mirror_keeps_signature_bundles_and_refuses_a_changed_variant() {
    let p = context();
    let out = p.tmp.path().join("copy");
    let m = out.to_str().unwrap();
    p.run_ok(&["mirror", "acme/good", "--out", m]);
    assert_eq!(bundles_under(&out.join("repos")), [good_bundle()]);
    // Served from the copy, the bundle reaches the cache unchanged.
    let copy = TestContext::with_server(Server::start(&out));
    copy.lock_b(&[("acme/good", &sha("good"))]);
    assert_ok(&download(&copy, &["--all-variants"]));
    let cached = variant_dir(&copy, "good").join("metadata.json.sigstore");
    assert_eq!(fs_err::read(cached).unwrap(), good_bundle());

    let refused = p.run(&["mirror", "acme/py-changed", "--out", m]);
    // "File hash mismatch for _ops.py".
    assert_refused("digest_mirror_refused", &refused);
    assert!(!out.join("repos/kernels/acme/py-changed").exists());
}

#[test]
fn to_wheel_and_check_refuse_a_changed_variant() {
    let p = context()
        .with_pyproject(
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n",
        )
        .with_stub_torch()
        .with_env("VIRTUAL_ENV", common::pyref_root().join("hub-2.4.0"));
    p.run_ok(&["lock"]);
    p.run_ok(&["download", "--trust-root", &trust_root(&p)]);
    p.run_ok(&["check"]);
    let snapshot_dir = variant_dir(&p, "good")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_owned();
    let wheels = p.tmp.path().join("wheels");
    let to_wheel = |out: &Path| {
        p.kernels()
            .args(["to-wheel", "acme/good", "0.0.1", "--from-dir"])
            .arg(&snapshot_dir)
            .arg("--out-dir")
            .arg(out)
            .output()
            .unwrap()
    };
    fs_err::create_dir_all(&wheels).unwrap();
    assert_ok(&to_wheel(&wheels));

    plant(&p, "_ops.py", b"OPS = 3\n");
    // Each: "File hash mismatch for _ops.py".
    assert_refused("digest_check_refused", &p.run(&["check"]));
    let refused = p.tmp.path().join("refused");
    fs_err::create_dir_all(&refused).unwrap();
    assert_refused("digest_to_wheel_refused", &to_wheel(&refused));
    assert_eq!(
        fs_err::read_dir(&refused).unwrap().count(),
        0,
        "a wheel was written"
    );
}
