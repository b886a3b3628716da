//! Issue 44: kernels under development. A local build written by the test
//! (kernel-builder's `build/<variant>/` layout) stands in for `acme/good`,
//! through `LOCAL_KERNELS` or a `pyproject.toml` `path`; the lock still pins
//! the Hub version, `env` and `download --explain` say which source each
//! loading API uses, and `check` imports both, the local build through the
//! reference runtime's own `get_kernel` with `LOCAL_KERNELS`, offline.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, TestContext};

use crate::local_build::{Layout, LocalBuild};

/// A local build of `acme/good` at `dir` (variants under `build/`), with its
/// own op namespace so that its import is told from the Hub build's.
fn write_local_build(dir: &Path) {
    LocalBuild::new("good", "_good_cpu_dev")
        .file(
            "__init__.py",
            "import torch\n\nfrom ._ops import ops\n\n\ndef good(x):\n    return ops.good(x)\n\n\n__all__ = [\"good\"]\n",
        )
        .file(
            "_ops.py",
            "import torch\ntorch.library.define(\"_good_cpu_dev::good\", \"(Tensor x) -> Tensor\")\nops = torch.ops._good_cpu_dev\n",
        )
        .write(dir, Layout::Build);
}

/// A project on `acme/good` with `dependency` as its value, Python the
/// reference 0.17.2 environment with the stub torch.
fn project(dependency: &str) -> TestContext {
    let context = TestContext::with_generated_mirror(
        |m| crate::check::write_kernel(m, "good", '1', ""),
        &[],
    )
    .with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = {dependency}\n"
    ))
    .with_stub_torch_copy()
    .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.17.2"));
    write_local_build(&context.tmp.path().join("good-dev"));
    context
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_path_source_locks_as_its_version_and_is_checked_with_the_locked_commit() {
    let context = project("{ path = \"../good-dev\", version = 1 }");
    context.run_ok(&["lock", "--trust", "acme/good"]);
    let with_path = context.lockfile();
    context.write(
        "pyproject.toml",
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n",
    );
    fs_err::remove_file(context.project.join("kernels.lock")).unwrap();
    context.run_ok(&["lock", "--trust", "acme/good"]);
    assert_eq!(with_path, context.lockfile());
    context.write(
        "pyproject.toml",
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = { path = \"../good-dev\", version = 1 }\n",
    );
    context.run_ok(&["download"]);

    let (env, _) = text(&context.run_ok(&["env"]));
    let dev = fs_err::canonicalize(context.tmp.path())
        .unwrap()
        .join("project/../good-dev");
    assert!(env.contains("Local builds:"), "{env}");
    assert!(
        env.contains("acme/good (pyproject.toml): variant torch-cpu (under build/)"),
        "{env}"
    );
    let value = format!("LOCAL_KERNELS=acme/good={}", dev.display());
    assert!(env.contains(&value), "{env}");

    let out = context
        .kernels_without_hub()
        .args(["check"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The locked commit through load_kernel, the local build through the
    // runtime's get_kernel with LOCAL_KERNELS: two imports, two modules.
    assert!(stdout.contains("(module _good_cpu_1234567)"), "{stdout}");
    assert!(stdout.contains("(module _good_cpu_dev)"), "{stdout}");
    assert!(
        stdout.contains("ops (torch.ops._good_cpu_dev): good"),
        "{stdout}"
    );
    assert!(
        stderr.contains("through kernels 0.17.2 (`kernels.get_kernel(repo_id, version=…)` with LOCAL_KERNELS set)"),
        "{stderr}"
    );

    let json = context
        .kernels_without_hub()
        .args(["check", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["local"]["mechanism"], "get_kernel", "{doc}");
    assert_eq!(
        doc["local"]["kernels"][0]["module"], "_good_cpu_dev",
        "{doc}"
    );
    assert_eq!(doc["local"]["sources"]["kernels"][0]["get_kernel"], "hub");
}

#[test]
fn local_kernels_is_read_as_the_runtime_reads_it() {
    let context = project("1");
    context.run_ok(&["lock", "--trust", "acme/good"]);
    context.run_ok(&["download"]);
    let dev = context.tmp.path().join("good-dev");
    let set = format!("acme/good={}", dev.display());

    let out = context
        .kernels()
        .args(["download", "--explain", "--format", "json"])
        .env("LOCAL_KERNELS", &set)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let source = &doc["local_sources"]["kernels"][0];
    assert_eq!(source["origin"], "LOCAL_KERNELS", "{doc}");
    assert_eq!(source["get_kernel"], "local");
    assert_eq!(source["load_kernel"], "locked");
    assert_eq!(source["locked_commit"], "1".repeat(40));
    assert_eq!(source["variant"]["name"], "torch-cpu");

    // `download` still fetches the lock's pins and says once that it is set.
    let out = context
        .kernels()
        .args(["download"])
        .env("LOCAL_KERNELS", &set)
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("LOCAL_KERNELS is set").count(),
        1,
        "{stderr}"
    );

    let out = context
        .kernels_without_hub()
        .args(["check"])
        .env("LOCAL_KERNELS", &set)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("(module _good_cpu_1234567)"), "{stdout}");
    assert!(stdout.contains("(module _good_cpu_dev)"), "{stdout}");

    // A malformed entry: one error naming it, as the runtime raises.
    for (value, named) in [
        ("acme/good", "`acme/good`"),
        (&*format!("{set}:oops"), "`oops`"),
    ] {
        let out = context
            .kernels_without_hub()
            .args(["env"])
            .env("LOCAL_KERNELS", value)
            .output()
            .unwrap();
        let (_, stderr) = text(&out);
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&format!("LOCAL_KERNELS entry {named} has no `=`")),
            "{stderr}"
        );
    }
    // A path that does not exist: check names the entry and the path.
    let out = context
        .kernels_without_hub()
        .args(["check"])
        .env("LOCAL_KERNELS", "acme/good=/nonexistent/good")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "LOCAL_KERNELS entry `acme/good=/nonexistent/good`: /nonexistent/good does not exist"
        ),
        "{stderr}"
    );
}

