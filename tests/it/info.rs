//! `kernels info`: reference 0.17.2's description of a kernel (compared with
//! its `kernels info` on the same repositories, served by our test server, and
//! on a local copy), the per-variant fit table for targets, offline from the
//! cache, and the errors.

use std::path::Path;
use std::process::Output;

use kernels_test_support::{self as common, TestContext, snapshot};
use serde_json::{Value, json};

const FIT_V1: &str = "1010101010101010101010101010101010101010";
const FIT_V2: &str = "2020202020202020202020202020202020202020";
const ODD: &str = "3030303030303030303030303030303030303030";

/// A `metadata.json` that reference 0.17.2's strict parser reads.
fn metadata(backend: &str, archs: &[&str]) -> Value {
    json!({
        "name": "fit",
        "id": format!("_fit_{backend}_0123abc"),
        "version": 2,
        "license": "Apache-2.0",
        "upstream": "https://github.com/acme/fit",
        "source": "https://github.com/acme/fit/tree/main/fit",
        "python-depends": ["einops"],
        "kernels-minver": "0.17.0",
        "backend": {"type": backend, "archs": archs},
        "kernel-depends": [],
    })
}

fn write(dir: &Path, path: &str, content: &[u8]) {
    let path = dir.join(path);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

/// One commit of a mirror repository from `(path, content)` pairs.
fn commit(repo: &Path, label: &str, sha: &str, files: &[(String, Vec<u8>)]) {
    let tree = repo.join("commits").join(label).join("tree");
    write(&tree, "README.md", b"# a kernel\n");
    for (path, content) in files {
        write(&tree, path, content);
    }
    write(
        repo,
        &format!("commits/{label}/commit.toml"),
        format!("sha = \"{sha}\"\n").as_bytes(),
    );
}

fn variant(name: &str, metadata: Option<Value>) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![(
        format!("build/{name}/fit/__init__.py"),
        b"from ._ops import ops\n".to_vec(),
    )];
    if let Some(m) = metadata {
        files.push((
            format!("build/{name}/metadata.json"),
            serde_json::to_vec_pretty(&m).unwrap(),
        ));
    }
    files
}

/// `acme/fit` (v1: no build; v2 = main: CUDA and ROCm builds whose metadata
/// 0.17.2 reads) and `acme/odd` (what 0.17.2 would refuse, or cannot read).
fn mirror(root: &Path) {
    let fit = root.join("repos/kernels/acme/fit");
    commit(&fit, "c1", FIT_V1, &[]);
    let v2: Vec<(String, Vec<u8>)> = [
        variant(
            "torch28-cxx11-cu128-x86_64-linux",
            Some(metadata("cuda", &["8.0", "9.0a"])),
        ),
        variant(
            "torch28-cxx11-cu126-x86_64-linux",
            Some(metadata("cuda", &["8.0"])),
        ),
        variant(
            "torch28-cxx11-rocm63-x86_64-linux",
            Some(metadata("rocm", &["gfx90a"])),
        ),
        variant("torch-cpu", Some(metadata("cpu", &[]))),
    ]
    .concat();
    commit(&fit, "c2", FIT_V2, &v2);
    write(
        &fit,
        "repo.toml",
        b"commits = [\"c1\", \"c2\"]\n\n[branches]\nmain = \"c2\"\nv1 = \"c1\"\nv2 = \"c2\"\n",
    );

    let odd = root.join("repos/kernels/acme/odd");
    let mut minver = metadata("cpu", &[]);
    minver["kernels-minver"] = json!("99.0.0");
    minver["python-depends"] = json!(["not-installed-pkg"]);
    let mut dirty = metadata("cuda", &["9.0"]);
    dirty["provenance"] = json!({
        "kernel-builder": {"version": "0.17.0"},
        "kernel": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": true},
    });
    let files: Vec<(String, Vec<u8>)> = [
        variant("torch-cpu", Some(minver)),
        variant("torch28-cxx11-cu128-x86_64-linux", Some(dirty)),
        variant(
            "torch28-cxx11-cu126-x86_64-linux",
            Some(json!({"name": "Bad_Name"})),
        ),
        variant("torch-universal", None),
        vec![("build/csrc/fit.cu".to_owned(), b"// source\n".to_vec())],
    ]
    .concat();
    commit(&odd, "c1", ODD, &files);
    write(
        &odd,
        "repo.toml",
        b"commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\n",
    );
}

