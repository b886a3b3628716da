//! Declared targets (`[[tool.kernels.targets]]`) and the precedence of each
//! value (flag, then the table, then the project's interpreter, then for the
//! Python version `requires-python`); a runtime newer than the newest one
//! modelled; and the first lock of a project with no runtime anywhere, read
//! by the pinned reference.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels::lock::format::{LockFormat, Lockfile};
use kernels_test_support::{self as common, Server, snapshot};

const DEPENDENCIES: &str = "[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n";

const TARGET: &str = r#"
[[tool.kernels.targets]]
torch = "2.8"
backend = "cuda-12.8"
python = "3.12"
os = "linux"
arch = "x86_64"
cuda-capabilities = ["9.0"]
"#;

/// `kernels <args>` run in the project `dir`, with `PATH` set to `path` only.
fn kernels(server: &Server, cache: &Path, path: &Path, dir: &Path, args: &[&str]) -> Output {
    fs_err::create_dir_all(path).unwrap();
    common::kernels(&server.endpoint, cache)
        .env("PATH", path)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The JSON document of a successful `kernels env --format json`.
fn env_json(
    server: &Server,
    cache: &Path,
    path: &Path,
    dir: &Path,
    extra: &[&str],
) -> serde_json::Value {
    let args = [&["env", "--format", "json"], extra].concat();
    let output = kernels(server, cache, path, dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A directory holding a `python3` that answers the probe as an interpreter
/// of Python 3.11 with a free-threaded build and no torch.
fn fake_interpreter(root: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = root.join("fake-bin");
    fs_err::create_dir_all(&bin).unwrap();
    let probe = r#"{"torch": null, "error": "ModuleNotFoundError: No module named 'torch'", "kernels": null, "modules": {}, "device": {"kind": "none"}, "python": {"major": 3, "minor": 11, "free_threaded": true}}"#;
    let python = bin.join("python3");
    fs_err::write(&python, format!("#!/bin/sh\necho '{probe}'\n")).unwrap();
    fs_err::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn declared_target_chooses_the_environment_below_the_flags() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(
        dir.join("pyproject.toml"),
        format!("{DEPENDENCIES}{TARGET}"),
    )
    .unwrap();

    let doc = env_json(&server, &cache, &empty, &dir, &[]);
    let torch = &doc["torch"];
    assert_eq!(torch["arch_variant"], "torch28-cxx11-cu128-x86_64-linux");
    assert_eq!(torch["sources"]["torch"]["kind"], "declared");
    assert_eq!(torch["sources"]["backend"]["kind"], "declared");
    assert_eq!(doc["python_target"]["version"], "3.12");
    assert_eq!(doc["python_target"]["source"]["kind"], "declared");
    assert_eq!(doc["targets"]["targets"], serde_json::json!(["cuda:9.0"]));

    // A flag replaces its value only; the backend group as a whole.
    let doc = env_json(
        &server,
        &cache,
        &empty,
        &dir,
        &["--torch-version", "2.9", "--python-version", "3.13"],
    );
    assert_eq!(
        doc["torch"]["arch_variant"],
        "torch29-cxx11-cu128-x86_64-linux"
    );
    assert_eq!(doc["torch"]["sources"]["torch"]["kind"], "flag");
    assert_eq!(doc["torch"]["sources"]["backend"]["kind"], "declared");
    assert_eq!(doc["python_target"]["version"], "3.13");
    assert_eq!(doc["python_target"]["source"]["kind"], "flag");
    let doc = env_json(&server, &cache, &empty, &dir, &["--cpu"]);
    assert_eq!(
        doc["torch"]["arch_variant"],
        "torch28-cxx11-cpu-x86_64-linux"
    );
    assert_eq!(doc["torch"]["sources"]["backend"]["kind"], "flag");

    // Several targets: a run chooses for the flags and the project's Python,
    // says so once, and checks the GPUs of every target.
    let output = kernels(&server, &cache, &empty, &dir, &["lock"]);
    assert!(output.status.success(), "{}", stderr(&output));
    fs_err::write(
        dir.join("pyproject.toml"),
        format!("{DEPENDENCIES}{TARGET}{}", TARGET.replace("9.0", "10.0")),
    )
    .unwrap();
    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &["download", "--dry-run", "--torch-version", "2.8", "--cpu"],
    );
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(text.matches("declares 2 targets").count(), 1, "{text}");
    let doc = env_json(
        &server,
        &cache,
        &empty,
        &dir,
        &["--torch-version", "2.8", "--cpu"],
    );
    assert_eq!(
        doc["targets"]["targets"],
        serde_json::json!(["cuda:9.0", "cuda:10.0"])
    );
}

#[test]
fn python_version_precedence_flag_table_interpreter_requires_python() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let interpreter = fake_interpreter(tmp.path());
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    let write = |requires: &str, target: &str| {
        fs_err::write(
            dir.join("pyproject.toml"),
            format!("[project]\nname = \"app\"\n{requires}\n{DEPENDENCIES}{target}"),
        )
        .unwrap();
    };
    let python = |path: &Path, extra: &[&str]| {
        let doc = env_json(&server, &cache, path, &dir, extra);
        let target = &doc["python_target"];
        (
            target["version"].clone(),
            target["free_threaded"].clone(),
            target["source"]["kind"].as_str().unwrap().to_owned(),
        )
    };
    let table = "[[tool.kernels.targets]]\npython = \"3.12\"\n";
    write("requires-python = \">=3.10,<4\"", table);
    assert_eq!(
        python(&interpreter, &["--python-version", "3.13"]),
        ("3.13".into(), false.into(), "flag".to_owned())
    );
    assert_eq!(
        python(&interpreter, &[]),
        ("3.12".into(), false.into(), "declared".to_owned())
    );
    write("requires-python = \">=3.10,<4\"", "");
    assert_eq!(
        python(&interpreter, &[]),
        ("3.11".into(), true.into(), "interpreter".to_owned())
    );
    assert_eq!(
        python(&empty, &[]),
        ("3.10".into(), false.into(), "requires-python".to_owned())
    );
    write("", "");
    assert_eq!(
        python(&empty, &[]),
        (
            serde_json::Value::Null,
            false.into(),
            "not-checked".to_owned()
        )
    );
    // The text row says it once.
    let output = kernels(&server, &cache, &empty, &dir, &["env"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.matches("Target Python").count(), 1, "{text}");
    // Substring: the Target Python row also names the host's interpreter path.
    assert!(text.contains("not checked (no --python-version"), "{text}");
}

#[test]
fn bad_targets_are_one_error_naming_the_key_and_the_fix() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    for (name, table) in [
        (
            "target_unknown_backend",
            "[[tool.kernels.targets]]\ntorch = \"2.8\"\nbackend = \"cuda12\"\n",
        ),
        (
            "target_malformed_torch",
            "[[tool.kernels.targets]]\ntorch = \"2.x\"\n",
        ),
        (
            "target_python_not_a_string",
            "[[tool.kernels.targets]]\nbackend = \"cpu\"\n\n[[tool.kernels.targets]]\npython = 3.12\n",
        ),
    ] {
        fs_err::write(dir.join("pyproject.toml"), format!("{DEPENDENCIES}{table}")).unwrap();
        let output = kernels(&server, &cache, &empty, &dir, &["lock"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        snapshot!(name, output);
        // `download` reads the same table: the same error.
        fs_err::write(dir.join("kernels.lock"), "[]").unwrap();
        let output = kernels(&server, &cache, &empty, &dir, &["download"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        // Substring: only the key matters; the error also quotes the file's source.
        assert!(stderr(&output).contains("`targets["), "{}", stderr(&output));
        fs_err::remove_file(dir.join("kernels.lock")).unwrap();
    }
}

#[test]
fn a_runtime_newer_than_modelled_is_said_once() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("pyproject.toml"), DEPENDENCIES).unwrap();
    let note = "note: kernels 0.25.0 is newer than the newest runtime this tool models (0.19.1); assuming it behaves as 0.19.1 (KernelLocks lock, kernel repos, kernels-- cache, the variant rules of 0.19.1); run `kernels check` after `kernels download` to confirm that 0.25.0 loads the kernels";

    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &["lock", "--target-runtime", "0.25.0"],
    );
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(text.matches(note).count(), 1, "{text}");
    assert_eq!(lock_format(&dir), LockFormat::KernelLocks);

    let doc = env_json(
        &server,
        &cache,
        &empty,
        &dir,
        &["--target-runtime", "0.25.0"],
    );
    let newer = &doc["target_runtime"]["newer_than_modelled"];
    assert_eq!(
        (&newer["version"], &newer["assumed"]),
        (&"0.25.0".into(), &"0.19.1".into())
    );
    assert_eq!(newer["note"], note.strip_prefix("note: ").unwrap());
    let doc = env_json(
        &server,
        &cache,
        &empty,
        &dir,
        &["--target-runtime", "0.19.1"],
    );
    assert!(doc["target_runtime"]["newer_than_modelled"].is_null());

    // An installed 0.25 (its metadata only) is said the same way.
    let dist = dir.join(".venv/lib/python3.12/site-packages/kernels-0.25.0.dist-info");
    fs_err::create_dir_all(&dist).unwrap();
    fs_err::write(
        dist.join("METADATA"),
        "Metadata-Version: 2.4\nName: kernels\nVersion: 0.25.0\n\n",
    )
    .unwrap();
    let output = kernels(&server, &cache, &empty, &dir, &["lock"]);
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(text.matches(note).count(), 1, "{text}");
    // Substring: one status line among the host-dependent environment lines.
    assert!(
        text.contains("Target runtime: kernels 0.25.0 (format of the existing kernels.lock, installed in .venv)"),
        "{text}"
    );
}

fn lock_format(dir: &Path) -> LockFormat {
    let path = dir.join("kernels.lock");
    Lockfile::parse(&fs_err::read_to_string(&path).unwrap(), &path)
        .unwrap()
        .format()
}

/// The pinned reference that reads the first lock: 0.19.1 where it is set up,
/// else 0.17.2 (which reads the same `KernelLocks` format).
fn reference_env() -> &'static str {
    if common::pyref_root()
        .join("kernels-0.19.1/bin/python")
        .exists()
    {
        "kernels-0.19.1"
    } else {
        "kernels-0.17.2"
    }
}

#[test]
fn the_lock_for_0_19_is_read_by_the_pinned_0_19_and_names_it_alone() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("pyproject.toml"), DEPENDENCIES).unwrap();
    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &["-v", "lock", "--target-runtime", "0.19.1"],
    );
    let text = stderr(&output);
    assert!(output.status.success(), "{text}");
    // A negative check: no note of any wording for a modelled runtime.
    assert!(!text.contains("newer than the newest runtime"), "{text}");
    assert_eq!(lock_format(&dir), LockFormat::KernelLocks);

    let mut read: Command = common::python(reference_env(), &server.endpoint, &cache);
    let output = read
        .env("PYTHONPATH", common::repo_root().join("tests/python/stub_torch"))
        .arg("-c")
        .arg("import sys\nfrom kernels._rust import KernelLocks\nlocks = KernelLocks.from_json(open(sys.argv[1]).read())\nprint(len(locks))")
        .arg(dir.join("kernels.lock"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "1");

    // The lock alone now names the newest runtime that reads it: 0.19.1.
    let output = kernels(&server, &cache, &empty, &dir, &["-v", "lock"]);
    let text = stderr(&output);
    // Substring: one status line among the host-dependent environment lines.
    assert!(
        text.contains("Target runtime: kernels 0.19.1 (the existing kernels.lock is in the KernelLocks format)"),
        "{text}"
    );
    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &["env", "--torch-version", "2.8", "--cpu"],
    );
    let env = String::from_utf8_lossy(&output.stdout);
    // Substring: the Variant order row, padded by the table's widest name.
    assert!(env.contains("resolver of kernels 0.19 ("), "{env}");
}

