//! Hints that lead somewhere (issue 24, item 2): every fix a message names
//! exists, checked by following it where it is a command; a kernel no variant
//! of which fits the local torch is explained with what would fit; offline and
//! cache-folder failures name each kernel and the folder found; an unreadable
//! project is "permission denied", never a missing lock.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

use kernels_test_support::{self as common, TestContext};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const RUNTIME_0_17: &str = "[tool.kernels]\ntarget-runtime = \"0.17.2\"\n\n";

#[test]
fn a_specifier_refused_by_0_17_names_only_fixes_that_exist() {
    // `activation` publishes tags only, and its tags lack metadata.json.
    let context = TestContext::new().with_pyproject(&format!(
        "{RUNTIME_0_17}[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n"
    ));
    let out = context.run(&["lock"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains("= 1` for branch"), "{err}");
    assert!(err.contains("cannot lock it by version"), "{err}");
    assert!(err.contains("lack the metadata.json"), "{err}");
    // Without the Hub the hint claims no branch, and the refs are asked once.
    let out = context.kernels_without_hub().arg("lock").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("for a branch `vN` the repository has"),
        "{err}"
    );
    assert!(!err.contains("retrying"), "{err}");
    // The integer the old hint named fails, and its hint no longer suggests
    // the specifier 0.17 refuses.
    context.write(
        "pyproject.toml",
        &format!(
            "{RUNTIME_0_17}[tool.kernels.dependencies]\n\"kernels-community/activation\" = 1\n"
        ),
    );
    let err = stderr(&context.run(&["lock"]));
    assert!(err.contains("no branch `v1`"), "{err}");
    assert!(!err.contains("version specifier string such as"), "{err}");
    assert!(err.contains("--target-runtime 0.13.0"), "{err}");
    // `kernels add` with the specifier gives the same hint.
    context.write(
        "pyproject.toml",
        &format!("{RUNTIME_0_17}[tool.kernels.dependencies]\n"),
    );
    let add = context.run(&["add", "kernels-community/activation", ">=0.0.2"]);
    assert_eq!(add.status.code(), Some(1));
    let err = stderr(&add);
    assert!(err.contains("cannot lock it by version"), "{err}");
    assert!(!err.contains("such as `1`"), "{err}");
    // What the hints say can lock it does.
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n",
    );
    context.run_ok(&["lock", "--target-runtime", "0.13.0"]);
}

#[test]
fn a_specifier_hint_names_a_branch_the_repository_has() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=5\"\n");
    let err = stderr(&context.run(&["lock", "--target-runtime", "0.16.2"]));
    assert!(err.contains("has no branch `v5`"), "{err}");
    assert!(err.contains("`\"kernels-test/versions\" = 10`"), "{err}");
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-test/versions\" = 10\n",
    );
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
}

#[test]
fn no_variant_for_the_local_torch_is_said_at_once_with_what_would_fit() {
    // torch 2.7 with CUDA 12.8; `relu` v1 is built for torch 2.10 to 2.13.
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n")
        .with_stub_torch()
        .with_env("STUB_TORCH_CUDA", "12.8");
    let fits = "builds exist for torch ≥ 2.10 here (cuda on x86_64-linux: torch 2.10, 2.11, 2.12, 2.13): upgrade torch to 2.10 or newer";
    let add = context.run_ok(&["add", "kernels-community/relu"]);
    let err = stderr(&add);
    assert!(err.contains("warning: kernels-community/relu@"), "{err}");
    assert!(err.contains(fits), "{err}");

    let download = context.run(&["download"]);
    assert_eq!(download.status.code(), Some(1));
    let err = stderr(&download);
    assert!(err.contains(fits), "{err}");
    assert!(!err.contains("--all-variants"), "{err}");

    context.run_ok(&["download", "--all-variants"]);
    let verify = context.run(&["verify"]);
    assert_eq!(verify.status.code(), Some(1));
    let (out, err) = (stdout(&verify), stderr(&verify));
    assert!(err.contains(fits), "{err}");
    assert!(!err.contains("repair the cache"), "{err}");
    // The 52 variants are capped as `download` caps them.
    assert!(out.contains(", and 47 more"), "{out}");
    assert!(out.len() < 1000, "{out}");
    // Offline too: no fetch command, which would fail the same way.
    let offline = context.run(&["download", "--offline"]);
    assert_eq!(offline.status.code(), Some(1));
    let err = stderr(&offline);
    assert!(err.contains(fits), "{err}");
    assert!(!err.contains("without --offline"), "{err}");
}

