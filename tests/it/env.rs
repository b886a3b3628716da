//! `kernels env`: what the variant choice is made from, and where each value
//! came from; overrides for machines without a GPU or torch.

use kernels_test_support as common;

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
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} line:\n{text}"))
            .to_owned()
    };
    assert!(line("Python").ends_with("(from VIRTUAL_ENV)"), "{text}");
    assert!(line("torch").contains("2.7  (from torch in "), "{text}");
    assert!(line("Backend").contains("CUDA 12.6"), "{text}");
    assert!(line("C++ ABI").contains("cxx11"), "{text}");
    assert!(line("Target runtime").contains("kernels 0.17.2"), "{text}");
    assert!(line("Preferred").contains("-cu126-"), "{text}");
}

#[test]
fn overrides_need_no_torch_and_json_is_typed() {
    let dir = tempfile::tempdir().unwrap();
    let text = env_cmd(
        dir.path(),
        &[
            "--torch-version",
            "2.13",
            "--cuda-version",
            "12.6",
            "--arch",
            "x86_64",
            "--os",
            "linux",
            "--format",
            "json",
        ],
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
}

#[test]
fn download_explain_names_the_choice_and_every_rejection() {
    let p = crate::terminal::project();
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
    let out = run(&[
        "--torch-version",
        "2.13",
        "--cuda-version",
        "12.6",
        "--arch",
        "x86_64",
        "--os",
        "linux",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.matches(": no variant suits this environment").count(),
        6,
        "{text}"
    );
    assert!(
        text.contains("  - torch27-cxx11-cu126-x86_64-linux: built for torch 2.7, not 2.13"),
        "{text}"
    );
}
