//! `kernels describe-api` (issue 41): what reference 0.19.1 lists from a
//! variant's `symbols.json`, on the same server; a variant without one.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, TestContext};
use serde_json::{Value, json};

const API_V1: &str = "4040404040404040404040404040404040404040";
const CUDA: &str = "torch212-cxx11-cu126-x86_64-linux";
const CPU: &str = "torch212-cxx11-cpu-x86_64-linux";

fn write(dir: &Path, path: &str, content: &[u8]) {
    let path = dir.join(path);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

/// `acme/api` v1: a CUDA variant with `symbols.json`, a CPU one without.
fn mirror(root: &Path) {
    let repo = root.join("repos/kernels/acme/api");
    let tree = repo.join("commits/c1/tree");
    write(&tree, "README.md", b"# a kernel\n");
    for (variant, backend) in [(CUDA, "cuda"), (CPU, "cpu")] {
        let metadata = json!({"name": "api", "id": format!("_api_{backend}_0123abc"), "version": 1, "license": "Apache-2.0",
            "python-depends": [], "backend": {"type": backend}, "kernel-depends": []});
        write(
            &tree,
            &format!("build/{variant}/metadata.json"),
            &serde_json::to_vec_pretty(&metadata).unwrap(),
        );
        write(
            &tree,
            &format!("build/{variant}/api/__init__.py"),
            b"def relu(x):\n    return x\n",
        );
    }
    let symbols = json!({
        "schema_version": 1,
        "functions": [{"name": "relu", "signature": "(x)"}, {"name": "gelu"}],
        "layers": [
            {"name": "ReLU", "attributes": {"has_backward": true, "can_torch_compile": null}},
            {"name": "Gelu", "attributes": {"has_backward": false, "can_torch_compile": true}}
        ]
    });
    write(
        &tree,
        &format!("build/{CUDA}/symbols.json"),
        &serde_json::to_vec_pretty(&symbols).unwrap(),
    );
    write(
        &repo,
        "commits/c1/commit.toml",
        format!("sha = \"{API_V1}\"\n").as_bytes(),
    );
    write(
        &repo,
        "repo.toml",
        b"commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
    );
}

fn context(backend: &[(&str, &str)]) -> TestContext {
    let mut context = TestContext::with_generated_mirror(mirror, &[])
        .with_stub_torch()
        .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.19.1"))
        .with_env("KERNELS_MAX_RETRIES", "0")
        .with_env("STUB_TORCH_VERSION", "2.12");
    for (name, value) in backend {
        context = context.with_env(name, value);
    }
    context
}

/// Reference 0.19.1's `kernels describe-api ARGS` against the same server.
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
    .env("STUB_TORCH_VERSION", "2.12")
    .current_dir(&context.project)
    .arg(common::pyref_root().join("kernels-0.19.1/bin/kernels"))
    .args(["describe-api", "--trust-remote-code"])
    .args(args);
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn describe_api_lists_what_reference_0_19_1_lists() {
    let cuda = [("STUB_TORCH_CUDA", "12.6")];
    let context = context(&cuda);
    for args in [
        &["acme/api"][..],
        &["acme/api", "--version", "1"],
        &["acme/api", "--revision", "main"],
    ] {
        let theirs = reference(&context, &cuda, &[args, &["--json"]].concat());
        assert!(theirs.status.success(), "{}", common::stderr(&theirs));
        let ours = context.run_ok(&[&["describe-api"], args, &["--json"]].concat());
        assert_eq!(json_of(&ours), json_of(&theirs), "{args:?}");
        let theirs = reference(&context, &cuda, args);
        let ours = context.run_ok(&[&["describe-api"], args].concat());
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{args:?}"
        );
    }
}

#[test]
fn a_variant_without_symbols_is_one_error_naming_it() {
    let context = context(&[]);
    let theirs = reference(&context, &[], &["acme/api"]);
    assert_eq!(theirs.status.code(), Some(1));
    let out = context.run(&["describe-api", "acme/api"]);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(
        err.contains(&format!(
            "no symbols.json in acme/api (version: 1, revision: v1) (variant: {CPU})"
        )),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