#[test]
fn offline_with_an_empty_cache_explains_every_kernel() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\"kernels-community/einops\" = 1\n",
    );
    context.run_ok(&["lock"]);
    let out = context.run(&["download", "--offline", "--all-variants"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    for repo in ["relu", "einops"] {
        let dir = format!("kernels--kernels-community--{repo}/snapshots/");
        assert!(err.contains(&dir), "{repo} is not explained:\n{err}");
    }
}

#[test]
fn a_kernel_cached_only_in_a_models_folder_gets_the_target_runtime_hint() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/einops\" = 1\n");
    context.run_ok(&["lock"]);
    // Downloaded for a runtime that reads `models--` folders.
    context.run_ok(&["download", "--all-variants", "--target-runtime", "0.13.0"]);
    let folder = context.cache.join("models--kernels-community--einops");
    let note = format!(
        "note: kernels-community/einops@0bd0077 is in the cache only in {}",
        folder.display()
    );
    for args in [
        &["verify", "--all-variants"][..],
        &["download", "--offline", "--all-variants"],
    ] {
        let out = context.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains(&note), "{args:?}:\n{err}");
        assert!(err.contains("--target-runtime VERSION"), "{args:?}:\n{err}");
    }
}

#[test]
fn a_project_the_user_cannot_read_is_permission_denied_with_the_path() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/einops\" = 1\n");
    context.run_ok(&["lock"]);
    // Root reads everything: the commands run as uid 65534, who may not enter
    // the test's private directory.
    fs_err::set_permissions(&context.project, std::fs::Permissions::from_mode(0o700)).unwrap();
    let project = context.project.display().to_string();
    let commands: [&[&str]; 5] = [
        &["download", "--all-variants"],
        &["verify", "--all-variants"],
        &["tree"],
        &["export"],
        &["to-wheel", "--locked"],
    ];
    for command in commands {
        let mut cmd = Command::new("/usr/bin/setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(common::kernels_bin());
        common::scrub(&mut cmd);
        let out = cmd
            .args(command)
            .arg(&context.project)
            .env("HF_ENDPOINT", context.endpoint())
            .env("HF_HUB_CACHE", std::env::temp_dir().join("unused-cache"))
            .current_dir("/")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command:?}:\n{err}");
        assert!(!err.contains("no kernels.lock"), "{command:?}:\n{err}");
        assert!(err.contains("Permission denied"), "{command:?}:\n{err}");
        assert!(err.contains(&project), "{command:?}:\n{err}");
    }
}

#[test]
fn the_missing_pyproject_hint_asks_for_no_project_table() {
    let context = TestContext::new();
    let err = stderr(&context.run(&["lock"]));
    assert!(err.contains("[tool.kernels.dependencies]"), "{err}");
    assert!(!err.contains("[project]"), "{err}");
}

#[test]
fn env_claims_no_release_range_for_an_unknown_runtime() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/einops\" = 1\n")
        .with_stub_torch();
    context.run_ok(&["lock"]);
    let out = context.run_ok(&["env"]);
    let text = stdout(&out);
    assert!(text.contains("no target runtime is named"), "{text}");
    assert!(!text.contains("≤0.12"), "{text}");
    // A named runtime keeps its range.
    let named = context.run_ok(&["env", "--target-runtime", "0.12.0"]);
    assert!(stdout(&named).contains("(kernels ≤0.12)"));
}

#[test]
fn tree_shows_the_version_lock_printed_before_any_download() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n",
    );
    let lock = context.run_ok(&["lock"]);
    assert!(stderr(&lock).contains("Locked kernels-community/activation v0.0.3 (8304685)"));
    assert!(
        !context
            .cache
            .join("kernels--kernels-community--activation")
            .exists()
    );
    let tree = stdout(&context.run_ok(&["tree"]));
    assert_eq!(tree, "kernels-community/activation v0.0.3 (8304685)\n");
}
