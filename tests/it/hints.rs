//! Hints that lead somewhere (issue 24, item 2): every fix a message names
//! exists, checked by following it where it is a command; a kernel no variant
//! of which fits the local torch is explained with what would fit; offline and
//! cache-folder failures name each kernel and the folder found; an unreadable
//! project is "permission denied", never a missing lock.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

use kernels_test_support::{self as common, TestContext, snapshot};

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
    // The hint names no `= 1` for a branch the repository lacks.
    snapshot!("specifier_refused_by_0_17", context.run(&["lock"]));
    // Without the Hub the hint claims no branch, and the refs are asked once
    // (no retrying).
    snapshot!(
        "specifier_refused_by_0_17_without_hub",
        context.kernels_without_hub().arg("lock").output().unwrap()
    );
    // The integer the old hint named fails, and its hint no longer suggests
    // the specifier 0.17 refuses.
    context.write(
        "pyproject.toml",
        &format!(
            "{RUNTIME_0_17}[tool.kernels.dependencies]\n\"kernels-community/activation\" = 1\n"
        ),
    );
    snapshot!(
        "integer_without_its_branch_for_0_17",
        context.run(&["lock"])
    );
    // `kernels add` with the specifier gives the same hint.
    context.write(
        "pyproject.toml",
        &format!("{RUNTIME_0_17}[tool.kernels.dependencies]\n"),
    );
    snapshot!(
        "add_specifier_refused_by_0_17",
        context.run(&["add", "kernels-community/activation", ">=0.0.2"])
    );
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
    snapshot!(
        "specifier_hint_names_branch_v10",
        context.run(&["lock", "--target-runtime", "0.16.2"])
    );
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
    // An existing variant-hash lock (kept by `add`): it lists every variant,
    // so `verify` and an offline `download` can tell that none fits.
    context.write("kernels.lock", "[]");
    // Each says which torch has builds (2.10 to 2.13): upgrade torch.
    snapshot!(
        "no_fit_add",
        context.run_ok(&["add", "kernels-community/relu"])
    );
    // No `--all-variants` suggested: it would not make the kernel load.
    snapshot!("no_fit_download", context.run(&["download"]));
    // `verify` of the empty cache says the same, not "repair the cache with
    // `kernels download`" (which fails as above).
    let verify = context.run(&["verify"]);
    let text = String::from_utf8_lossy(&verify.stderr).into_owned();
    assert!(
        text.contains("builds exist for torch ≥ 2.10") && !text.contains("repair the cache"),
        "{text}"
    );
    // The commands the hint names run: the versions with their builds, and
    // the relock of that one entry.
    run_suggested_variants(&context, &String::from_utf8_lossy(&verify.stderr));
    context.run_ok(&["lock", "-P", "kernels-community/relu"]);

    context.run_ok(&["download", "--all-variants"]);
    // No "repair the cache"; the 52 variants are capped as `download` caps them.
    snapshot!("no_fit_verify", context.run(&["verify"]));
    // Offline too: no fetch command ("without --offline"), which would fail
    // the same way.
    snapshot!(
        "no_fit_download_offline",
        context.run(&["download", "--offline"])
    );
}

#[test]
fn offline_with_an_empty_cache_explains_every_kernel() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\"kernels-community/einops\" = 1\n",
    );
    context.run_ok(&["lock"]);
    // Both kernels are explained, each with its snapshot folder.
    snapshot!(
        "offline_empty_cache",
        context.run(&["download", "--offline", "--all-variants"])
    );
}

#[test]
fn a_kernel_cached_only_in_a_models_folder_gets_the_target_runtime_hint() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/einops\" = 1\n");
    context.run_ok(&["lock"]);
    // Downloaded for a runtime that reads `models--` folders.
    context.run_ok(&["download", "--all-variants", "--target-runtime", "0.13.0"]);
    // Each names the `models--` folder and `--target-runtime VERSION`.
    for (name, args) in [
        ("models_folder_verify", &["verify", "--all-variants"][..]),
        (
            "models_folder_download_offline",
            &["download", "--offline", "--all-variants"],
        ),
    ] {
        snapshot!(name, context.run(args));
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
    let commands: [(&str, &[&str]); 5] = [
        ("unreadable_download", &["download", "--all-variants"]),
        ("unreadable_verify", &["verify", "--all-variants"]),
        ("unreadable_tree", &["tree"]),
        ("unreadable_export", &["export"]),
        ("unreadable_to_wheel", &["to-wheel", "--locked"]),
    ];
    // Each is "Permission denied" with the project's path, never "no kernels.lock".
    for (name, command) in commands {
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
        snapshot!(name, out);
    }
}

#[test]
fn the_missing_pyproject_hint_asks_for_no_project_table() {
    let context = TestContext::new();
    // It names `[tool.kernels.dependencies]`, not a `[project]` table.
    snapshot!("missing_pyproject", context.run(&["lock"]));
}

