//! The fit of locked kernels for the target GPUs (issue 21, items 3 and 4):
//! `kernels env` and `kernels download --explain` say which variant fits which
//! target and why others do not; `kernels lock` warns, and `kernels lock
//! --check` fails, when a locked kernel has no variant for a declared target.

use std::path::Path;

use kernels_test_support::{TestContext, snapshot};

/// Variant → its `metadata.json`.
type Variants<'a> = &'a [(&'a str, &'a str)];

/// `acme/relu` v1: a CUDA 12.6 build for 8.0 and 9.0 and a CUDA 12.8 build for
/// 10.0 (from uncommitted sources); `acme/bad` v1: a build whose
/// `metadata.json` has a malformed `backend.archs`.
const RELU: Variants = &[
    (
        "torch27-cxx11-cu126-x86_64-linux",
        r#"{"version": 1, "python-depends": [], "backend": {"type": "cuda", "archs": ["8.0", "9.0"]}}"#,
    ),
    (
        "torch27-cxx11-cu128-x86_64-linux",
        r#"{"version": 1, "python-depends": [], "backend": {"type": "cuda", "archs": ["10.0"]},
            "provenance": {"kernel": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": true}}}"#,
    ),
];
const BAD: Variants = &[(
    "torch27-cxx11-cu126-x86_64-linux",
    r#"{"version": 1, "backend": {"type": "cuda", "archs": "9.0"}}"#,
)];

/// One repository of the mirror at `mirror`: a single commit (`sha` of
/// `digit`) on branch `v1` and `main` with `variants`.
fn write_kernel(mirror: &Path, repo: &str, digit: char, variants: Variants) {
    let dir = mirror.join("repos/kernels").join(repo);
    let commit = dir.join("commits/c1");
    for (variant, metadata) in variants {
        let build = commit.join("tree/build").join(variant);
        fs_err::create_dir_all(&build).unwrap();
        fs_err::write(build.join("__init__.py"), "# relu\n").unwrap();
        fs_err::write(build.join("metadata.json"), format!("{metadata}\n")).unwrap();
    }
    fs_err::write(
        commit.join("commit.toml"),
        format!(
            "sha = \"{}\"\ntitle = \"Build\"\n",
            digit.to_string().repeat(40)
        ),
    )
    .unwrap();
    fs_err::write(
        dir.join("repo.toml"),
        "commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
    )
    .unwrap();
}

/// A project for the 0.17.2 runtime depending on `acme/relu` v1 (and
/// `acme/bad` with `bad`), with `targets` as `[tool.kernels]` lines, against a
/// mirror of both, with the stub torch for CUDA 12.6.
fn project(targets: &str, bad: bool) -> TestContext {
    let context = TestContext::with_generated_mirror(
        |mirror| {
            write_kernel(mirror, "acme/relu", '1', RELU);
            write_kernel(mirror, "acme/bad", '2', BAD);
        },
        &[],
    )
    .with_stub_torch()
    .with_env("STUB_TORCH_CUDA", "12.6");
    let bad = if bad { "\"acme/bad\" = 1\n" } else { "" };
    context.write(
        "pyproject.toml",
        &format!(
            "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.17.2\"\ntrust = [\"acme/relu\", \"acme/bad\"]\n{targets}\n\n\
             [tool.kernels.dependencies]\n\"acme/relu\" = 1\n{bad}"
        ),
    );
    context
}

/// The `Target GPUs` row and the variants section of `kernels env`.
fn env_fit(context: &TestContext, args: &[&str], vars: &[(&str, &str)]) -> String {
    let mut cmd = context.kernels();
    cmd.arg("env").args(args);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    let row = text
        .lines()
        .find(|l| l.starts_with("Target GPUs"))
        .unwrap_or_else(|| panic!("no Target GPUs row:\n{text}"));
    let section = &text[text.find("\nVariants for").expect("a variants section")..];
    format!("{row}\n{section}")
}

#[test]
fn env_shows_the_fit_of_every_variant_for_the_declared_targets() {
    let context = project("cuda-capabilities = [\"9.0\", \"10.0\"]", false);
    // The 0.17 lock reads every variant's metadata.json into the cache; each
    // target has a variant, so nothing is said about the fit.
    snapshot!(
        "fit_lock_every_target_has_a_variant",
        context.run(&["lock"])
    );
    snapshot!("fit_env_declared_targets", env_fit(&context, &[], &[]));

    // `--cuda-capability` takes the place of the manifest's targets.
    snapshot!(
        "fit_env_flag_target",
        env_fit(&context, &["--cuda-capability", "8.6"], &[])
    );

    // JSON carries the targets and each variant's verdict per target.
    let out = context.run_ok(&["env", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["targets"]["targets"],
        serde_json::json!(["cuda:9.0", "cuda:10.0"])
    );
    assert_eq!(doc["targets"]["source"], "manifest");
    let fit = &doc["lock"]["kernels"][0]["fit"];
    assert_eq!(fit[0]["variant"], "torch27-cxx11-cu126-x86_64-linux");
    assert_eq!(
        fit[0]["targets"],
        serde_json::json!([
            {"target": "cuda:9.0", "fits": true},
            {"target": "cuda:10.0", "fits": false}
        ])
    );
    assert_eq!(fit[1]["refusals"][0]["rule"], "archs");
    assert_eq!(fit[1]["refusals"][0]["target"], "cuda:9.0");
}

#[test]
fn env_checks_the_gpu_torch_sees_and_says_when_there_is_none() {
    let context = project("", false);
    context.run_ok(&["lock"]);
    snapshot!(
        "fit_env_stub_gpu",
        env_fit(&context, &[], &[("STUB_TORCH_CAPABILITY", "9.0")])
    );
    snapshot!("fit_env_no_gpu", env_fit(&context, &[], &[]));
    // A GPU that cannot be queried is "not checked", never a crash.
    let failing = env_fit(
        &context,
        &[],
        &[
            ("STUB_TORCH_CAPABILITY", "9.0"),
            ("STUB_TORCH_DEVICE_ERROR", "no driver"),
        ],
    );
    assert!(
        failing.starts_with(
            "Target GPUs     not checked (querying the GPU failed: RuntimeError: no driver;"
        ),
        "{failing}"
    );
    // env reads metadata.json from the cache only, and says when it is not there.
    fs_err::remove_dir_all(&context.cache).unwrap();
    snapshot!(
        "fit_env_metadata_not_in_cache",
        env_fit(&context, &[], &[("STUB_TORCH_CAPABILITY", "9.0")])
    );
}

#[test]
fn download_explain_fetches_the_metadata_and_names_each_refusal() {
    let context = project("cuda-capabilities = [\"9.0\"]", true);
    // The 0.17 lock reads every metadata.json: the malformed one is one error
    // naming the file and the field.
    snapshot!("fit_lock_malformed_metadata", context.run(&["lock"]));
    // A variant-hash lock does not read metadata.json: the malformed one of
    // acme/bad is found by the fit check, which says it cannot check it.
    snapshot!(
        "fit_lock_variant_hash_malformed",
        context.run(&["lock", "--target-runtime", "0.16.2"])
    );
    fs_err::remove_dir_all(&context.cache).unwrap();
    // Online: the metadata is fetched (and cached); the file and the field of
    // the malformed one are named.
    snapshot!(
        "fit_download_explain",
        context.run(&["download", "--explain", "--target-runtime", "0.16.2"])
    );
    // Both metadata.json blobs are cached (not linked into the snapshot: the
    // runtime would take a folder with only metadata.json for a variant).
    let blobs = fs_err::read_dir(context.cache.join("kernels--acme--relu/blobs"))
        .unwrap()
        .count();
    assert_eq!(blobs, 2, "the fetched metadata.json blobs are cached");
    let snapshot = context
        .cache
        .join("kernels--acme--relu/snapshots")
        .join("1".repeat(40));
    assert!(!snapshot.join("build").exists(), "nothing is linked");
    let out = context.run(&[
        "download",
        "--explain",
        "--target-runtime",
        "0.16.2",
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bad = &doc["kernels"][1]["fit"][0];
    assert_eq!(
        (bad["metadata"].as_str(), bad["fits"].as_null()),
        (Some("invalid"), Some(()))
    );
    assert_eq!(
        doc["kernels"][0]["fit"][1]["warnings"][0],
        "the build was made from uncommitted sources (kernel)"
    );
}

#[test]
fn lock_warns_and_lock_check_fails_for_a_target_no_variant_supports() {
    let context = project("cuda-capabilities = [\"9.0\", \"12.0\"]", false);
    snapshot!("fit_lock_warning", context.run(&["lock"]));
    let out = context.run(&["lock", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["fit"][0]["target"], "cuda:12.0");
    assert_eq!(doc["fit"][0]["kind"], "no-variant");

    // Online, `--check` re-resolves and checks the metadata it reads: exit 1
    // with the fix.
    snapshot!("fit_lock_check", context.run(&["lock", "--check"]));
    // Offline it has the metadata of the downloaded variants only (the others
    // are never linked into the snapshot): before a download it cannot check,
    // and says so (not a failure).
    snapshot!(
        "fit_lock_check_not_in_cache",
        context.run(&["lock", "--check", "--offline"])
    );
    context.run_ok(&["download", "--all-variants"]);
    snapshot!(
        "fit_lock_check_offline",
        context.run(&["lock", "--check", "--offline"])
    );
    let out = context.run(&["lock", "--check", "--offline", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["up_to_date"].as_bool(), doc["fit"]["ok"].as_bool()),
        (Some(true), Some(false))
    );
    // A flag replaces the manifest's targets: 9.0 has a variant.
    let out = context.run(&["lock", "--check", "--offline", "--cuda-capability", "9.0"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// When the variant the ranking puts first is refused, `download --explain`
/// shows the choice the download makes (the next variant that fits), and the
/// download takes exactly that one.
#[test]
fn download_explain_shows_the_fallback_the_download_takes() {
    let context =
        project("cuda-capabilities = [\"9.0\"]", false).with_env("STUB_TORCH_CUDA", "12.8");
    context.run_ok(&["lock"]);
    snapshot!(
        "fit_download_explain_fallback",
        context.run(&["download", "--explain"])
    );
    context.run_ok(&["download"]);
    let build = context
        .cache
        .join("kernels--acme--relu/snapshots")
        .join("1".repeat(40))
        .join("build");
    let cached: Vec<String> = fs_err::read_dir(&build)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(cached, ["torch27-cxx11-cu126-x86_64-linux"]);
}
