//! The lock lifecycle's edges (issue 23, item 5): `--check` / `--locked` with
//! an upgrade, `-P` spelled in another case, `remove X X`, and `-P` of one
//! entry while another entry's tag was deleted upstream.

use kernels_test_support::{Server, TestContext, snapshot};

use crate::sticky::{commit_of, copy_dir, edited_mirror, manifest};

const VERSIONS: &str = "kernels-test/versions";

#[test]
fn check_and_locked_refuse_an_upgrade() {
    let context = TestContext::new()
        .with_pyproject(&manifest(&format!("\"{VERSIONS}\" = \">=0.1.0,<0.2\"\n")));
    context.run_ok(&["lock"]);
    context.write(
        "pyproject.toml",
        &manifest(&format!("\"{VERSIONS}\" = \">=0.1.0\"\n")),
    );
    // The lock is sticky-fresh, but `-U` would move it: never "up to date".
    snapshot!("check_upgrade", context.run(&["lock", "--check", "-U"]));
    snapshot!(
        "locked_upgrade_package",
        context.run(&["lock", "--locked", "-P", VERSIONS])
    );
    snapshot!(
        "upgrade_dry_run",
        context.run_ok(&["lock", "-U", "--dry-run"])
    );
}

#[test]
fn upgrade_package_matches_without_case() {
    let context = TestContext::new()
        .with_pyproject(&manifest(&format!("\"{VERSIONS}\" = \">=0.1.0,<0.2\"\n")));
    context.run_ok(&["lock"]);
    context.write(
        "pyproject.toml",
        &manifest(&format!("\"{VERSIONS}\" = \">=0.1.0\"\n")),
    );
    snapshot!(
        "upgrade_package_other_case",
        context.run_ok(&["lock", "-P", "Kernels-Test/VERSIONS"])
    );
    let v020 = commit_of(context.endpoint(), VERSIONS, "v0.2.0");
    assert!(context.lockfile().contains(&v020));
}

#[test]
fn remove_named_twice_removes_it() {
    let context = TestContext::new().with_pyproject(&manifest(&format!(
        "\"{VERSIONS}\" = 1\n\"kernels-community/relu\" = 1\n"
    )));
    snapshot!(
        "remove_twice",
        context.run_ok(&["remove", VERSIONS, "Kernels-Test/Versions"])
    );
    assert_eq!(
        context.read("pyproject.toml"),
        manifest("\"kernels-community/relu\" = 1\n")
    );
}

#[test]
fn upgrade_package_keeps_an_entry_whose_tag_was_deleted() {
    let mut context = TestContext::new().with_pyproject(&manifest(&format!(
        "\"{VERSIONS}\" = \"==0.1.1\"\n\"kernels-community/relu\" = 1\n"
    )));
    context.run_ok(&["lock"]);
    let locked = context.lockfile();
    // kernels-test/versions without its tag v0.1.1, and kernels-community/relu.
    let deleted = edited_mirror(|t| t.replace("\"v0.1.1\" = \"dc142fd6\"\n", ""), &[]);
    let relu = "repos/kernels/kernels-community/relu";
    copy_dir(
        &kernels_test_support::mirror_dir().join(relu),
        &deleted.path().join(relu),
    );
    context.server = Server::start(deleted.path());
    // `-P relu` keeps versions as locked.
    snapshot!(
        "deleted_tag_kept_by_other_upgrade_package",
        context.run_ok(&["lock", "-P", "kernels-community/relu"])
    );
    let entry = commit_of_lock(&locked, VERSIONS);
    assert_eq!(commit_of_lock(&context.lockfile(), VERSIONS), entry);
    // Resolving that entry again fails: no tag satisfies `==0.1.1` any more.
    snapshot!(
        "deleted_tag_upgrade_package",
        context.run(&["lock", "-P", VERSIONS])
    );
}

/// The `sha` of `repo`'s entry in a variant-hash lock.
fn commit_of_lock(lock: &str, repo: &str) -> String {
    let doc: serde_json::Value = serde_json::from_str(lock).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .find(|e| e["repo_id"] == repo)
        .map(|e| e["sha"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{repo} is not in {lock}"))
}
