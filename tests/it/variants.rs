//! `kernels variants` (issue 41): the reference 0.19.1 command's variants,
//! compatibility and preference on the same server, a verdict per declared
//! target, and the flags of issue 45 (`-V`, `--version`, torch without a
//! backend).

use std::collections::BTreeSet;
use std::process::Output;

use kernels_test_support::{self as common, TestContext};
use serde_json::Value;

/// The stub torch environments both commands decide for.
const STUBS: &[&[(&str, &str)]] = &[
    &[("STUB_TORCH_VERSION", "2.12"), ("STUB_TORCH_CUDA", "12.8")],
    &[("STUB_TORCH_VERSION", "2.11"), ("STUB_TORCH_CUDA", "12.6")],
    &[("STUB_TORCH_VERSION", "2.12"), ("STUB_TORCH_HIP", "7.2")],
    &[("STUB_TORCH_VERSION", "2.13")],
    &[("STUB_TORCH_VERSION", "2.7")],
];

/// Our binary and reference 0.19.1 both see the stub torch of `stub` through
/// the 0.19.1 environment's interpreter.
fn context() -> TestContext {
    TestContext::new()
        .with_stub_torch()
        .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.19.1"))
}

/// Reference 0.19.1's `kernels variants ARGS` with the stub `env`.
fn reference(context: &TestContext, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = common::python(
        "kernels-0.19.1",
        context.endpoint(),
        &context.tmp.path().join("python-cache"),
    );
    cmd.env(
        "PYTHONPATH",
        common::repo_root().join("tests/python/stub_torch"),
    )
    .current_dir(&context.project)
    .arg(common::pyref_root().join("kernels-0.19.1/bin/kernels"))
    .arg("variants")
    .args(args);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    out
}

/// Ours, with the same stub `env`.
fn ours(context: &TestContext, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = context.kernels();
    cmd.arg("variants").args(args);
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// `(variant, compatible, preferred, reason is null)` of one revision.
type Verdicts = BTreeSet<(String, bool, bool, bool)>;

/// Per revision: `(version, revision)` and the set of `(variant,
/// compatible, preferred)`, what both documents must agree on (the reasons
/// are worded differently; their presence is compared).
fn verdicts(doc: &Value) -> Vec<(Value, Value, Verdicts)> {
    assert_eq!(doc["repo_id"], "kernels-community/relu");
    doc["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let set = r["variants"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| {
                    (
                        v["variant"].as_str().unwrap().to_owned(),
                        v["compatible"].as_bool().unwrap(),
                        v["preferred"].as_bool().unwrap(),
                        v["reason"].is_null(),
                    )
                })
                .collect();
            (r["version"].clone(), r["revision"].clone(), set)
        })
        .collect()
}

#[test]
fn variants_json_matches_reference_0_19_1() {
    let context = context();
    let selectors: &[&[&str]] = &[
        &[],
        &["--all-versions"],
        &["--version", "1"],
        &["--version", "latest"],
        &["--revision", "main"],
        &["--only-compatible"],
    ];
    for (i, env) in STUBS.iter().enumerate() {
        // Every selector once; the other environments with the default.
        let selectors = if i == 0 { selectors } else { &selectors[..1] };
        for selector in selectors {
            let args = [&["kernels-community/relu", "--json"], *selector].concat();
            let theirs = verdicts(&json_of(&reference(&context, env, &args)));
            let ours = verdicts(&json_of(&ours(&context, env, &args)));
            assert_eq!(ours, theirs, "{env:?} {selector:?}");
            let compatible = theirs[0].2.iter().filter(|v| v.1).count();
            assert!(
                selector.is_empty() || compatible > 0 || env.len() == 1,
                "{env:?}: no environment with a compatible variant exercises nothing"
            );
        }
    }
}

#[test]
fn variants_text_lists_the_reference_lines() {
    let context = context();
    let env = STUBS[0];
    let theirs =
        String::from_utf8(reference(&context, env, &["kernels-community/relu"]).stdout).unwrap();
    let ours = String::from_utf8(ours(&context, env, &["kernels-community/relu"]).stdout).unwrap();
    // The same first lines (the label and the preferred variant); the
    // rejected ones in another order and wording.
    let head = |text: &str| text.lines().take(3).collect::<Vec<_>>().join("\n");
    assert_eq!(head(&ours), head(&theirs));
    assert_eq!(ours.lines().count(), theirs.lines().count());
}