fn context() -> TestContext {
    TestContext::with_generated_mirror(mirror, &[]).with_env("KERNELS_MAX_RETRIES", "0")
}

/// Reference 0.17.2's `kernels info ARGS` against the context's server, with
/// its own cache.
fn reference(context: &TestContext, args: &[&str]) -> Output {
    let cache = context.tmp.path().join("python-cache");
    let out = common::python("kernels-0.17.2", context.endpoint(), &cache)
        // 0.17.2 builds an invalid User-Agent (a trailing `; `) with it set.
        .env_remove("HF_HUB_DISABLE_TELEMETRY")
        .current_dir(&context.project)
        .arg(common::pyref_root().join("kernels-0.17.2/bin/kernels"))
        .arg("info")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    out
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Ours and the reference's `info ARGS` agree: every key of the reference's
/// `--json` document has the reference's value (and, when `all_keys`, ours
/// has no other key of the reference's schema), and its text is the first
/// lines of ours.
fn assert_parity(context: &TestContext, args: &[&str], all_keys: bool) {
    let theirs = json_of(&reference(context, &[args, &["--json"]].concat()));
    let ours = json_of(&context.run_ok(&[&["info"], args, &["--json"]].concat()));
    let theirs = theirs.as_object().unwrap();
    for (key, value) in theirs {
        assert_eq!(&ours[key], value, "{args:?}: `{key}`");
    }
    if all_keys {
        // Keys the reference does not have.
        let ours: Vec<&String> = ours
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| {
                !matches!(
                    k.as_str(),
                    "schema"
                        | "command"
                        | "commit"
                        | "targets"
                        | "variants"
                        | "kernel_depends"
                        | "variant"
                )
            })
            .collect();
        let theirs: Vec<&String> = theirs.keys().collect();
        assert_eq!(ours, theirs, "{args:?}: keys and their order");
    }
    if all_keys {
        let text = String::from_utf8(reference(context, args).stdout).unwrap();
        let ours = String::from_utf8(context.run_ok(&[&["info"], args].concat()).stdout).unwrap();
        // 0.19.1's lines, which 0.17.2 does not print.
        let ours: String = ours
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("Kernel dependencies: ") && !l.starts_with("Variant: "))
            .collect();
        assert!(
            ours.starts_with(&format!("{text}\n")),
            "{args:?}:\n{text}\n---\n{ours}"
        );
    }
}

#[test]
fn matches_reference_0_17_2_on_the_hub_and_on_a_local_path() {
    let context = context();
    assert_parity(&context, &["acme/fit"], true);
    assert_parity(&context, &["acme/fit", "--version", "2"], true);
    assert_parity(&context, &["acme/fit", "--revision", FIT_V2], true);
    // A local repository as kernel-builder leaves it (`Path: fit`, as pathlib
    // writes `./fit/`).
    let local = context
        .tmp
        .path()
        .join("mirror/repos/kernels/acme/fit/commits/c2/tree");
    fs_err::rename(&local, context.project.join("fit")).unwrap();
    assert_parity(&context, &["./fit/"], true);
}

#[test]
fn matches_reference_0_17_2_on_the_bundled_mirror() {
    let context = TestContext::new();
    assert_parity(&context, &["kernels-community/relu"], true);
    // Older builders' metadata.json lacks `id` (and `name`): 0.17.2's strict
    // parser reads nothing and prints only the backends; we read what is there.
    assert_parity(
        &context,
        &["kernels-test/versions", "--version", "1"],
        false,
    );
    assert_parity(&context, &["kernels-community/activation"], false);
    let ours = json_of(&context.run_ok(&["info", "kernels-community/activation", "--json"]));
    assert_eq!(ours["license"], "apache-2.0");
}

