//! `kernels env`: what the variant choice is made from, and where each value
//! came from; overrides for machines without a GPU or torch.

use kernels_test_support::{self as common, snapshot};

fn env_cmd(dir: &std::path::Path, args: &[&str], vars: &[(&str, &str)]) -> String {
    let venv = common::pyref_root().join("kernels-0.17.2");
    let mut cmd = common::kernels("http://127.0.0.1:9", &dir.join("cache"));
    cmd.arg("env")
        .arg("--project")
        .arg(dir)
        .args(args)
        .env("VIRTUAL_ENV", &venv)
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        );
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn env_shows_detected_values_and_their_sources() {
    let dir = tempfile::tempdir().unwrap();
    let text = env_cmd(dir.path(), &[], &[("STUB_TORCH_CUDA", "12.6")]);
    // Python from VIRTUAL_ENV, torch 2.7 from the stub, CUDA 12.6, the cxx11
    // ABI, runtime 0.17.2 (installed there) and a `-cu126-` preferred variant.
    snapshot!("env_detected_values", text);
}

#[test]
fn overrides_need_no_torch_and_json_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    let text = env_cmd(
        dir.path(),
        &[&NEW_TORCH[..], &["--format", "json"]].concat(),
        // A broken torch must not be asked.
        &[("PYTHONPATH", "/nonexistent")],
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (doc["schema"].as_u64(), doc["command"].as_str()),
        (Some(1), Some("env"))
    );
    assert_eq!(
        doc["torch"]["arch_variant"],
        "torch213-cxx11-cu126-x86_64-linux"
    );
    assert_eq!(
        doc["torch"]["sources"]["torch"]["detail"],
        "--torch-version"
    );
    assert_eq!(
        doc["torch"]["sources"]["backend"]["detail"],
        "--cuda-version"
    );
    assert_eq!(doc["target_runtime"]["version"], "0.17.2");
    assert_eq!(doc["target_runtime"]["lock_format"], "kernel-locks");
}