#[test]
fn a_path_without_a_version_is_refused_with_the_fix() {
    let context = project("{ path = \"../good-dev\" }");
    let out = context.run(&["lock"]);
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    let flat = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("`path` needs `version`"), "{stderr}");
    assert!(
        flat.contains("{ path = \"../good-dev\", version = 1 }"),
        "{stderr}"
    );
    assert!(!context.project.join("kernels.lock").exists());
}

/// A CUDA build for compute capability 8.0 only, at the root of `dir` (no
/// `build/`), without a digest.
fn write_cuda_build(dir: &Path) {
    LocalBuild::new("good", "_good_cuda_dev")
        .variant("torch27-cxx11-cu126-x86_64-linux")
        .backend(r#"{"type": "cuda", "archs": ["8.0"]}"#)
        .file("__init__.py", "")
        .write(dir, Layout::Root);
}

const CUDA_ENV: [&str; 8] = [
    "--torch-version",
    "2.7",
    "--cuda-version",
    "12.6",
    "--arch",
    "x86_64",
    "--os",
    "linux",
];

#[test]
fn verify_path_refuses_a_local_build_whose_archs_exclude_the_target() {
    let context = project("1");
    let dev = context.tmp.path().join("cuda-dev");
    write_cuda_build(&dev);
    let dev_arg = dev.display().to_string();
    let verify = |capability: &str| {
        context
            .kernels_without_hub()
            .args(["verify", &dev_arg, "--cuda-capability", capability])
            .args(CUDA_ENV)
            .output()
            .unwrap()
    };
    let out = verify("9.0");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "torch27-cxx11-cu126-x86_64-linux (at the path's root) (loaded here): refused: "
        ),
        "{stdout}"
    );
    assert!(stdout.contains("9.0"), "{stdout}");
    let out = verify("8.0");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("(loaded here): fits"), "{stdout}");
    // No digest: said once, never called verified.
    assert_eq!(
        stderr.matches("no digest in metadata.json").count(),
        1,
        "{stderr}"
    );
    assert!(!stdout.contains("digest:"), "{stdout}");

    // `kernels info PATH` reads the root layout too.
    let out = context
        .kernels_without_hub()
        .args(["info", &dev_arg])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("torch27-cxx11-cu126-x86_64-linux"),
        "{stdout}"
    );
}

