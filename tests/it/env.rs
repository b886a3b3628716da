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
    assert_eq!(doc["schema"], "kernels-env/1");
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