#[test]
fn variants_fit_or_are_refused_for_the_targets() {
    let context = context();
    snapshot!(
        "fit_targets",
        context.run(&[
            "info",
            "acme/fit",
            "--cuda-capability",
            "9.0",
            "--cuda-capability",
            "8.6",
            "--rocm-arch",
            "gfx942:xnack-",
            "--target-runtime",
            "0.17.2",
        ])
    );
    snapshot!(
        "odd_variants",
        context.run(&["info", "acme/odd", "--target-runtime", "0.17.2"])
    );
    let doc = json_of(&context.run_ok(&[
        "info",
        "acme/odd",
        "--format",
        "json",
        "--cuda-capability",
        "10.0",
        "--target-runtime",
        "0.17.2",
    ]));
    snapshot!("odd_variants_json", format!("{doc:#}"));
}

#[test]
fn online_runs_leave_no_snapshot_or_ref_for_offline_ones() {
    let context = context();
    let before = context.run(&["info", "acme/fit", "--offline"]);
    snapshot!("offline_not_cached", before);
    context.run_ok(&["info", "acme/fit"]);
    // The metadata blobs are kept, but no snapshot folder (an offline runtime
    // would take it for a downloaded variant) and no ref.
    let folder = context.cache.join("kernels--acme--fit");
    assert!(folder.join("blobs").is_dir());
    assert!(!folder.join("snapshots").exists());
    assert!(!folder.join("refs").exists());
    let after = context.run(&["info", "acme/fit", "--offline"]);
    assert_eq!(after.stderr, before.stderr);
}

#[test]
fn errors_name_the_cause_and_exit_1() {
    let context = context();
    snapshot!(
        "no_variants",
        context.run(&["info", "acme/fit", "--version", "1"])
    );
    snapshot!(
        "version_not_found",
        context.run(&["info", "acme/fit", "--version", "7"])
    );
    snapshot!(
        "revision_not_found",
        context.run(&["info", "acme/fit", "--revision", "nope"])
    );
    fs_err::create_dir_all(context.project.join("empty/build")).unwrap();
    snapshot!("local_no_variants", context.run(&["info", "empty"]));
    snapshot!(
        "local_with_version",
        context.run(&["info", "./empty", "--version", "1"])
    );
    snapshot!("not_a_kernel", context.run(&["info", "no/such/thing"]));
    snapshot!(
        "bad_capability",
        context.run(&["info", "acme/fit", "--cuda-capability", "sm_90"])
    );
}

#[test]
fn offline_reads_what_kernels_download_stored() {
    let context = TestContext::new()
        .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n");
    // A 0.10 runtime: a variant-hash lock (no metadata.json read while
    // locking) and a `models--` cache folder, which 0.17.2 also reads offline.
    context.run_ok(&["lock", "--target-runtime", "0.10.5"]);
    context.run_ok(&[
        "download",
        "--target-runtime",
        "0.10.5",
        "--variant",
        "torch211-cxx11-cu130-x86_64-linux",
        "--variant",
        "torch211-cxx11-rocm71-x86_64-linux",
    ]);
    let out = context
        .kernels_without_hub()
        .env("HF_HUB_OFFLINE", "1")
        .args(["info", "kernels-community/relu", "--cuda-capability", "9.0"])
        .output()
        .unwrap();
    // Only the downloaded variants are in the cache.
    snapshot!("offline_after_download", out);
    for args in [
        &["info", "kernels-community/relu", "--version", "1"][..],
        &["info", "kernels-community/relu", "--revision", "v1"],
    ] {
        let same = context
            .kernels_without_hub()
            .env("HF_HUB_OFFLINE", "1")
            .args(args)
            .args(["--cuda-capability", "9.0"])
            .output()
            .unwrap();
        assert_eq!(same.stdout, out.stdout, "{args:?}");
    }
    let out = context
        .kernels_without_hub()
        .args([
            "info",
            "kernels-community/relu",
            "--version",
            "3",
            "--offline",
        ])
        .output()
        .unwrap();
    snapshot!("offline_version_not_cached", out);
}

