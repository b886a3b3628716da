//! Issue 21, items 2–3 (download and verify): the target runtime's load-time
//! rules (`backend.archs` vs the target GPUs, `kernels-minver` vs the target
//! runtime, `python-depends` vs the allow-list and the project's Python)
//! applied before the cache is filled. A refused candidate is skipped for the
//! next one that fits; when none fits the kernel fails before anything but
//! its metadata.json is fetched; `verify` re-checks the cached variants
//! offline. The parity tests load what we refuse with reference 0.17.2.

use std::path::Path;
use std::process::Output;

use kernels_test_support::world::{MirrorFile, arch_variant, snapshot_paths};
use kernels_test_support::{self as common, TestContext, snapshot};
use serde_json::Value;

/// Commit of every `acme/*` kernel of the fit mirror.
pub(crate) const SHA: &str = "3333333333333333333333333333333333333333";

/// A variant whose metadata.json declares CUDA `archs` and `extra` fields.
fn cuda(archs: &str, extra: &str) -> String {
    format!(
        r#"{{"name": "fit", "id": "_fit_3333333", "version": 1, "license": "apache-2.0", "python-depends": [], "backend": {{"type": "cuda", "archs": [{archs}]}}{extra}}}"#
    )
}

/// The kernels of the fit mirror: `(repo, [(variant, metadata.json)])`. The
/// host's arch variant (`torch27-cxx11-cu126-<arch>-linux`) ranks above
/// `torch-cuda` for the stub torch with CUDA 12.6.
fn kernels() -> Vec<(&'static str, Vec<(String, String)>)> {
    let arch = arch_variant();
    let old = cuda(r#""8.0""#, "");
    let good = cuda(r#""9.0""#, "");
    let minver = cuda(r#""9.0""#, r#", "kernels-minver": "99.0.0""#);
    let pkg = cuda(r#""9.0""#, "").replace("[]", r#"["not-installed-pkg"]"#);
    let einops = cuda(r#""9.0""#, "").replace("[]", r#"["einops"]"#);
    let dirty = cuda(
        r#""9.0""#,
        r#", "provenance": {"kernel": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": true}}"#,
    );
    vec![
        ("acme/archs-only", vec![(arch.clone(), old.clone())]),
        (
            "acme/archs-fallback",
            vec![(arch.clone(), old), ("torch-cuda".into(), good.clone())],
        ),
        ("acme/minver-only", vec![(arch.clone(), minver.clone())]),
        (
            "acme/minver-fallback",
            vec![(arch.clone(), minver), ("torch-cuda".into(), good.clone())],
        ),
        ("acme/deps-only", vec![(arch.clone(), pkg.clone())]),
        (
            "acme/deps-fallback",
            vec![(arch.clone(), pkg), ("torch-cuda".into(), good.clone())],
        ),
        ("acme/einops", vec![(arch.clone(), einops)]),
        (
            "acme/dirty",
            vec![(arch.clone(), dirty), ("torch-cuda".into(), good)],
        ),
        (
            "acme/malformed",
            // `null` where every runtime needs a value (0.16.2 to 0.19.1
            // refuse it); the number in `kernels-minver` 0.16.2 ignores.
            vec![(arch, r#"{"name": null, "kernels-minver": 5}"#.to_owned())],
        ),
    ]
}

/// Writes one kernel repo (branches `main` and `v1` at [`SHA`]).
pub(crate) fn write_kernel(mirror: &Path, repo: &str, variants: &[(String, String)]) {
    let files: Vec<MirrorFile> = variants
        .iter()
        .flat_map(|(variant, metadata)| {
            [
                MirrorFile {
                    path: format!("build/{variant}/__init__.py"),
                    content: format!("VARIANT = {variant:?}\n").into_bytes(),
                },
                MirrorFile {
                    path: format!("build/{variant}/metadata.json"),
                    content: metadata.clone().into_bytes(),
                },
            ]
        })
        .collect();
    common::world::write_repo(mirror, repo, SHA, &files);
    let dir = mirror.join("repos/kernels").join(repo);
    fs_err::write(
        dir.join("repo.toml"),
        "commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
    )
    .unwrap();
}

/// The fit mirror served with `--test-control`; the project's Python is the
/// stub torch 2.7 with CUDA 12.6 (no GPU unless `STUB_TORCH_CAPABILITY`).
pub(crate) fn context() -> TestContext {
    TestContext::with_generated_mirror(
        |mirror| {
            for (repo, variants) in kernels() {
                write_kernel(mirror, repo, &variants);
            }
        },
        &["--test-control"],
    )
    .with_stub_torch()
    .with_env("STUB_TORCH_CUDA", "12.6")
    .with_env("KERNELS_MAX_RETRIES", "0")
}

/// Writes a project depending on `repos` (version 1) with `tool` lines in
/// `[tool.kernels]`, and locks it.
pub(crate) fn project(p: &TestContext, repos: &[&str], tool: &str) {
    let deps: String = repos.iter().map(|r| format!("\"{r}\" = 1\n")).collect();
    let trust: Vec<String> = repos.iter().map(|r| format!("\"{r}\"")).collect();
    p.write(
        "pyproject.toml",
        &format!(
            "[project]\nname = \"demo\"\n\n[tool.kernels]\n{tool}trust = [{}]\n\n[tool.kernels.dependencies]\n{deps}",
            trust.join(", ")
        ),
    );
    p.run_ok(&["lock"]);
}

const RUNTIME: &str = "target-runtime = \"0.17.2\"\n";
pub(crate) const NINE: &str = "target-runtime = \"0.17.2\"\ncuda-capabilities = [\"9.0\"]\n";

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The variant directories of `repo`'s cached snapshot.
fn cached(p: &TestContext, repo: &str) -> Vec<String> {
    let mut dirs: Vec<String> = snapshot_paths(&p.repo_dir("kernel", repo), SHA)
        .iter()
        .filter_map(|path| path.strip_prefix("build/")?.split('/').next())
        .map(str::to_owned)
        .collect();
    dirs.dedup();
    dirs
}

#[test]
fn an_arch_the_targets_lack_is_skipped_or_refused() {
    let p = context();
    project(&p, &["acme/archs-fallback"], NINE);
    let out = p.download(&[]);
    snapshot!("fit_archs_fallback", out);
    // The refused variant is not in the snapshot: the runtime, which takes the
    // best variant it finds there, loads the one that fits.
    assert_eq!(cached(&p, "acme/archs-fallback"), ["torch-cuda"]);
    let doc = json(&p.download(&["--format", "json"]));
    snapshot!(
        "fit_archs_fallback_json",
        serde_json::to_string_pretty(&doc["kernels"][0]["fit"]).unwrap()
    );
    // `--variant` of a refused variant: the runtime would refuse it.
    snapshot!(
        "fit_archs_named",
        p.download(&["--variant", &arch_variant()])
    );
    // `--all-variants`: everything, the refusal reported.
    snapshot!("fit_archs_all", p.download(&["--all-variants"]));

    project(&p, &["acme/archs-only"], NINE);
    p.reset();
    let out = p.download(&[]);
    snapshot!("fit_archs_only", out);
    // Nothing but metadata.json crossed the network (`kernels lock` may have
    // fetched it already), and the refused variant is not in the snapshot.
    let fetched: Vec<String> = common::world::resolve_requests(&p.requests())
        .iter()
        .filter_map(|r| r["path"].as_str().map(str::to_owned))
        .collect();
    assert!(
        fetched.iter().all(|path| path.ends_with("/metadata.json")),
        "{fetched:?}"
    );
    let refused = p
        .repo_dir("kernel", "acme/archs-only")
        .join("snapshots")
        .join(SHA)
        .join("build")
        .join(arch_variant());
    assert!(!refused.exists(), "{}", refused.display());
}

#[test]
fn a_minver_above_the_target_runtime_is_skipped_or_refused() {
    let p = context();
    project(&p, &["acme/minver-fallback"], NINE);
    snapshot!("fit_minver_fallback", p.download(&[]));
    assert_eq!(cached(&p, "acme/minver-fallback"), ["torch-cuda"]);
    project(&p, &["acme/minver-only"], NINE);
    snapshot!("fit_minver_only", p.download(&[]));
}

#[test]
fn python_depends_the_runtime_refuses_are_skipped_or_refused() {
    let p = context();
    project(&p, &["acme/deps-fallback"], NINE);
    snapshot!("fit_deps_fallback", p.download(&[]));
    assert_eq!(cached(&p, "acme/deps-fallback"), ["torch-cuda"]);
    // One message per kernel: a name no runtime allows, and an allowed
    // package the project's Python lacks.
    project(&p, &["acme/deps-only", "acme/einops"], NINE);
    snapshot!("fit_deps_only", p.download(&[]));
}

#[test]
fn without_configured_targets_the_gpu_torch_sees_is_the_target() {
    let p = context().with_env("STUB_TORCH_CAPABILITY", "9.0");
    project(&p, &["acme/archs-fallback"], RUNTIME);
    // `-v` for the targets line; the debug lines of parallel fetches are
    // left out (their order varies).
    snapshot!(
        "fit_device",
        p.download(&["-v"]),
        &[(r"\[TIMESTAMP\] DEBUG [^\n]*\n", "")]
    );
    assert_eq!(cached(&p, "acme/archs-fallback"), ["torch-cuda"]);
}

#[test]
fn without_a_gpu_the_arch_rule_is_not_checked() {
    let p = context();
    // The best variant is taken, and the unchecked rule said once.
    project(&p, &["acme/archs-fallback"], RUNTIME);
    snapshot!("fit_not_checked", p.download(&[]));
    // A GPU that cannot be queried is "not checked" too, never a crash.
    let p = context()
        .with_env("STUB_TORCH_CAPABILITY", "9.0")
        .with_env("STUB_TORCH_DEVICE_ERROR", "no CUDA driver");
    project(&p, &["acme/archs-only"], RUNTIME);
    snapshot!("fit_device_error", p.download(&[]));
    // Flags name the target without a GPU.
    snapshot!("fit_flag_target", p.verify(&["--cuda-capability", "9.0"]));
}

#[test]
fn verify_flags_a_cached_variant_the_runtime_would_refuse() {
    let p = context();
    project(&p, &["acme/archs-fallback"], NINE);
    snapshot!("fit_dry_run", p.download(&["--dry-run"]));
    // Planted: every variant in the cache, so the runtime takes the best one,
    // which it refuses.
    p.download(&["--all-variants"]);
    snapshot!("fit_verify_planted", p.verify(&[]));
    let doc = json(&p.verify(&["--format", "json"]));
    assert_eq!(doc["kernels"][0]["problems"][0]["problem"], "refused");
    // Without the refused directory the runtime takes the one that fits.
    let dir = p.repo_dir("kernel", "acme/archs-fallback");
    fs_err::remove_dir_all(
        dir.join("snapshots")
            .join(SHA)
            .join("build")
            .join(arch_variant()),
    )
    .unwrap();
    snapshot!("fit_verify_repaired", p.verify(&[]));
}

#[test]
fn the_warm_path_reads_metadata_from_the_cache_without_requests() {
    let p = context();
    let tool = "target-runtime = \"0.16.2\"\ncuda-capabilities = [\"9.0\"]\n";
    project(&p, &["acme/dirty"], tool);
    p.download(&[]);
    p.reset();
    // Complete in the cache: no request, the dirty build warned about again
    // from the cached metadata.json.
    let out = p.download(&[]);
    snapshot!("fit_warm", out);
    assert_eq!(p.requests(), Vec::<Value>::new());

    // Every locked variant cached and refused: the refusal without a request.
    project(&p, &["acme/archs-only"], tool);
    p.download(&["--all-variants"]);
    p.reset();
    snapshot!("fit_warm_refused", p.download(&[]));
    assert_eq!(p.requests(), Vec::<Value>::new());
}

#[test]
fn a_malformed_metadata_json_names_the_file_and_the_field() {
    let p = context();
    // The 0.17 lock reads metadata.json itself (and fails the same way), so a
    // variant-hash lock gets to `download`.
    project(
        &p,
        &["acme/malformed"],
        "target-runtime = \"0.16.2\"\ncuda-capabilities = [\"9.0\"]\n",
    );
    snapshot!("fit_malformed", p.download(&[]));
}

/// The reference 0.17.2 runtime loading `repo` offline from `p`'s cache on
/// the stub GPU of capability 9.0, by `call`: `load_kernel` (by the lock) or
/// `get_kernel` (by `version=1`; in 0.17.2 only `get_kernel` and
/// `has_kernel` apply the arch check, `load_kernel` and `get_locked_kernel`
/// do not). Gives `loaded <VARIANT>` or the exception.
fn reference_load(p: &TestContext, repo: &str, call: &str) -> String {
    let mut cmd = common::python("kernels-0.17.2", "http://127.0.0.1:9", &p.cache);
    cmd.env("HF_HUB_OFFLINE", "1")
        .env("PYTHONPATH", common::repo_root().join("tests/python/stub_torch"))
        .env("STUB_TORCH_CUDA", "12.6")
        .env("STUB_TORCH_CAPABILITY", "9.0")
        .arg("-c")
        .arg(
            "import sys, pathlib, kernels\n\
             repo, lock, call = sys.argv[1:4]\n\
             try:\n    m = kernels.load_kernel(repo, lockfile=pathlib.Path(lock)) if call == 'load_kernel' else kernels.get_kernel(repo, version=1, trust_remote_code=True)\n    print('loaded', m.VARIANT)\n\
             except Exception as e:\n    print(type(e).__name__ + ': ' + str(e))\n",
        )
        .arg(repo)
        .arg(p.project.join("kernels.lock"))
        .arg(call);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn reference_0_17_refuses_what_download_refuses() {
    let p = context();
    let cases = [
        ("acme/archs-only", "archs", "get_kernel"),
        ("acme/minver-only", "kernels-minver", "load_kernel"),
        ("acme/minver-only", "kernels-minver", "get_kernel"),
    ];
    for (repo, rule, call) in cases {
        project(&p, &[repo], NINE);
        let ours = json(&p.download(&["--format", "json"]));
        assert_eq!(
            ours["failed"][0]["code"], "kernels::download::unfit",
            "{ours}"
        );
        // The message names the rule (`: {rule}: `).
        let message = ours["failed"][0]["message"].as_str().unwrap();
        snapshot!(format!("unfit_message_{rule}_{call}"), message);
        p.run_ok(&["download", "--all-variants"]);
        let theirs = reference_load(&p, repo, call);
        let expected = match rule {
            "archs" => {
                "CUDA capability 9.0 of the current device is not supported by the architectures of the build: 8.0"
            }
            _ => "requires kernels>=99.0.0, but version 0.17.2 is installed",
        };
        // Stays a substring check: the reference's Python error, after its traceback.
        assert!(
            theirs.starts_with("RuntimeError") && theirs.contains(expected),
            "{repo}: the reference {call} did not refuse what we refuse ({rule}): {theirs}"
        );
    }
    // And what we choose instead is what it loads, either way.
    project(&p, &["acme/archs-fallback"], NINE);
    p.run_ok(&["download"]);
    for call in ["get_kernel", "load_kernel"] {
        assert_eq!(
            reference_load(&p, "acme/archs-fallback", call),
            "loaded torch-cuda"
        );
    }
}
