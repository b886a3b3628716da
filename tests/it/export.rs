//! `kernels export`: CycloneDX 1.5, SPDX 2.3 and JSON documents of what the
//! lock pins, validated against the published schemas (vendored in
//! `tests/schemas/`, checked with `jsonschema` of the `sbom-tools` reference
//! environment), one component per locked variant, identical on a rerun.

use std::collections::BTreeSet;
use std::process::Output;

use serde_json::Value;

use kernels_test_support::{self as common, TestContext, pyref_python, snapshot, stderr};

/// The bundled mirror's project with `kernels-community/relu`,
/// `kernels-test/versions` and `kernels-test/kernel-deps` (which needs
/// `kernels-community/einops`, a 0.17 lock's transitive entry).
const PROJECT: &str = "kernels-tests-kernel_locking-97dab31e";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The component of `doc` (the `json` format) for `repo`.
fn component<'a>(doc: &'a Value, repo: &str) -> &'a Value {
    doc["components"]
        .as_array()
        .expect("components")
        .iter()
        .find(|c| c["repo_id"] == repo)
        .unwrap_or_else(|| panic!("a component for {repo}"))
}

/// `kernels export --format <format> <extra…>`, which must succeed; its stdout.
fn export(context: &TestContext, format: &str, extra: &[&str]) -> String {
    let mut args = vec!["export", "--format", format];
    args.extend_from_slice(extra);
    stdout(&context.run_ok(&args))
}

/// Validates `document` against the `kind` (`cyclonedx` or `spdx`) schema;
/// panics with every error the validator names.
fn assert_valid(kind: &str, document: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(format!("{kind}.json"));
    fs_err::write(&path, document).unwrap();
    let root = common::repo_root();
    let out = std::process::Command::new(pyref_python("sbom-tools"))
        .arg(root.join("tests/python/validate_sbom.py"))
        .arg(kind)
        .arg(&path)
        .arg(root.join("tests/schemas"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{kind} document is not valid:\n{}",
        stderr(&out)
    );
}

/// Every `(repo, commit, variant)` a variant-hash lock pins.
fn locked_variants(lock: &str) -> BTreeSet<(String, String, String)> {
    let lock: Value = serde_json::from_str(lock).unwrap();
    let mut out = BTreeSet::new();
    for entry in lock.as_array().unwrap() {
        for variant in entry["variants"].as_object().unwrap().keys() {
            out.insert((
                entry["repo_id"].as_str().unwrap().to_owned(),
                entry["sha"].as_str().unwrap().to_owned(),
                variant.clone(),
            ));
        }
    }
    out
}

/// The `(repo, commit, variant)` of every component of a JSON export.
fn exported(doc: &Value) -> BTreeSet<(String, String, String)> {
    doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().unwrap().to_owned();
            (field("repo_id"), field("commit"), field("variant"))
        })
        .collect()
}

/// The variant directories of `repo` at `commit` in the bundled mirror.
fn mirror_variants(repo: &str, commit: &str) -> usize {
    let commits = common::mirror_dir()
        .join("repos/kernels")
        .join(repo)
        .join("commits");
    for dir in fs_err::read_dir(&commits).unwrap() {
        let dir = dir.unwrap().path();
        let meta = fs_err::read_to_string(dir.join("commit.toml")).unwrap();
        // A substring check on a mirror file (not every commit.toml names its sha).
        if meta.contains(commit) {
            return fs_err::read_dir(dir.join("tree/build"))
                .unwrap()
                .filter(|e| {
                    let name = e.as_ref().unwrap().file_name();
                    let name = name.to_string_lossy();
                    name.starts_with("torch") && name != "torch-ext"
                })
                .count();
        }
    }
    panic!("{repo}@{commit} is not in the mirror");
}