/// `kernels info kernels-test/kernel-deps --dep-tree` draws the tree 0.19.1
/// draws, and `--json` carries its `kernel_depends` and `dependency_tree`;
/// both name the variant the (stub) torch of the environment would load.
#[test]
fn dep_tree_and_variant_match_reference_0_19_1() {
    let context = TestContext::new()
        .with_stub_torch()
        .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.19.1"));
    let reference = |args: &[&str]| {
        let out = common::python(
            "kernels-0.19.1",
            context.endpoint(),
            &context.tmp.path().join("python-cache"),
        )
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .current_dir(&context.project)
        .arg(common::pyref_root().join("kernels-0.19.1/bin/kernels"))
        .args(["info", "kernels-test/kernel-deps"])
        .args(args)
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        out
    };
    for args in [&["--dep-tree"][..], &[]] {
        let theirs = String::from_utf8(reference(args).stdout).unwrap();
        let ours = context.run_ok(&[&["info", "kernels-test/kernel-deps"], args].concat());
        let ours = String::from_utf8(ours.stdout).unwrap();
        assert!(
            ours.starts_with(&theirs),
            "{args:?}:\n{theirs}\n---\n{ours}"
        );
        assert!(theirs.contains("Kernel dependencies"), "{theirs}");
        assert!(theirs.contains("\nVariant: torch"), "{theirs}");
    }
    let theirs = json_of(&reference(&["--dep-tree", "--json"]));
    let ours =
        json_of(&context.run_ok(&["info", "kernels-test/kernel-deps", "--dep-tree", "--json"]));
    for key in ["kernel_depends", "dependency_tree", "variant"] {
        assert_eq!(ours[key], theirs[key], "{key}");
    }
    assert_eq!(
        theirs["dependency_tree"],
        json!({"kernels-community/einops": {}})
    );
    // Without `--dep-tree`, no tree key, as 0.19.1.
    let ours = json_of(&context.run_ok(&["info", "kernels-test/kernel-deps", "--json"]));
    assert!(ours.get("dependency_tree").is_none());
    assert_eq!(ours["kernel_depends"], json!(["kernels-community/einops"]));
}

/// The same kernel for other environments (the stub torch's CUDA builds, and
/// the `--torch-version` flags): the variant 0.19.1 would load; one that no
/// variant fits prints `Variant: -`, `null` and the reason, where 0.19.1 fails.
#[test]
fn variant_matches_reference_0_19_1_per_environment() {
    let context = TestContext::new()
        .with_stub_torch()
        .with_env("VIRTUAL_ENV", common::pyref_root().join("kernels-0.19.1"));
    let envs: &[&[(&str, &str)]] = &[
        &[("STUB_TORCH_VERSION", "2.12"), ("STUB_TORCH_CUDA", "12.8")],
        &[("STUB_TORCH_VERSION", "2.11"), ("STUB_TORCH_CUDA", "12.6")],
        &[("STUB_TORCH_VERSION", "2.12"), ("STUB_TORCH_HIP", "7.2")],
    ];
    let mut compared = 0;
    for env in envs {
        let mut theirs = common::python(
            "kernels-0.19.1",
            context.endpoint(),
            &context.tmp.path().join("python-cache"),
        );
        theirs
            .env(
                "PYTHONPATH",
                common::repo_root().join("tests/python/stub_torch"),
            )
            .current_dir(&context.project)
            .arg(common::pyref_root().join("kernels-0.19.1/bin/kernels"))
            .args(["info", "kernels-community/relu", "--json"]);
        let mut ours = context.kernels();
        ours.args(["info", "kernels-community/relu", "--json"]);
        for (name, value) in *env {
            theirs.env(name, value);
            ours.env(name, value);
        }
        let theirs = theirs.output().unwrap();
        let ours = ours.output().unwrap();
        assert!(ours.status.success(), "{}", common::stderr(&ours));
        if theirs.status.success() {
            assert_eq!(
                json_of(&ours)["variant"],
                json_of(&theirs)["variant"],
                "{env:?}"
            );
            assert!(json_of(&ours)["variant"].is_string(), "{env:?}");
            compared += 1;
        } else {
            assert!(json_of(&ours)["variant"].is_null(), "{env:?}");
            assert!(common::stderr(&ours).contains("note: no variant for this environment"));
        }
    }
    assert!(compared > 0, "0.19.1 found a variant for none of {envs:?}");
    // Flags instead of torch: no variant for torch 1.0 / CUDA 9.0.
    let out = context.run_ok(&[
        "info",
        "kernels-community/relu",
        "--torch-version",
        "1.0",
        "--cuda-version",
        "9.0",
    ]);
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains("\nVariant: -\n"), "{text}");
    assert!(
        common::stderr(&out)
            .contains("note: no variant for this environment (`Variant: -`): none of its"),
        "{}",
        common::stderr(&out)
    );
}