#[test]
fn download_explain_names_the_choice_and_every_rejection() {
    let p = crate::terminal::tgi();
    let run = |args: &[&str]| {
        common::kernels(&p.server.endpoint, &p.cache)
            .args(["download", ".", "--explain"])
            .args(args)
            .current_dir(&p.project)
            .output()
            .unwrap()
    };
    let out = run(&[
        "--torch-version",
        "2.7",
        "--cuda-version",
        "12.6",
        "--arch",
        "x86_64",
        "--os",
        "linux",
        "--target-runtime",
        "0.17.2",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["command"], "download --explain");
    let kernels = doc["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 6);
    let rotary = kernels
        .iter()
        .find(|k| k["repo_id"] == "kernels-community/rotary")
        .unwrap();
    assert_eq!(rotary["chosen"][0], "torch27-cxx11-cu126-x86_64-linux");
    let reason = |name: &str| {
        rotary["variants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        reason("torch27-cxx11-cu128-x86_64-linux"),
        "CUDA 12.8 is newer than 12.6"
    );
    assert_eq!(
        reason("torch27-cxx11-cu128-aarch64-linux"),
        "built for aarch64-linux, not x86_64-linux"
    );
    assert_eq!(
        reason("torch27-cxx11-cu118-x86_64-linux"),
        "CUDA 11.8, another major version than 12.6"
    );
    // Nothing was downloaded.
    assert!(
        !p.cache
            .join("kernels--kernels-community--rotary/blobs")
            .exists()
    );

    // A torch newer than every build: each kernel says so, exit 1.
    let out = run(&NEW_TORCH);
    assert_eq!(out.status.code(), Some(1));
    // Each of the six kernels: "no variant suits this environment", with the
    // torch 2.7 builds rejected as "built for torch 2.7, not 2.13".
    snapshot!("tgi_explain_torch_too_new", out);
}

/// `acme/act`: v1 (tag v0.1.0) built for torch 2.7 only; v2 (tag v0.2.0)
/// adds torch 2.13 / CUDA 12.6; v3 (tag v0.3.0) is built for CUDA 13.0 only.
fn write_act(mirror: &std::path::Path) {
    let repo = mirror.join("repos/kernels/acme/act");
    let commits = [
        ("c1", '1', vec!["torch27-cxx11-cu126-x86_64-linux"]),
        (
            "c2",
            '2',
            vec![
                "torch27-cxx11-cu126-x86_64-linux",
                "torch213-cxx11-cu126-x86_64-linux",
            ],
        ),
        ("c3", '3', vec!["torch213-cxx11-cu130-x86_64-linux"]),
    ];
    for (id, digit, variants) in &commits {
        let dir = repo.join("commits").join(id);
        for variant in variants {
            let build = dir.join("tree/build").join(variant);
            fs_err::create_dir_all(&build).unwrap();
            fs_err::write(build.join("__init__.py"), format!("# {id}\n")).unwrap();
            fs_err::write(
                build.join("metadata.json"),
                "{\"version\": 1, \"python-depends\": []}\n",
            )
            .unwrap();
        }
        fs_err::write(
            dir.join("commit.toml"),
            format!(
                "sha = \"{}\"\ntitle = \"Build {id}\"\n",
                digit.to_string().repeat(40)
            ),
        )
        .unwrap();
    }
    fs_err::write(
        repo.join("repo.toml"),
        "commits = [\"c1\", \"c2\", \"c3\"]\nalso_serve_as = [\"model\"]\n\n\
         [branches]\nmain = \"c3\"\nv1 = \"c1\"\nv2 = \"c2\"\nv3 = \"c3\"\n\n\
         [tags]\n\"v0.1.0\" = \"c1\"\n\"v0.2.0\" = \"c2\"\n\"v0.3.0\" = \"c3\"\n",
    )
    .unwrap();
}

/// A machine without torch or GPU building for torch 2.13 and CUDA 12.6 on
/// x86_64 Linux (newer than `acme/act` v1's builds).
const NEW_TORCH: [&str; 8] = [
    "--torch-version",
    "2.13",
    "--cuda-version",
    "12.6",
    "--arch",
    "x86_64",
    "--os",
    "linux",
];

#[test]
fn explain_names_the_newer_versions_that_would_suit() {
    let world = common::TestContext::world_with(write_act);
    let run = |requirement: &str, runtime: &str, args: &[&str]| {
        fs_err::write(
            world.project.join("pyproject.toml"),
            format!("[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"acme/act\" = {requirement}\n"),
        )
        .unwrap();
        let lock = common::kernels(&world.server.endpoint, &world.cache)
            .args(["lock", "--trust", "acme/act", "--target-runtime", runtime])
            .current_dir(&world.project)
            .output()
            .unwrap();
        common::assert_ok(&lock);
        common::kernels(&world.server.endpoint, &world.cache)
            .args(args)
            .args(NEW_TORCH)
            .current_dir(&world.project)
            .output()
            .unwrap()
    };
    let explain = ["download", "--explain"];

    // 0.17 lock on branch v1: v2 suits, v3 (CUDA 13.0) does not.
    let out = run("1", "0.17.2", &explain);
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        "Target GPUs: not checked (no GPU was asked for; name them with `cuda-capabilities`/`rocm-archs` in [tool.kernels] or --cuda-capability/--rocm-arch)\n\
         acme/act@1111111: no variant suits this environment\n  \
         - torch27-cxx11-cu126-x86_64-linux: built for torch 2.7, not 2.13\n  \
         newer versions with a build for this environment:\n    \
         v2 (2222222): torch213-cxx11-cu126-x86_64-linux\n  \
         hint: to move to v2, require it and lock again:\n\n      kernels add acme/act 2\n\n"
    );
    // The hint works: after it, the variant is chosen.
    let add = common::kernels(&world.server.endpoint, &world.cache)
        .args(["add", "acme/act", "2", "--trust", "acme/act"])
        .current_dir(&world.project)
        .output()
        .unwrap();
    common::assert_ok(&add);
    let after = common::kernels(&world.server.endpoint, &world.cache)
        .args(["download", "--explain"])
        .args(NEW_TORCH)
        .current_dir(&world.project)
        .output()
        .unwrap();
    common::assert_ok(&after);
    // "acme/act@2222222: torch213-cxx11-cu126-x86_64-linux".
    snapshot!(
        "act_explain_after_add",
        String::from_utf8_lossy(&after.stdout)
    );

    // A variant-hash lock on tag v0.1.0: the newer tags, JSON typed.
    let out = run(
        "\">=0.1.0,<0.2\"",
        "0.10.5",
        &[&explain[..], &["--format", "json"]].concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernel = &doc["kernels"][0];
    assert_eq!(kernel["chosen"], serde_json::json!([]));
    assert_eq!(
        kernel["newer"],
        serde_json::json!([{
            "kind": "tag",
            "name": "v0.2.0",
            "commit": "2".repeat(40),
            "variants": ["torch213-cxx11-cu126-x86_64-linux"],
        }])
    );
    let text =
        String::from_utf8_lossy(&run("\">=0.1.0,<0.2\"", "0.10.5", &explain).stdout).into_owned();
    assert!(
        text.ends_with("hint: to move to v0.2.0, require it and lock again:\n\n      kernels add acme/act \">=0.2.0\"\n\n"),
        "{text}"
    );

    // `kernels env` in the project gives the same explanation.
    let out = run("1", "0.17.2", &["env"]);
    common::assert_ok(&out);
    snapshot!("act_env_explains", out);
    // Offline, nothing newer is looked up and the command says so.
    let out = run("1", "0.17.2", &[&explain[..], &["--offline"]].concat());
    snapshot!("act_explain_offline", out);
}

/// With no interpreter to run, `env` says so on its Python row rather than
/// naming `python3` as if it were found on PATH.
#[test]
fn env_says_when_the_python_cannot_be_run() {
    let empty = tempfile::tempdir().unwrap();
    let context = kernels_test_support::TestContext::new()
        .with_pyproject("[project]\nname = \"demo\"\n")
        .with_env("PATH", empty.path());
    let out = context.run(&["env"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Python") && l.contains("python3 (cannot be run)")),
        "{stdout}"
    );
}

/// `kernels env PROJECT_DIR` reads that project, as `download` and `verify`
/// take it: run from elsewhere, it reports the project's target runtime.
#[test]
fn env_takes_the_project_directory_as_download_does() {
    let context = kernels_test_support::TestContext::new().with_pyproject(
        "[project]\nname = \"demo\"\n\n[tool.kernels]\ntarget-runtime = \"0.16.2\"\n",
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let out = context
        .kernels()
        .current_dir(elsewhere.path())
        .arg("env")
        .arg(&context.project)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Target runtime") && l.contains("0.16.2")),
        "{stdout}"
    );
}