#[test]
fn a_variant_hash_lock_exports_every_locked_variant_in_three_valid_formats() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
    context.run_ok(&["download", "--all-variants"]);
    let locked = locked_variants(&context.lockfile());
    assert!(locked.len() > 50, "{locked:?}");

    // Offline, from the cache alone: a Hub that cannot be reached is not asked.
    let offline = |format: &str| {
        let out = context
            .kernels_without_hub()
            .args(["export", "--offline", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let json: Value = serde_json::from_str(&offline("json")).unwrap();
    assert_eq!(exported(&json), locked);
    assert_eq!(json["lock"]["format"], "variant-hash");
    for c in json["components"].as_array().unwrap() {
        assert_eq!(c["metadata"]["state"], "read", "{c:#}");
        assert_eq!(c["metadata"]["read_from"], "cache", "{c:#}");
        assert!(c["variant_hash"].as_str().unwrap().starts_with("sha256-"));
        assert_eq!(c["signer"]["status"], "unknown");
    }
    let relu = component(&json, "kernels-community/relu");
    assert_eq!(relu["metadata"]["license"], "apache-2.0");
    assert!(
        relu["purl"]
            .as_str()
            .unwrap()
            .starts_with("pkg:huggingface/kernels-community/relu@d649efb5")
    );

    let cyclonedx = offline("cyclonedx");
    assert_valid("cyclonedx", &cyclonedx);
    let bom: Value = serde_json::from_str(&cyclonedx).unwrap();
    assert_eq!(bom["components"].as_array().unwrap().len(), locked.len());
    assert!(bom["metadata"].get("timestamp").is_none());
    let first = &bom["components"][0];
    assert_eq!(first["hashes"][0]["alg"], "SHA-256");
    assert_eq!(first["licenses"][0]["license"]["id"], "Apache-2.0");

    let spdx = offline("spdx");
    assert_valid("spdx", &spdx);
    let doc: Value = serde_json::from_str(&spdx).unwrap();
    assert_eq!(doc["packages"].as_array().unwrap().len(), locked.len());
    assert_eq!(doc["relationships"].as_array().unwrap().len(), locked.len());

    // Reruns are byte-identical, to stdout or to --output.
    assert_eq!(offline("cyclonedx"), cyclonedx);
    assert_eq!(offline("spdx"), spdx);
    let file = context.tmp.path().join("bom.json");
    let out = context.run_ok(&["export", "--offline", "-o", file.to_str().unwrap()]);
    assert!(stdout(&out).is_empty());
    assert_eq!(fs_err::read_to_string(&file).unwrap(), cyclonedx);
}

#[test]
fn source_date_epoch_fixes_the_time_and_another_lock_another_serial_number() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
    let plain: Value = serde_json::from_str(&export(&context, "cyclonedx", &[])).unwrap();
    let dated = context
        .kernels()
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .args(["export", "--format", "cyclonedx"])
        .output()
        .unwrap();
    assert!(dated.status.success(), "{}", stderr(&dated));
    let dated: Value = serde_json::from_slice(&dated.stdout).unwrap();
    assert_eq!(dated["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
    assert_ne!(dated["serialNumber"], plain["serialNumber"]);
    let spdx: Value = serde_json::from_str(&export(
        &context,
        "spdx",
        &["--source-date-epoch", "1700000000"],
    ))
    .unwrap();
    assert_eq!(spdx["creationInfo"]["created"], "2023-11-14T22:13:20Z");

    // Pinning fewer kernels changes the document, and so its serial number.
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n",
    );
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
    let fewer: Value = serde_json::from_str(&export(&context, "cyclonedx", &[])).unwrap();
    assert_ne!(fewer["serialNumber"], plain["serialNumber"]);
    assert_eq!(fewer["components"].as_array().unwrap().len(), 4);
}

#[test]
fn a_kernel_locks_lock_exports_the_variants_of_each_locked_commit() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    context.run_ok(&["lock", "--target-runtime", "0.17.2"]);
    let lock: Value = serde_json::from_str(&context.lockfile()).unwrap();
    let entries = lock.as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["dependency"]["repo-id"] == "kernels-community/einops")
    );
    let expected: usize = entries
        .iter()
        .map(|e| {
            mirror_variants(
                e["dependency"]["repo-id"].as_str().unwrap(),
                e["lock"]["commit"].as_str().unwrap(),
            )
        })
        .sum();

    // Offline with nothing cached: a 0.17 lock names no variants.
    // Each kernel "is not in the cache", with `kernels download --all-variants`.
    snapshot!(
        "kernel_locks_offline_uncached",
        context
            .kernels_without_hub()
            .args(["export", "--offline"])
            .output()
            .unwrap()
    );

    // Not cached: the Hub's listing.
    let online: Value = serde_json::from_str(&export(&context, "json", &[])).unwrap();
    assert_eq!(online["lock"]["format"], "kernel-locks");
    assert_eq!(online["components"].as_array().unwrap().len(), expected);
    let einops = component(&online, "kernels-community/einops");
    assert_eq!(einops["metadata"]["read_from"], "hub");
    assert_eq!(
        einops["metadata"]["upstream"],
        "https://github.com/arogozhnikov/einops.git"
    );
    assert!(einops["variant_hash"].is_null());
    let versions = component(&online, "kernels-test/versions");
    assert_eq!(versions["requested"], serde_json::json!(["version 2"]));
    let bom = export(&context, "cyclonedx", &[]);
    assert_valid("cyclonedx", &bom);
    let bom: Value = serde_json::from_str(&bom).unwrap();
    let einops = bom["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "einops")
        .unwrap();
    assert_eq!(einops["licenses"][0]["license"]["id"], "MIT");
    assert_eq!(einops["externalReferences"][0]["type"], "vcs");
    assert_valid("spdx", &export(&context, "spdx", &[]));

    // Downloaded: the same components from the cache, without the Hub.
    context.run_ok(&["download", "--all-variants"]);
    let out = context
        .kernels_without_hub()
        .args(["export", "--offline", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let cached: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exported(&cached), exported(&online));
    assert!(
        cached["components"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["metadata"]["read_from"] == "cache")
    );
    // `--online` reads the Hub again, and says the same about each variant.
    let again: Value = serde_json::from_str(&export(&context, "json", &["--online"])).unwrap();
    for (a, b) in again["components"]
        .as_array()
        .unwrap()
        .iter()
        .zip(cached["components"].as_array().unwrap())
    {
        assert_eq!(a["metadata"]["read_from"], "hub");
        assert_eq!(a["metadata"]["sha256"], b["metadata"]["sha256"], "{a:#}");
        assert_eq!(
            a["metadata"]["git_blob"], b["metadata"]["git_blob"],
            "{a:#}"
        );
    }
}

#[test]
fn an_uncached_variant_hash_lock_offline_lists_its_variants_with_a_warning() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
    let out = context
        .kernels_without_hub()
        .args(["export", "--offline", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    snapshot!("variant_hash_offline_uncached_stderr", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(exported(&doc), locked_variants(&context.lockfile()));
    assert_eq!(doc["components"][0]["metadata"]["state"], "unknown");
}

#[test]
fn a_missing_lock_is_a_clear_error() {
    let context = TestContext::new().with_fixture_project(PROJECT);
    // "no kernels.lock in …", naming `kernels lock`; nothing on stdout.
    snapshot!("missing_lock", context.run(&["export", "--format", "spdx"]));
    // "--online asks the Hub".
    snapshot!(
        "online_while_offline",
        context
            .kernels()
            .env("HF_HUB_OFFLINE", "1")
            .args(["export", "--online"])
            .output()
            .unwrap()
    );
}