#[test]
fn variants_decides_for_every_declared_target() {
    let context = context().with_pyproject(
        "[project]\nname = \"app\"\nversion = \"0\"\n\n\
         [tool.kernels.dependencies]\n\n\
         [[tool.kernels.targets]]\ntorch = \"2.12\"\nbackend = \"cuda-12.8\"\nos = \"linux\"\narch = \"x86_64\"\n\n\
         [[tool.kernels.targets]]\ntorch = \"2.11\"\nbackend = \"cpu\"\nos = \"linux\"\narch = \"aarch64\"\n",
    );
    let doc = json_of(&ours(&context, &[], &["kernels-community/relu", "--json"]));
    let environments = doc["revisions"][0]["environments"].as_array().unwrap();
    assert_eq!(environments.len(), 2, "{doc:#}");
    let preferred = |e: &Value| {
        e["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["preferred"] == true)
            .map(|v| v["variant"].as_str().unwrap().to_owned())
    };
    assert_eq!(environments[0]["source"], "target 1");
    assert_eq!(
        preferred(&environments[0]).as_deref(),
        Some("torch212-cxx11-cu126-x86_64-linux")
    );
    assert_eq!(environments[1]["source"], "target 2");
    assert_eq!(
        preferred(&environments[1]).as_deref(),
        Some("torch211-cxx11-cpu-aarch64-linux")
    );
    // Every rejected variant says why.
    for e in environments {
        for v in e["variants"].as_array().unwrap() {
            assert_eq!(v["compatible"] == false, v["reason"].is_string(), "{v}");
        }
    }
    // Text: one block per target.
    let text = String::from_utf8(ours(&context, &[], &["kernels-community/relu"]).stdout).unwrap();
    assert!(
        text.contains("Version 1, torch 2.12 (cxx11 ABI), CUDA 12.8, x86_64-linux (target 1):"),
        "{text}"
    );
    assert!(text.contains("(target 2):"), "{text}");
}

#[test]
fn variants_rejects_an_unknown_version_naming_the_existing_ones() {
    let context = context();
    let out = context.run(&["variants", "kernels-community/relu", "--version", "9"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(err.contains("has no version 9; its versions: 1"), "{err}");
}

#[test]
fn versions_says_what_replaces_it() {
    let context = context().with_env("STUB_TORCH_VERSION", "2.12");
    let out = context.run_ok(&[
        "versions",
        "kernels-community/relu",
        "--cpu",
        "--torch-version",
        "2.12",
    ]);
    let err = common::stderr(&out);
    assert!(
        err.contains("`kernels versions` is deprecated")
            && err.contains("kernels variants kernels-community/relu --all-versions"),
        "{err}"
    );
}

#[test]
fn a_torch_version_without_a_backend_names_the_backend_flags() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n");
    context.run_ok(&["lock"]);
    let out = context.run(&["download", "--torch-version", "2.10"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    for flag in [
        "--cuda-version",
        "--rocm-version",
        "--xpu-version",
        "--metal",
        "--cpu",
    ] {
        assert!(err.contains(flag), "{flag}: {err}");
    }
    assert!(err.contains("torch_without_backend"), "{err}");
}

#[test]
fn dash_v_is_the_program_version_everywhere_and_version_the_kernel_version() {
    let context = TestContext::new();
    let version = format!(" {}\n", env!("CARGO_PKG_VERSION"));
    for command in [
        &["info"][..],
        &["download"],
        &["variants"],
        &["cache", "ls"],
        &["benchmark"],
    ] {
        let out = context.run(&[command, &["-V"]].concat());
        assert!(
            out.status.success(),
            "{command:?}: {}",
            common::stderr(&out)
        );
        // `kernels-info 0.1.0`: clap names the subcommand.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.starts_with("kernels") && stdout.ends_with(&version),
            "{command:?}: {stdout}"
        );
    }
    // `--version` is the kernel version where the reference has one, and
    // nothing on the other commands.
    let out = context.run(&["download", "--version"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("unexpected argument '--version'"));
    let out = context.run(&["info", "kernels-community/relu", "--version", "1"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
}

#[test]
fn a_backend_without_a_torch_version_says_how_to_give_one() {
    // The 0.19.1 environment has no torch.
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n")
        .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.19.1"));
    context.run_ok(&["lock"]);
    let out = context.run(&["download", "--cuda-version", "12.6"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(err.contains("backend_without_torch"), "{err}");
    assert!(
        err.contains("`--cuda-version 12.6` needs a torch version"),
        "{err}"
    );
    assert!(
        err.contains("--torch-version") && err.contains("[[tool.kernels.targets]]"),
        "{err}"
    );
    // A declared target's torch completes it.
    context.write(
        "pyproject.toml",
        "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\n\
         [[tool.kernels.targets]]\ntorch = \"2.12\"\nbackend = \"cuda-12.8\"\n",
    );
    context.run_ok(&["lock"]);
    let out = context.run(&["download", "--dry-run", "--cuda-version", "12.6"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
}
