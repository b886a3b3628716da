//! Declared targets at lock time (issue 45 item 3): `kernels lock` and
//! `kernels add` refuse a locked kernel without a build for a declared
//! `torch` + `backend` target (one message per target, naming the kernels and
//! the versions that have one), or warn with `missing-target-builds = "warn"`.

use kernels_test_support::{TestContext, snapshot};

const TORCH27: &str = "[[tool.kernels.targets]]\ntorch = \"2.7\"\nbackend = \"cuda-12.6\"\n";

const TORCH211: &str = "[[tool.kernels.targets]]\ntorch = \"2.11\"\nbackend = \"cuda-12.6\"\n";

/// A project declaring `targets` (and `extra` under `[tool.kernels]`) that
/// depends on relu (v1: torch 2.10 and newer) and activation v0.0.2 (torch
/// 2.5 and 2.6; v0.0.3 has torch 2.7 to 2.9), for the 0.13 runtime, which
/// reads integers and specifier strings.
fn project(extra: &str, targets: &str) -> TestContext {
    TestContext::new().with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.13.0\"\n{extra}\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\"kernels-community/activation\" = \"<0.0.3\"\n\n{targets}"
    ))
}

#[test]
fn add_refuses_a_kernel_without_a_build_for_the_declared_target() {
    let empty = tempfile::tempdir().unwrap();
    let pyproject = format!("[project]\nname = \"demo\"\n\n{TORCH27}");
    let context = TestContext::new()
        .with_pyproject(&pyproject)
        .with_env("PATH", empty.path());
    let out = context.run(&["add", "kernels-community/relu"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    snapshot!("declared_add_relu_torch27", out);
    assert_eq!(context.read("pyproject.toml"), pyproject);
    assert!(!context.project.join("kernels.lock").exists());

    // A version that has one is named, with the requirement that selects it.
    let out = context.run(&[
        "add",
        "kernels-community/activation",
        "<0.0.3",
        "--target-runtime",
        "0.10.5",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    snapshot!("declared_add_activation_old", out);
    assert_eq!(context.read("pyproject.toml"), pyproject);
    // The fix it names works.
    context.write(
        "pyproject.toml",
        &format!(
            "{pyproject}\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.3\"\n"
        ),
    );
    context.run_ok(&[
        "lock",
        "-P",
        "kernels-community/activation",
        "--target-runtime",
        "0.10.5",
    ]);
    assert!(
        context
            .lockfile()
            .contains("torch27-cxx11-cu126-x86_64-linux")
    );
}

#[test]
fn one_message_per_declared_target_naming_every_kernel() {
    let context = project("", &format!("{TORCH27}\n{TORCH211}"));
    let out = context.run(&["lock"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    snapshot!("declared_lock_two_targets", out);
    assert!(!context.project.join("kernels.lock").exists());

    // JSON: the failure document names the code.
    let out = context.run(&["lock", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["error"]["code"], "kernels::lock::missing_target_builds",
        "{doc}"
    );

    // A target every locked kernel has a build for passes.
    let fits = "[[tool.kernels.targets]]\ntorch = \"2.6\"\nbackend = \"cuda-12.6\"\n";
    let context = project("", fits);
    let out = context.run(&["lock"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "relu v1 has no torch 2.6 build: {out:?}"
    );
    let only_activation = TestContext::new().with_pyproject(&format!(
        "[tool.kernels]\ntarget-runtime = \"0.13.0\"\n\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \"<0.0.3\"\n\n{fits}"
    ));
    only_activation.run_ok(&["lock"]);
}

#[test]
fn missing_target_builds_warn_locks_with_one_warning_per_target() {
    let context = project(
        "missing-target-builds = \"warn\"\n",
        &format!("{TORCH27}\n{TORCH211}"),
    );
    let out = context.run_ok(&["lock"]);
    snapshot!("declared_lock_warn", out);
    assert!(context.project.join("kernels.lock").is_file());

    let context = project("missing-target-builds = \"never\"\n", TORCH27);
    let out = context.run(&["lock"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    snapshot!("declared_lock_bad_setting", out);
}

/// Two CUDA targets of relu v1 (torch 2.10 and 2.11 builds).
const TWO_CUDA: &str = "[[tool.kernels.targets]]\ntorch = \"2.10\"\nbackend = \"cuda-12.8\"\n\n[[tool.kernels.targets]]\ntorch = \"2.11\"\nbackend = \"cuda-12.6\"\n";

/// A third target that chooses the variant of the first: found in the cache,
/// not fetched again.
const SAME_AS_FIRST: &str =
    "[[tool.kernels.targets]]\ntorch = \"2.10\"\nbackend = \"cuda-12.8\"\npython = \"3.12\"\n";

#[test]
fn download_fetches_for_every_declared_target_unless_a_flag_narrows_it() {
    let empty = tempfile::tempdir().unwrap();
    let context = TestContext::new()
        .with_pyproject(&format!(
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\n{TWO_CUDA}\n{SAME_AS_FIRST}"
        ))
        .with_env("PATH", empty.path());
    context.run_ok(&["lock", "--target-runtime", "0.17.2"]);
    let out = context.run_ok(&["download"]);
    snapshot!("declared_download_two_targets", out);
    let snapshots = context
        .cache
        .join("kernels--kernels-community--relu")
        .join("snapshots");
    let commit = fs_err::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut variants: Vec<String> = fs_err::read_dir(commit.join("build"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    variants.sort();
    assert_eq!(
        variants,
        [
            "torch210-cxx11-cu128-x86_64-linux",
            "torch211-cxx11-cu126-x86_64-linux"
        ]
    );
    // The JSON summary names each variant once.
    let out = context.run_ok(&["download", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 1, "{doc}");
    // A flag narrows the run to one environment.
    let out = context.run_ok(&[
        "download",
        "--torch-version",
        "2.11",
        "--cuda-version",
        "12.6",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Target targets["), "{stderr}");
    assert!(
        stderr.contains("torch211-cxx11-cu126-x86_64-linux"),
        "{stderr}"
    );
}

#[test]
fn download_selects_for_the_declared_target_the_project_torch_is() {
    // The stub torch is 2.7 CPU: the first target.
    let targets = "[[tool.kernels.targets]]\ntorch = \"2.7\"\nbackend = \"cpu\"\n\n[[tool.kernels.targets]]\ntorch = \"2.10\"\nbackend = \"cuda-12.8\"\n";
    let pyproject = format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n\n{targets}"
    );
    let context = TestContext::new()
        .with_pyproject(&pyproject)
        .with_stub_torch();
    context.run_ok(&["lock", "--target-runtime", "0.17.2"]);
    let out = context.run_ok(&["download"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is targets[1] of ./pyproject.toml: downloading for it alone"),
        "{stderr}"
    );
    assert!(stderr.contains("torch-cpu"), "{stderr}");
    assert!(!stderr.contains("torch-cuda"), "{stderr}");
}

#[test]
fn a_kernel_locks_lock_is_checked_from_the_variants_it_read() {
    let context = TestContext::new().with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\n{TORCH27}"
    ));
    let out = context.run(&["lock", "--target-runtime", "0.19.1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kernels::lock::no_target_build"),
        "{stderr}"
    );
    assert!(
        stderr.contains("kernels-community/relu: no version has one (checked v1)"),
        "{stderr}"
    );
    assert!(!context.project.join("kernels.lock").exists());
    // A target relu has a build for locks.
    context.write(
        "pyproject.toml",
        &context
            .read("pyproject.toml")
            .replace("\"2.7\"", "\"2.12\""),
    );
    context.run_ok(&["lock", "--target-runtime", "0.19.1"]);
}

/// `kernels lock --check`, online and offline, refuses the lock that `kernels
/// lock` refuses for a missing target build, with the same error; offline it
/// says it cannot decide only for a kernel whose listing the cache lacks.
#[test]
fn lock_check_refuses_what_lock_refuses_for_a_missing_target_build() {
    let body = format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.17.2\"\n{{extra}}\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\n{TORCH27}"
    );
    let context = TestContext::new()
        .with_pyproject(&body.replace("{extra}", "missing-target-builds = \"warn\"\n"));
    context.run_ok(&["lock"]);
    context.write("pyproject.toml", &body.replace("{extra}", ""));
    let code = "kernels::lock::no_target_build";
    for args in [
        &["lock"][..],
        &["lock", "--check"],
        &["lock", "--check", "--offline"],
    ] {
        let out = context.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(code), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot decide"), "{args:?}: {stderr}");
    }
    // The listing `kernels lock` stored decided offline; without it (a KernelLocks
    // lock has no variant hashes) offline cannot decide and says so; online decides.
    fs_err::remove_dir_all(&context.cache).unwrap();
    let out = context.run(&["lock", "--check", "--offline"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: cannot decide offline whether kernels-community/relu"),
        "{stderr}"
    );
    assert!(!stderr.contains(code), "{stderr}");
    let out = context.run(&["lock", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(code),
        "{out:?}"
    );
}

/// `kernels download` with no build for the environment names, after the
/// error, the versions of the kernel that have one and the requirement that
/// selects one (as `lock`/`add` do for a declared target); the named fix works.
#[test]
fn download_without_a_build_names_the_versions_that_have_one() {
    let empty = tempfile::tempdir().unwrap();
    let context = TestContext::new()
        .with_pyproject(
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \"<0.0.3\"\n",
        )
        .with_env("PATH", empty.path());
    context.run_ok(&["lock", "--target-runtime", "0.10.5"]);
    let env = ["--torch-version", "2.7", "--cuda-version", "12.6"];
    let out = context.run(&[&["download"][..], &env].concat());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    snapshot!("download_no_build_names_versions", out);
    context.write(
        "pyproject.toml",
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.3\"\n",
    );
    context.run_ok(&["lock", "-P", "kernels-community/activation"]);
    context.run_ok(&[&["download"][..], &env].concat());
}