#[test]
fn env_claims_no_release_range_for_an_unknown_runtime() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/einops\" = 1\n")
        .with_stub_torch();
    // A variant-hash lock, which names no runtime (a first lock without a
    // named runtime is a 0.19 `KernelLocks` lock).
    context.run_ok(&["lock", "--target-runtime", "0.16.2"]);
    // The other lines name this machine's Python: only the variant order,
    // the one row that names a release range, is recorded.
    let runtime = |out: &Output| {
        stdout(out)
            .lines()
            .filter(|l| l.starts_with("Variant order"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // No `≤0.12` range is claimed.
    snapshot!("env_unnamed_runtime", runtime(&context.run_ok(&["env"])));
    // A named runtime keeps its range.
    let named = context.run_ok(&["env", "--target-runtime", "0.12.0"]);
    snapshot!("env_named_runtime", runtime(&named));
}

#[test]
fn tree_shows_the_version_lock_printed_before_any_download() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n",
    );
    snapshot!("version_lock", context.run_ok(&["lock"]));
    assert!(
        !context
            .cache
            .join("kernels--kernels-community--activation")
            .exists()
    );
    let tree = stdout(&context.run_ok(&["tree"]));
    assert_eq!(tree, "kernels-community/activation v0.0.3 (8304685)\n");
}

/// `kernels check` without torch names no flag it rejects: the command its
/// help names for another environment (`kernels verify` with the
/// environment flags) runs and passes.
#[test]
fn check_without_torch_names_a_command_that_runs() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n");
    context.run_ok(&["lock"]);
    context.run_ok(&["download", "--all-variants"]);
    let no_torch = context.tmp.path().join("no_torch");
    fs_err::create_dir_all(no_torch.join("torch")).unwrap();
    fs_err::write(
        no_torch.join("torch/__init__.py"),
        "raise ImportError('no torch here')\n",
    )
    .unwrap();
    let out = context
        .kernels()
        .arg("check")
        .env("PYTHONPATH", &no_torch)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("kernels::check::no_torch"), "{text}");
    let start = text.find("`kernels verify ").expect("a verify command") + 1;
    let command = &text[start..start + text[start..].find('`').unwrap()];
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    context.run_ok(&args);
}

/// Runs every `kernels variants …` command quoted in `text` in `context`:
/// each exits 0 and lists a version's variants (issue 45: hints named the
/// deprecated `kernels versions`). Panics when `text` quotes none.
fn run_suggested_variants(context: &TestContext, text: &str) {
    let commands: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("kernels variants "))
        .collect();
    assert!(
        !commands.is_empty(),
        "no `kernels variants` command in:\n{text}"
    );
    for command in commands {
        let args: Vec<&str> = command.split_whitespace().skip(1).collect();
        let out = context.run_ok(&args);
        let listed = stdout(&out);
        assert!(
            listed.starts_with("Version ") && listed.lines().count() > 2,
            "`{command}` lists no variants:\n{listed}"
        );
    }
}

/// The hints that list a kernel's versions name `kernels variants REPO
/// --all-versions`, which runs where they are printed: here without torch
/// (the variants without verdicts) and with the stub torch.
#[test]
fn the_versions_a_hint_names_are_listed_by_the_command_it_names() {
    // A version relu lacks: the error names the command that lists them.
    let context = TestContext::new();
    let info = context.run(&["info", "kernels-community/relu", "--version", "9"]);
    assert_eq!(info.status.code(), Some(1));
    run_suggested_variants(&context, &String::from_utf8_lossy(&info.stderr));
    // Without torch and without flags, the listing says how to get verdicts.
    let out = context.run_ok(&["variants", "kernels-community/relu", "--all-versions"]);
    snapshot!("variants_without_an_environment", out);
    // A verdict asked for still needs an environment.
    let out = context.run(&["variants", "kernels-community/relu", "--only-compatible"]);
    assert_eq!(out.status.code(), Some(1));
}

/// A deprecated specifier (0.13) is told the integer its repository has, or
/// that none can replace it; the form suggested locks (issue 45).
#[test]
fn the_deprecation_hint_names_a_version_branch_that_exists() {
    let runtime = "[tool.kernels]\ntarget-runtime = \"0.13.0\"\n\n[tool.kernels.dependencies]\n";
    // `activation` publishes tags only: no `= 1`, the specifier is kept.
    let context = TestContext::new().with_pyproject(&format!(
        "{runtime}\"kernels-community/activation\" = \">=0.0.2\"\n"
    ));
    snapshot!(
        "deprecated_specifier_without_branches",
        context.run_ok(&["lock"])
    );
    // A second run that changes nothing repeats no remark.
    let again = context.run_ok(&["lock"]);
    let text = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(!text.contains("deprecates"), "{text}");

    // `versions` has branches v1, v2 and v10: the suggestion names one, and
    // written as suggested it locks without the remark.
    context.write(
        "pyproject.toml",
        &format!("{runtime}\"kernels-test/versions\" = \">=0.1\"\n"),
    );
    let out = context.run_ok(&["lock"]);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let start = text.find("write `").expect("a suggested form") + "write `".len();
    let line = &text[start..start + text[start..].find('`').unwrap()];
    assert_eq!(line, "\"kernels-test/versions\" = 1", "{text}");
    context.write("pyproject.toml", &format!("{runtime}{line}\n"));
    let out = context.run_ok(&["lock"]);
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!text.contains("deprecates"), "{text}");
}

/// A kernel whose variants have no `metadata.json` cannot be checked for the
/// declared GPUs: `kernels lock --check` says so once, naming every target,
/// and names no command that would not help (issue 45).
#[test]
fn lock_check_says_an_unreadable_kernel_once() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels]\ntarget-runtime = \"0.13.0\"\ncuda-capabilities = [\"8.0\", \"9.0\", \"10.0\"]\n\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n\"kernels-community/relu\" = 1\n",
    );
    context.run_ok(&["lock"]);
    snapshot!(
        "lock_check_unreadable_once",
        context.run_ok(&["lock", "--check"])
    );
}
