//! Reference 0.17.2's `verify_variant` (sigstore-python, its `Verifier` built
//! from the test trusted root by `tests/python/verify_signatures.py`) and
//! `kernels_trust::verify_variant` give every fixture of the test Sigstore
//! the same outcome. Needs the `kernels-0.17.2` reference environment
//! (`scripts/pyref-setup`); fails without it.

use std::collections::BTreeMap;

use kernels_test_support::sigstore::TestSigstore;
use kernels_test_support::sigstore::variant::write_fixtures;
use kernels_trust::{SignerPolicy, TrustRoot, verify_variant};

/// Outcome name per fixture directory, from one run of the Python driver.
fn reference_outcomes(
    root: &std::path::Path,
    dirs: &[std::path::PathBuf],
) -> BTreeMap<String, String> {
    let scratch = tempfile::tempdir().unwrap();
    let output =
        kernels_test_support::python("kernels-0.17.2", "http://127.0.0.1:9", scratch.path())
            .env("HF_HUB_OFFLINE", "1")
            .arg(kernels_test_support::repo_root().join("tests/python/verify_signatures.py"))
            .arg(root)
            .args(dirs)
            .output()
            .expect("run the reference's Python");
    assert!(
        output.status.success(),
        "verify_signatures.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&output.stdout).expect("the driver prints JSON");
    results
        .into_iter()
        .map(|(name, result)| {
            let outcome = result["outcome"].as_str().unwrap_or("(none)").to_string();
            let detail = &result["detail"];
            let shown = if detail.is_null() {
                outcome
            } else {
                format!("{outcome}: {detail}")
            };
            (name, shown)
        })
        .collect()
}

#[test]
fn the_reference_agrees_on_every_fixture() {
    let dir = tempfile::tempdir().unwrap();
    let sigstore = TestSigstore::new();
    let root_path = dir.path().join("trusted_root.json");
    sigstore.write_trusted_root(&root_path);
    let root = TrustRoot::from_file(&root_path).unwrap();
    let mut all = sigstore.fixtures();
    all.extend(sigstore.policy_fixtures());
    let fixtures = write_fixtures(&all, &dir.path().join("variants"));
    let dirs: Vec<_> = fixtures.iter().map(|(_, _, path)| path.clone()).collect();
    let reference = reference_outcomes(&root_path, &dirs);
    assert_eq!(reference.len(), fixtures.len(), "{reference:#?}");
    let mut disagreements = Vec::new();
    for (name, expected, path) in &fixtures {
        let ours = verify_variant(path, &root, &SignerPolicy::reference_default());
        let theirs = &reference[name];
        let theirs_name = theirs.split(':').next().unwrap_or_default();
        if ours.name() != theirs_name || theirs_name != *expected {
            disagreements.push(format!(
                "{name}: expected {expected}, ours {ours:?}, reference {theirs}"
            ));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
