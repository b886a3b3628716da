//! `kernels lock --breaking` (issue 23, item 2): against a copy of the
//! bundled mirror where `kernels-test/versions` has builds on `v1` and `v2`,
//! a `v3` with only a ROCm build and a `v4` with no `build/` at all, an
//! integer requirement moves to the newest major that fits the declared
//! targets (any build without targets), `pyproject.toml` keeps its comments,
//! the lock pins the new branch's commit; `-P` limits it; a project at the
//! newest major is left byte for byte; `--check`, `--locked` and `--frozen`
//! refuse it; a failed relock puts both files back.

use std::path::Path;

use kernels_test_support::{Server, TestContext, snapshot};

use crate::sticky::{commit_of, copy_dir, edited_mirror, locked_commits};

const VERSIONS: &str = "kernels-test/versions";
const RELU: &str = "kernels-community/relu";

/// The mirror described in the module docs; `kernels-community/relu` gets a
/// `v2` branch at its `v1` commit.
fn mirror() -> tempfile::TempDir {
    let root = edited_mirror(
        |toml| {
            toml.replace("\"f609e51b\"]", "\"f609e51b\", \"rocmonly\", \"nobuild\"]")
                .replace(
                    "\"v10\" = \"v10\"\n",
                    "\"v3\" = \"rocmonly\"\n\"v4\" = \"nobuild\"\n",
                )
        },
        &[
            (
                "rocmonly",
                "f609e51b",
                "parent = \"f609e51b\"\ntitle = \"Version 3: ROCm only\"\ndate = \"2026-08-01T10:00:00Z\"\n",
            ),
            (
                "nobuild",
                "f609e51b",
                "parent = \"rocmonly\"\ntitle = \"Version 4: sources only\"\ndate = \"2026-08-02T10:00:00Z\"\n",
            ),
        ],
    );
    let commits = root
        .path()
        .join("repos/kernels/kernels-test/versions/commits");
    for variant in ["torch-cuda", "torch-cpu", "torch-xpu"] {
        fs_err::remove_dir_all(commits.join("rocmonly/tree/build").join(variant)).unwrap();
    }
    fs_err::remove_dir_all(commits.join("nobuild/tree/build")).unwrap();
    let relu_rel = "repos/kernels/kernels-community/relu";
    let relu = root.path().join(relu_rel);
    copy_dir(&kernels_test_support::mirror_dir().join(relu_rel), &relu);
    let toml = fs_err::read_to_string(relu.join("repo.toml")).unwrap();
    fs_err::write(
        relu.join("repo.toml"),
        toml.replace(
            "\"v1\" = \"d649efb5\"\n",
            "\"v1\" = \"d649efb5\"\n\"v2\" = \"d649efb5\"\n",
        ),
    )
    .unwrap();
    root
}

/// A project for runtime 0.17.2 with `tool` lines under `[tool.kernels]` and
/// commented dependencies `deps`.
fn project(tool: &str, deps: &str) -> String {
    format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.17.2\"\n{tool}\n[tool.kernels.dependencies]\n# The test kernel; raise with care.\n{deps}"
    )
}

fn context(mirror: &Path, tool: &str, deps: &str) -> TestContext {
    TestContext::with_server(Server::start(mirror)).with_pyproject(&project(tool, deps))
}

#[test]
fn breaking_takes_the_newest_major_that_fits_the_targets() {
    let mirror = mirror();
    let tool = "cuda-capabilities = [\"9.0\"]\n";
    let deps = format!("\"{VERSIONS}\" = 1 # v1 for now\n");
    let context = context(mirror.path(), tool, &deps);
    context.run_ok(&["lock"]);
    let v1 = commit_of(context.endpoint(), VERSIONS, "v1");
    assert_eq!(locked_commits(&context.lockfile()), [v1]);
    snapshot!(
        "breaking_to_fitting_major",
        context.run_ok(&["lock", "--breaking"])
    );
    // `v3` has no CUDA build and `v4` no build: `v2`, comments kept.
    assert_eq!(
        context.read("pyproject.toml"),
        project(tool, &deps.replace("= 1 #", "= 2 #"))
    );
    let v2 = commit_of(context.endpoint(), VERSIONS, "v2");
    assert_eq!(locked_commits(&context.lockfile()), [v2]);

    // At the newest major that fits: nothing is raised, no byte changes.
    let before = (context.read("pyproject.toml"), context.lockfile());
    // Nothing "Upgraded".
    snapshot!(
        "breaking_at_newest_major",
        context.run_ok(&["lock", "--breaking"])
    );
    assert_eq!((context.read("pyproject.toml"), context.lockfile()), before);
}

