//! `kernels add` / `kernels remove`: `pyproject.toml` edited in place (comments
//! and formatting kept), then a sticky lock; on any failure both files are left
//! byte-identical. Also project discovery from a subdirectory and `--project`.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{TestContext, snapshot};

const PYPROJECT: &str = "[project]\nname = \"demo\"   # keep me\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n# the relu kernel\n'kernels-community/relu' = 1    # pinned\n\n[tool.other]\nx = 1\n";

/// `kernels ARGS` run in `cwd` instead of the project folder.
fn run_in(context: &TestContext, cwd: &Path, args: &[&str]) -> Output {
    context
        .kernels()
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn files(dir: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    (
        fs_err::read(dir.join("pyproject.toml")).unwrap(),
        fs_err::read(dir.join("kernels.lock")).ok(),
    )
}

/// The `dependency` of every entry of a 0.17 lock by repository, sorted.
fn dependencies(lock: &str) -> Vec<(String, serde_json::Value)> {
    let doc: serde_json::Value = serde_json::from_str(lock).unwrap();
    let mut out: Vec<(String, serde_json::Value)> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let dependency = e["dependency"].clone();
            (
                dependency["repo-id"].as_str().unwrap().to_owned(),
                dependency,
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// [`PYPROJECT`] locked for the 0.17 runtime against the bundled mirror.
fn locked_project() -> TestContext {
    let context = TestContext::new().with_pyproject(PYPROJECT);
    context.run_ok(&["lock", "--target-runtime", "0.17.2"]);
    context
}

#[test]
fn add_picks_the_highest_branch_and_keeps_the_formatting() {
    let context = locked_project();
    // Sticky: relu was not resolved again, so no line about it.
    snapshot!(
        "add_highest_branch",
        context.run_ok(&["add", "kernels-test/versions"])
    );
    assert_eq!(
        context.read("pyproject.toml"),
        PYPROJECT.replace("# pinned\n", "# pinned\n\"kernels-test/versions\" = 10\n")
    );
    let lock = context.lockfile();
    assert_eq!(
        dependencies(&lock),
        [
            (
                "kernels-community/relu".to_owned(),
                serde_json::json!({"repo-id": "kernels-community/relu", "version": 1})
            ),
            (
                "kernels-test/versions".to_owned(),
                serde_json::json!({"repo-id": "kernels-test/versions", "version": 10})
            ),
        ],
        "{lock}"
    );

    // remove, from a subdirectory: the project is found upwards.
    let sub = context.project.join("src").join("pkg");
    fs_err::create_dir_all(&sub).unwrap();
    let out = run_in(&context, &sub, &["remove", "kernels-test/versions"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(context.read("pyproject.toml"), PYPROJECT);
    let lock = context.lockfile();
    let repos: Vec<String> = dependencies(&lock).into_iter().map(|(r, _)| r).collect();
    assert_eq!(repos, ["kernels-community/relu"], "{lock}");
}

#[test]
fn add_creates_the_table_and_uses_specifiers_for_old_runtimes() {
    let context = TestContext::new().with_pyproject("[project]\nname = \"demo\"\n");
    let out = run_in(
        &context,
        Path::new("/"),
        &[
            "--project",
            context.project.to_str().unwrap(),
            "add",
            "kernels-test/versions",
            "--target-runtime",
            "0.10.5",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        context.read("pyproject.toml"),
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.2.0\"\n"
    );
    assert!(context.project.join("kernels.lock").is_file());
}

#[test]
fn failed_lock_leaves_both_files_untouched() {
    let context = locked_project();
    let before = files(&context.project);
    // Untrusted publisher: the 0.17 lock fails after the manifest was edited.
    snapshot!(
        "add_untrusted_publisher",
        context.run(&["add", "untrusted-publisher/identity"])
    );
    assert_eq!(files(&context.project), before);
    // A repository that does not exist.
    snapshot!(
        "add_missing_repository",
        context.run(&["add", "kernels-test/nope", "1"])
    );
    assert_eq!(files(&context.project), before);
}

#[test]
fn bad_input_is_an_error_naming_the_entry() {
    let context = locked_project();
    let before = files(&context.project);
    let cases: &[(&[&str], &str)] = &[
        (
            &["add", "kernels-test/versions", "banana"],
            "add_not_a_requirement",
        ),
        (
            &["add", "kernels-test/versions", "v2"],
            "add_bad_requirement",
        ),
        (
            &["add", "kernels-test/versions", ">=0.1"],
            "add_specifier_for_0_17",
        ),
        (
            &["add", "Kernels-Community/Relu", "1"],
            "add_another_spelling",
        ),
        (
            &["remove", "kernels-test/versions"],
            "remove_not_a_dependency",
        ),
    ];
    for (args, name) in cases {
        snapshot!(*name, context.run(args));
        assert_eq!(files(&context.project), before, "{args:?}");
    }
    // Two spellings of one repo in the manifest: every command names both.
    let twice = PYPROJECT.replace("# pinned\n", "# pinned\n\"Kernels-Community/RELU\" = 1\n");
    context.write("pyproject.toml", &twice);
    let before = files(&context.project);
    for (args, name) in [
        (&["lock"][..], "lock_two_spellings"),
        (&["add", "kernels-test/versions", "1"], "add_two_spellings"),
    ] {
        snapshot!(name, context.run(args));
        assert_eq!(files(&context.project), before, "{args:?}");
    }
    // The fix the message names works.
    context.run_ok(&["remove", "Kernels-Community/RELU"]);
    assert_eq!(context.read("pyproject.toml"), PYPROJECT);
}

#[test]
fn project_flag_and_positional_must_agree() {
    let context = locked_project();
    let other = tempfile::tempdir().unwrap();
    snapshot!(
        "two_project_directories",
        context.run(&[
            "lock",
            "--check",
            "--project",
            other.path().to_str().unwrap(),
            ".",
        ])
    );
    let out = run_in(
        &context,
        other.path(),
        &[
            "lock",
            "--check",
            "--project",
            context.project.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{out:?}");
}
