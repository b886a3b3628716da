//! `kernels cache ls --json` (issue 41): reference 0.19.1's document, compared
//! with what the reference prints for the same cache.

use kernels_test_support::{self as common, TestContext, assert_ok};

/// The lines of a pretty-printed document without the `last_accessed` ones
/// (reading a file may move its access time between the two runs).
fn without_access_times(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|line| !line.trim_start().starts_with("\"last_accessed\""))
        .map(str::to_owned)
        .collect()
}

#[test]
fn cache_ls_json_matches_reference_0_19_1() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", common::GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants"]));

    let ours = world.run_ok(&["cache", "ls", "--json"]);
    let reference = common::python("kernels-0.19.1", world.endpoint(), &world.cache)
        .arg(common::pyref_root().join("kernels-0.19.1/bin/kernels"))
        .args(["cache", "ls", "--json"])
        .output()
        .unwrap();
    assert!(reference.status.success(), "{}", common::stderr(&reference));

    // Same keys in the same order, same sizes, modification times and variants.
    assert_eq!(
        without_access_times(&ours.stdout),
        without_access_times(&reference.stdout)
    );
    let doc: serde_json::Value = serde_json::from_slice(&ours.stdout).unwrap();
    let repo = &doc["repos"][0];
    assert_eq!(repo["repo_id"], "acme/gelu");
    assert_eq!(repo["versions"][0]["version"], "v1");
    assert!(repo["size_on_disk"].as_u64().unwrap() > 0);
    assert!(repo["last_accessed"].as_f64().unwrap() > 1.0e9);
    assert!(
        !repo["versions"][0]["variants"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
