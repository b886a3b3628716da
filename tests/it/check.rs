//! `kernels check`: after `kernels lock` and `kernels download` against a
//! generated mirror, every locked kernel is imported through the project's
//! Python (the stub torch on `PYTHONPATH`), offline, from the cache: directly
//! from the variant without an installed runtime, through reference 0.17.2's
//! (or 0.16.2's) `load_kernel` with it.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, TestContext, snapshot};

/// A kernel-builder style variant `torch-cpu` of `acme/<name>`: `__init__.py`
/// importing `ops` from `_ops.py`, which registers `<name>` (and `<name>_`)
/// with `torch.library.define` in namespace `_<name>_cpu_1234567` and runs
/// `extra` first; `metadata.json` names the kernel and its id.
pub(crate) fn write_kernel(mirror: &Path, name: &str, sha: char, extra: &str) {
    let repo = mirror.join("repos/kernels/acme").join(name);
    let variant = repo.join("commits/c1/tree/build/torch-cpu");
    fs_err::create_dir_all(&variant).unwrap();
    let ns = format!("_{name}_cpu_1234567");
    fs_err::write(
        variant.join("__init__.py"),
        format!(
            "import torch\n\nfrom ._ops import ops\n\n\ndef {name}(x):\n    return ops.{name}(x)\n\n\n__all__ = [\"{name}\"]\n"
        ),
    )
    .unwrap();
    fs_err::write(
        variant.join("_ops.py"),
        format!(
            "import torch\n{extra}\ntorch.library.define(\"{ns}::{name}\", \"(Tensor x) -> Tensor\")\ntorch.library.define(\"{ns}::{name}_\", \"(Tensor(a!) x) -> Tensor(a!)\")\nops = torch.ops.{ns}\n"
        ),
    )
    .unwrap();
    fs_err::write(
        variant.join("metadata.json"),
        format!(
            "{{\"name\": \"{name}\", \"id\": \"{ns}\", \"version\": 1, \"license\": \"apache-2.0\", \"python-depends\": [], \"backend\": {{\"type\": \"cpu\"}}}}\n"
        ),
    )
    .unwrap();
    fs_err::write(
        repo.join("commits/c1/commit.toml"),
        format!(
            "sha = \"{}\"\ntitle = \"Build\"\n",
            sha.to_string().repeat(40)
        ),
    )
    .unwrap();
    fs_err::write(
        repo.join("repo.toml"),
        "commits = [\"c1\"]\nalso_serve_as = [\"model\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
    )
    .unwrap();
}

/// The mirror: `acme/good` imports; `acme/broken`'s `_ops.py` raises;
/// `acme/dies` ends the interpreter (`os._exit(3)`) while importing;
/// `acme/dirty` imports and says it was built from a dirty tree. `acme` is a
/// trusted publisher (a first lock is checked for one).
fn mirror(mirror: &Path) {
    common::write_trusted_org(mirror, "acme");
    write_kernel(mirror, "good", '1', "");
    write_kernel(
        mirror,
        "broken",
        '2',
        "raise RuntimeError(\"_broken_cpu_1234567: this build needs a GPU\")",
    );
    write_kernel(mirror, "dies", '3', "import os\nos._exit(3)");
    // `acme/dirty` imports, built from a dirty tree (0.17.2 logs a warning).
    write_kernel(mirror, "dirty", '4', "");
    let metadata =
        mirror.join("repos/kernels/acme/dirty/commits/c1/tree/build/torch-cpu/metadata.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&metadata).unwrap()).unwrap();
    value["provenance"] = serde_json::json!({
        "kernel-builder": {"version": "0.17.0", "commit": "a".repeat(40), "dirty": false},
        "kernel": {"commit": "b".repeat(40), "dirty": true}
    });
    fs_err::write(&metadata, value.to_string()).unwrap();
}

/// A project depending on `kernels` (`acme/<name>` = 1 each), its Python the
/// reference environment `venv` with the stub torch.
fn project(kernels: &[&str], venv: &str) -> TestContext {
    let deps: String = kernels
        .iter()
        .map(|k| format!("\"acme/{k}\" = 1\n"))
        .collect();
    let context = TestContext::with_generated_mirror(mirror, &[]).with_pyproject(&format!(
        "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n{deps}"
    ));
    // A copy of the stub torch: bytecode writing is on (see [`check`]).
    context
        .with_stub_torch_copy()
        .with_env("VIRTUAL_ENV", common::pyref_root().join(venv))
}

/// `[PYREF]` for the reference environments' root.
fn filters() -> Vec<(String, &'static str)> {
    let root = common::pyref_root();
    let mut out = vec![(regex_escape(&root.display().to_string()), "[PYREF]")];
    if let Ok(canonical) = root.canonicalize() {
        out.push((regex_escape(&canonical.display().to_string()), "[PYREF]"));
    }
    out
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            // Is `c` a regex metacharacter (not a check of output).
            let escape = "\\.+*?()|[]{}^$#&-~".contains(c);
            escape.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// `kernels check ARGS` without a Hub, with bytecode writing on (as in an
/// image build), so that a `__pycache__` written into the cache would show.
fn check(context: &TestContext, args: &[&str]) -> Output {
    context
        .kernels_without_hub()
        .arg("check")
        .args(args)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .output()
        .unwrap()
}

/// Every `__pycache__` directory below `dir`.
fn bytecode_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            if path.ends_with("__pycache__") {
                out.push(path.clone());
            }
            out.extend(bytecode_dirs(&path));
        }
    }
    out
}