/// `kernels env` names where each GPU comes from (`cuda-capabilities` of
/// `[tool.kernels]`, a `[[tool.kernels.targets]]` entry, the flag), in text
/// and in the JSON `description`; with several declared targets `env` and
/// `verify` say once which environment they judge and name the targets
/// (`verify --format json`: `judged`).
#[test]
fn env_attributes_each_gpu_and_env_and_verify_name_several_targets_once() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let (cache, empty) = (tmp.path().join("cache"), tmp.path().join("empty"));
    let dir = tmp.path().join("project");
    fs_err::create_dir_all(&dir).unwrap();
    let second = TARGET
        .replace("\"9.0\"", "\"10.0\", \"9.0\"")
        .replace("12.8", "12.6")
        .replace("\"2.8\"", "\"2.7\"");
    fs_err::write(
        dir.join("pyproject.toml"),
        format!("[tool.kernels]\ncuda-capabilities = [\"8.0\"]\n\n{DEPENDENCIES}{TARGET}{second}"),
    )
    .unwrap();
    let output = kernels(&server, &cache, &empty, &dir, &["env"]);
    let (out, err) = (String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(output.status.success(), "{err}");
    let expected = "Target GPUs     CUDA capability 8.0 (from [tool.kernels] `cuda-capabilities` of ./pyproject.toml), \
CUDA capability 9.0 (from [[tool.kernels.targets]] targets[1] of ./pyproject.toml), \
CUDA capability 10.0 (from [[tool.kernels.targets]] targets[2] of ./pyproject.toml)";
    assert!(out.lines().any(|l| l == expected), "{out}");
    assert_eq!(err.matches("declares 2 targets").count(), 1, "{err}");
    assert!(
        err.contains(
            "`--torch-version 2.8 --cuda-version 12.8 --python-version 3.12` for targets[1]"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "Declared: targets[1] (torch 2.8 + cuda-12.8 (x86_64-linux), Python 3.12), targets[2] (torch 2.7 + cuda-12.6 (x86_64-linux), Python 3.12)"
        ),
        "{err}"
    );
    let doc = env_json(&server, &cache, &empty, &dir, &[]);
    assert_eq!(
        doc["targets"]["description"],
        expected.trim_start_matches("Target GPUs").trim_start()
    );
    let doc = env_json(&server, &cache, &empty, &dir, &["--cuda-capability", "7.5"]);
    assert_eq!(
        doc["targets"]["description"],
        "CUDA capability 7.5 (from --cuda-capability/--rocm-arch)"
    );

    // `verify` judges one environment: said once in text, and in JSON.
    let output = kernels(&server, &cache, &empty, &dir, &["lock"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let env = ["--torch-version", "2.8", "--cpu"];
    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &[&["verify"][..], &env].concat(),
    );
    assert_eq!(stderr(&output).matches("declares 2 targets").count(), 1);
    // `-v` names each GPU's source as `env` does, not `[tool.kernels]` for all.
    let output = kernels(
        &server,
        &cache,
        &empty,
        &dir,
        &[&["verify", "-v"][..], &env].concat(),
    );
    assert!(
        stderr(&output).contains(
            "CUDA capability 9.0 (from [[tool.kernels.targets]] targets[1] of ./pyproject.toml)"
        ),
        "{}",
        stderr(&output)
    );
    let args = [&["verify", "--format", "json"][..], &env].concat();
    let output = kernels(&server, &cache, &empty, &dir, &args);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let judged = &doc["judged"];
    assert_eq!(
        judged["environment"], "torch 2.8 (cxx11 ABI), CPU only, x86_64-linux",
        "{doc}"
    );
    assert_eq!(
        judged["declared_targets"],
        serde_json::json!([
            "targets[1] (torch 2.8 + cuda-12.8 (x86_64-linux), Python 3.12)",
            "targets[2] (torch 2.7 + cuda-12.6 (x86_64-linux), Python 3.12)"
        ])
    );
    assert!(
        judged["note"]
            .as_str()
            .unwrap()
            .contains("declares 2 targets"),
        "{doc}"
    );
}