/// A zip-layout variant (`"build-layout": "zip"`, the package in `<id>.zip`)
/// given as the variant directory itself: `check` imports it through
/// `LOCAL_KERNELS` directly (no runtime installed); a corrupt archive is one
/// line naming it.
#[test]
fn zip_layout_local_builds_import_and_a_corrupt_archive_is_named() {
    let context = project("1").with_env("VIRTUAL_ENV", common::pyref_root().join("hub-2.4.0"));
    context.run_ok(&["lock", "--trust", "acme/good"]);
    context.run_ok(&["download"]);
    let variant = LocalBuild::new("good", "_good_zip_dev")
        .zipped(
            "__init__.py",
            "from ._ops import ops\n\n\ndef good(x):\n    return x\n\n\n__all__ = [\"good\"]\n",
        )
        .zipped(
            "_ops.py",
            "import torch\ntorch.library.define(\"_good_zip_dev::good\", \"(Tensor x) -> Tensor\")\nops = torch.ops._good_zip_dev\n",
        )
        .write(&context.tmp.path().join("zip-dev/torch-cpu"), Layout::Variant);
    let set = format!("acme/good={}", variant.display());
    let check = || {
        context
            .kernels_without_hub()
            .args(["check"])
            .env("LOCAL_KERNELS", &set)
            .output()
            .unwrap()
    };
    let out = check();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ops (torch.ops._good_zip_dev): good"),
        "{stdout}"
    );

    fs_err::write(variant.join("_good_zip_dev.zip"), b"not a zip").unwrap();
    let out = check();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("_good_zip_dev.zip"), "{stdout}");
    let out = context
        .kernels_without_hub()
        .args(["verify", &variant.display().to_string()])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let named: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("corrupt kernel archive"))
        .collect();
    assert_eq!(named.len(), 1, "{stdout}");
    assert!(named[0].contains("_good_zip_dev.zip"), "{stdout}");
}

#[test]
fn add_path_writes_a_path_source_and_refuses_a_directory_without_a_build() {
    let context = project("1");
    context.run_ok(&["lock", "--trust", "acme/good"]);
    let locked = context.lockfile();
    let before = context.read("pyproject.toml");
    let out = context.run(&[
        "add",
        "acme/good",
        "1",
        "--path",
        "../nowhere",
        "--trust",
        "acme/good",
    ]);
    let (_, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("`acme/good` --path ../nowhere"), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert_eq!(context.read("pyproject.toml"), before);

    context.run_ok(&[
        "add",
        "acme/good",
        "1",
        "--path",
        "../good-dev",
        "--trust",
        "acme/good",
    ]);
    let after = context.read("pyproject.toml");
    assert!(
        after.contains("\"acme/good\" = { path = \"../good-dev\", version = 1 }"),
        "{after}"
    );
    assert_eq!(context.lockfile(), locked);
}

/// Issue 44: `kernels verify PATH` selects the build's variant for every
/// declared target (`[[tool.kernels.targets]]`) and checks it with that
/// target's GPUs: a build whose archs exclude one is refused, naming it.
#[test]
fn verify_path_checks_the_build_for_every_declared_target() {
    let context = project("1");
    let dev = context.tmp.path().join("cuda-dev");
    write_cuda_build(&dev);
    let dev_arg = dev.display().to_string();
    let target = |torch: &str, capability: &str| {
        format!(
            "\n[[tool.kernels.targets]]\ntorch = \"{torch}\"\nbackend = \"cuda-12.6\"\ncuda-capabilities = [\"{capability}\"]\n"
        )
    };
    let verify = |targets: &[String]| {
        context.write(
            "pyproject.toml",
            &format!(
                "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/good\" = 1\n{}",
                targets.concat()
            ),
        );
        let out = context
            .kernels_without_hub()
            .args(["verify", &dev_arg])
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        let flat = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        (out.status.code(), stdout, flat)
    };
    // Both targets on 8.0: the build fits each, whatever this machine runs.
    let (code, stdout, stderr) = verify(&[target("2.7", "8.0"), target("2.7", "8.0")]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("targets["))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with("torch27-cxx11-cu126-x86_64-linux (at the path's root): fits")),
        "{stdout}"
    );
    // The second on 9.0: refused for it, named, as a Hub build would be.
    let (code, stdout, stderr) = verify(&[target("2.7", "8.0"), target("2.7", "9.0")]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let second = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("targets[2]"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        second.contains(": refused: ") && second.contains("9.0"),
        "{second}"
    );
    assert!(
        stderr.contains("refused for the declared target targets[2] (torch 2.7 + "),
        "{stderr}"
    );
    // A target the build has no variant for (torch 2.8).
    let (code, stdout, stderr) = verify(&[target("2.8", "8.0")]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("targets[1] (torch 2.8 + ")
            && stdout.contains("no variant of the build for it"),
        "{stdout}"
    );
    assert!(stderr.contains("targets[1] (torch 2.8 + "), "{stderr}");
}