fn snap(name: &str, out: &Output) {
    let filters = filters();
    let refs: Vec<(&str, &str)> = filters.iter().map(|(r, s)| (r.as_str(), *s)).collect();
    snapshot!(name, out, &refs);
}

#[test]
fn check_imports_every_kernel_of_a_downloaded_project() {
    let context = project(&["good"], "hub-2.4.0");
    context.run_ok(&["lock"]);
    context.run_ok(&["download"]);
    let out = check(&context, &[]);
    snap("check_good", &out);
    assert_eq!(out.status.code(), Some(0));
    // The import left the cache as downloaded.
    assert_eq!(
        bytecode_dirs(&context.cache),
        Vec::<std::path::PathBuf>::new()
    );
    common::assert_ok(&context.verify(&[]));
}

#[test]
fn check_fails_with_the_python_error_of_a_kernel_that_raises() {
    let context = project(&["good", "broken"], "hub-2.4.0");
    context.run_ok(&["lock"]);
    context.run_ok(&["download"]);
    let out = check(&context, &[]);
    snap("check_broken", &out);
    assert_eq!(out.status.code(), Some(1));

    let out = check(&context, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], false);
    snap("check_broken_json", &out);
}

#[test]
fn check_names_the_kernel_the_interpreter_died_on() {
    let context = project(&["dies", "good"], "hub-2.4.0");
    context.run_ok(&["lock"]);
    context.run_ok(&["download"]);
    let out = check(&context, &[]);
    snap("check_dies", &out);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_points_to_download_when_a_kernel_is_not_in_the_cache() {
    let context = project(&["good"], "hub-2.4.0");
    context.run_ok(&["lock"]);
    let out = check(&context, &[]);
    snap("check_not_downloaded", &out);
    assert_eq!(out.status.code(), Some(1));

    // One of two kernels gone from the cache: the other is still imported,
    // and the report keeps the lock's order (`acme/dies` first).
    let context = project(&["dies", "good"], "hub-2.4.0");
    context.run_ok(&["lock"]);
    context.run_ok(&["download"]);
    fs_err::remove_dir_all(context.cache.join("kernels--acme--dies")).unwrap();
    let out = check(&context, &[]);
    snap("check_one_not_downloaded", &out);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn check_loads_a_0_17_lock_through_the_reference_runtime() {
    let context = project(&["good", "broken", "dirty"], "kernels-0.17.2");
    context.run_ok(&[
        "lock",
        "--trust",
        "acme/good",
        "--trust",
        "acme/broken",
        "--trust",
        "acme/dirty",
    ]);
    // The 0.17 format: `{"dependency": …, "lock": {"commit": …}}` entries, by name.
    let lock: serde_json::Value = serde_json::from_str(&context.lockfile()).unwrap();
    assert_eq!(
        lock[0]["lock"]["commit"].as_str(),
        Some("2".repeat(40).as_str()),
        "{lock}"
    );
    context.run_ok(&["download"]);
    let out = check(&context, &[]);
    snap("check_reference_0_17", &out);
    assert_eq!(out.status.code(), Some(1));
}

/// A variant-hash lock (reference 0.16): reference 0.16.2 loads it through
/// `load_kernel`; with 0.17.2 installed instead, which cannot read that
/// format, the check fails naming the runtime and the fix.
#[test]
fn check_uses_the_installed_runtime_only_when_it_reads_the_lock() {
    let context = project(&["good"], "kernels-0.16.2");
    context.run_ok(&["lock"]);
    let lock: serde_json::Value = serde_json::from_str(&context.lockfile()).unwrap();
    assert_eq!(
        lock[0]["sha"].as_str(),
        Some("1".repeat(40).as_str()),
        "{lock}"
    );
    context.run_ok(&["download"]);
    let out = check(&context, &[]);
    snap("check_reference_0_16", &out);
    assert_eq!(out.status.code(), Some(0));

    // With 0.17.2 installed, the target-runtime choice already refuses the
    // lock; told to target 0.16.2, the check still finds the installed
    // runtime, which cannot read this lock: the same error as every gate.
    let with_0_17 = |args: &[&str]| {
        context
            .kernels_without_hub()
            .arg("check")
            .args(args)
            .env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.17.2"))
            .output()
            .unwrap()
    };
    let out = with_0_17(&[]);
    snap("check_reference_0_17_variant_hash_lock", &out);
    assert_eq!(out.status.code(), Some(1));
    let out = with_0_17(&["--target-runtime", "0.16.2"]);
    snap(
        "check_reference_0_17_variant_hash_lock_targeting_0_16",
        &out,
    );
    assert_eq!(out.status.code(), Some(1));
}