#[test]
fn breaking_without_targets_takes_any_build_and_leaves_specifiers() {
    let mirror = mirror();
    let deps =
        format!("\"{VERSIONS}\" = {{ version = 1 }}\n\"{RELU}\" = {{ revision = \"v1\" }}\n");
    let context = context(mirror.path(), "", &deps);
    snapshot!(
        "breaking_without_targets",
        context.run_ok(&["lock", "--breaking", "-v"])
    );
    // `v3` has a (ROCm) build; `v4` has none.
    assert_eq!(
        context.read("pyproject.toml"),
        project("", &deps.replace("version = 1", "version = 3"))
    );
    let (v3, relu) = (
        commit_of(context.endpoint(), VERSIONS, "v3"),
        commit_of(context.endpoint(), RELU, "v1"),
    );
    let mut locked = locked_commits(&context.lockfile());
    locked.sort();
    let mut expected = [v3, relu];
    expected.sort();
    assert_eq!(locked, expected);
}

#[test]
fn upgrade_package_limits_breaking_to_the_named_repos() {
    let mirror = mirror();
    let tool = "cuda-capabilities = [\"9.0\"]\n";
    let deps = format!("\"{VERSIONS}\" = 1\n\"{RELU}\" = 1\n");
    let context = context(mirror.path(), tool, &deps);
    context.run_ok(&["lock"]);
    snapshot!(
        "breaking_one_package",
        context.run_ok(&["lock", "--breaking", "-P", "Kernels-Community/Relu"])
    );
    assert_eq!(
        context.read("pyproject.toml"),
        project(tool, &format!("\"{VERSIONS}\" = 1\n\"{RELU}\" = 2\n"))
    );
    // `relu` v2 is its v1 commit; `versions` stays at v1.
    let (v1, relu) = (
        commit_of(context.endpoint(), VERSIONS, "v1"),
        commit_of(context.endpoint(), RELU, "v2"),
    );
    let mut locked = locked_commits(&context.lockfile());
    locked.sort();
    let mut expected = [v1, relu];
    expected.sort();
    assert_eq!(locked, expected);

    // With `--format json`, stdout is the lock's one document and stderr is quiet.
    let out = context.run_ok(&["lock", "--breaking", "--format", "json", "-P", VERSIONS]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["command"], "lock");
    assert_eq!(doc["changes"].as_array().map(Vec::len), Some(1), "{doc}");
    assert!(String::from_utf8_lossy(&out.stderr).trim().is_empty());
    assert_eq!(
        context.read("pyproject.toml"),
        project(tool, &format!("\"{VERSIONS}\" = 2\n\"{RELU}\" = 2\n"))
    );
}

#[test]
fn breaking_refuses_check_locked_and_frozen() {
    let mirror = mirror();
    let deps = format!("\"{VERSIONS}\" = 1\n");
    let context = context(mirror.path(), "", &deps);
    context.run_ok(&["lock"]);
    let before = (context.read("pyproject.toml"), context.lockfile());
    // A usage error, exit 2.
    snapshot!(
        "breaking_with_check",
        context.run(&["lock", "--breaking", "--check"])
    );
    snapshot!(
        "breaking_locked_env",
        context
            .kernels()
            .env("KERNELS_LOCKED", "1")
            .args(["lock", "--breaking"])
            .output()
            .unwrap()
    );
    snapshot!(
        "breaking_frozen_env",
        context
            .kernels()
            .env("KERNELS_FROZEN", "1")
            .args(["lock", "--breaking"])
            .output()
            .unwrap()
    );
    assert_eq!((context.read("pyproject.toml"), context.lockfile()), before);
}

#[test]
fn a_failed_relock_puts_both_files_back() {
    let mirror = mirror();
    // Runtime 0.17 reads no version specifiers, so the relock fails after
    // `pyproject.toml` was raised.
    let deps = format!("\"{VERSIONS}\" = 1\n\"{RELU}\" = \">=1.0\"\n");
    let context = context(mirror.path(), "", &deps);
    let before = context.read("pyproject.toml");
    // "Upgraded … 1 -> 3", then the lock fails.
    snapshot!(
        "breaking_relock_fails",
        context.run(&["lock", "--breaking"])
    );
    assert_eq!(context.read("pyproject.toml"), before);
    assert!(!context.project.join("kernels.lock").exists());
}

/// A variant-hash lock (the default target runtime here) keeps a commit that
/// the new major's branch also has (the bundled `v10` descends from `v1`):
/// `--breaking` resolves each raised entry again, so the lock moves to the
/// new major's head, not only `pyproject.toml`.
#[test]
fn breaking_moves_a_variant_hash_lock_to_the_new_major() {
    let context = TestContext::new()
        .with_pyproject(&crate::sticky::manifest(&format!("\"{VERSIONS}\" = 1\n")));
    context.run_ok(&["lock"]);
    let v1 = commit_of(context.endpoint(), VERSIONS, "v1");
    let v10 = commit_of(context.endpoint(), VERSIONS, "v10");
    assert_eq!(locked_commits(&context.lockfile()), [v1]);
    // "Upgraded … 1 -> 10".
    snapshot!(
        "breaking_variant_hash_lock",
        context.run_ok(&["lock", "--breaking"])
    );
    assert_eq!(
        context.read("pyproject.toml"),
        crate::sticky::manifest(&format!("\"{VERSIONS}\" = 10\n"))
    );
    assert_eq!(locked_commits(&context.lockfile()), [v10]);
    context.run_ok(&["lock", "--check"]);
}
