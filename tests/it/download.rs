//! Integration tests for `kernels download`: the built binary against
//! `kernels serve --test-control` over a small mirror written in a tempdir,
//! checked against the exact Hugging Face cache layout and against Python
//! `huggingface_hub` reading the result offline.

use std::path::PathBuf;

use kernels_test_support::world::*;
use kernels_test_support::{self as common, Server, TestContext, snapshot};

fn expected_paths(files: &[MirrorFile]) -> Vec<String> {
    let mut out: Vec<String> = variants(files)
        .values()
        .flatten()
        .map(|f| f.path.clone())
        .collect();
    out.sort();
    out
}

#[test]
fn all_variants_writes_the_hf_layout_and_second_run_fetches_nothing() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    let out = world.download(&["--all-variants"]);
    assert_ok(&out);
    snapshot!("all_variants_cold", out);

    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let wanted: Vec<MirrorFile> = variants(&relu).into_values().flatten().collect();
    assert_layout(&repo_dir, RELU_SHA, &wanted);
    assert_eq!(snapshot_paths(&repo_dir, RELU_SHA), expected_paths(&relu));
    // Identical files share one blob; README and bytecode are not downloaded.
    let blobs = fs_err::read_dir(repo_dir.join("blobs")).unwrap().count();
    assert_eq!(blobs, 6);
    assert!(world.cache.join(".locks/kernels--acme--relu").is_dir());

    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 3, "one CDN GET per LFS blob: {cdn:#?}");
    for request in &cdn {
        assert_eq!(
            request["authorization"], false,
            "token reached the CDN: {request}"
        );
        assert_eq!(request["status"], 200, "{request}");
    }
    assert!(
        log.iter()
            .filter(|r| r["listener"] == "hub")
            .all(|r| r["authorization"] == true),
        "the hub did not receive the token"
    );

    world.reset();
    let again = world.download(&["--all-variants"]);
    assert_ok(&again);
    snapshot!("all_variants_warm", again);
    let log = world.requests();
    assert!(
        resolve_requests(&log).is_empty(),
        "second run fetched: {log:#?}"
    );
    assert!(cdn_requests(&log).is_empty());
    assert!(log.is_empty(), "a warm no-op made requests: {log:#?}");
}

#[test]
fn warm_no_op_makes_no_request_unless_refreshed() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));

    // Same selection, complete and verified cache: not a single request.
    world.reset();
    let out = world.download(&["--variant", "torch-cuda"]);
    assert_ok(&out);
    snapshot!("warm_no_op", out);
    assert_eq!(world.requests().len(), 0, "{:#?}", world.requests());

    // `--refresh` checks upstream: the listing (and, the lock naming no
    // version, the refs that name one), still nothing fetched.
    let out = world.download(&["--variant", "torch-cuda", "--refresh"]);
    assert_ok(&out);
    let log = world.requests();
    let mut paths: Vec<&str> = log.iter().filter_map(|r| r["path"].as_str()).collect();
    paths.sort_unstable();
    assert_eq!(paths.len(), 2, "the tree listing and the refs: {log:#?}");
    assert_eq!(paths[0], "/api/kernels/acme/relu/refs", "{log:#?}");
    assert!(
        paths[1].starts_with("/api/kernels/acme/relu/tree/"),
        "{log:#?}"
    );
    assert!(resolve_requests(&log).is_empty() && cdn_requests(&log).is_empty());

    // More variants than the cache holds: online again, fetching only those.
    world.reset();
    assert_ok(&world.download(&["--all-variants"]));
    assert!(!cdn_requests(&world.requests()).is_empty());

    // A corrupted blob is not a warm no-op: it is listed and fetched again.
    let so = variants(&relu).remove("torch-cuda").unwrap();
    let so = so.iter().find(|f| f.lfs()).unwrap();
    let blob = world
        .repo_dir("kernel", "acme/relu")
        .join("blobs")
        .join(so.etag());
    let mut bytes = fs_err::read(&blob).unwrap();
    bytes[0] ^= 1;
    fs_err::write(&blob, &bytes).unwrap();
    world.reset();
    assert_ok(&world.download(&["--all-variants"]));
    assert_eq!(cdn_requests(&world.requests()).len(), 1);
    assert_eq!(fs_err::read(&blob).unwrap(), so.content);
    world.reset();
    assert_ok(&world.download(&["--all-variants"]));
    assert!(world.requests().is_empty(), "{:#?}", world.requests());
}

#[test]
fn cdn_rejects_leaked_authorization() {
    // The CDN answers 400 to a request carrying Authorization (the default), so a
    // successful LFS download with HF_TOKEN set proves the header was stripped.
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let out = world.download(&["--variant", "torch-cuda"]);
    assert_ok(&out);
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 1);
    assert_eq!(cdn[0]["authorization"], false);
    assert_eq!(cdn[0]["headers"].get("authorization"), None);
}

#[test]
fn explicit_variant_and_corrupted_blob_is_refetched() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let cuda = variants(&relu).remove("torch-cuda").unwrap();
    assert_layout(&repo_dir, RELU_SHA, &cuda);
    assert_eq!(snapshot_paths(&repo_dir, RELU_SHA), {
        let mut p: Vec<String> = cuda.iter().map(|f| f.path.clone()).collect();
        p.sort();
        p
    });

    // Flip bytes of the cached shared object, keeping its length.
    let so = cuda.iter().find(|f| f.lfs()).unwrap();
    let blob = repo_dir.join("blobs").join(so.etag());
    let mut bytes = fs_err::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    fs_err::write(&blob, &bytes).unwrap();

    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert_eq!(fs_err::read(&blob).unwrap(), so.content);
    let log = world.requests();
    assert_eq!(
        resolve_requests(&log).len(),
        1,
        "only the corrupted file: {log:#?}"
    );
    assert_layout(&repo_dir, RELU_SHA, &cuda);
}

#[test]
fn corrupt_transfer_is_retried_once_then_named() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    world.fault(serde_json::json!({"listener": "cdn", "count": 1, "corrupt": {"offset": 10}}));
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert_eq!(cdn_requests(&world.requests()).len(), 2);

    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    world.fault(serde_json::json!({"listener": "cdn", "count": 2, "corrupt": {"offset": 10}}));
    let out = world.download(&["--variant", "torch-cuda"]);
    // The file, the expected digest and the kernel are named.
    snapshot!("corrupt_transfer_twice", out);
    let so = &gelu_files()[1];
    let repo_dir = world.repo_dir("kernel", "acme/gelu");
    assert!(!repo_dir.join("blobs").join(so.etag()).exists());
    assert!(
        !repo_dir
            .join("snapshots")
            .join(GELU_SHA)
            .join(&so.path)
            .exists()
    );
}

#[test]
fn failures_name_every_failing_kernel() {
    let world = TestContext::world();
    let relu = relu_files();
    let mut wrong = gelu_files();
    wrong[0].content = b"stale\n".to_vec();
    world.lock_a(&[
        ("acme/relu", RELU_SHA, &relu),
        ("acme/missing", RELU_SHA, &relu),
        ("acme/gelu", GELU_SHA, &wrong),
    ]);
    let out = world.download(&["--variant", "torch-universal"]);
    snapshot!("two_of_three_failed", out);
    // The good kernel is in place anyway.
    let relu_dir = world.repo_dir("kernel", "acme/relu");
    assert!(
        relu_dir
            .join("snapshots")
            .join(RELU_SHA)
            .join("build/torch-universal/relu/__init__.py")
            .exists()
    );
}

#[test]
fn unknown_variant_lists_available_ones() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA)]);
    snapshot!(
        "unknown_variant",
        world.download(&["--variant", "torch-npu"])
    );
}

#[test]
fn named_variants_apply_to_each_kernel_that_has_them() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA), ("acme/gelu", GELU_SHA)]);
    // gelu has no `torch-cpu`: each kernel takes the named variants it has.
    let out = world.download(&["--variant", "torch-cpu", "--variant", "torch-universal"]);
    assert_ok(&out);
    let snapshot = |repo: &str, sha: &str| {
        world
            .cache
            .join(format!("kernels--acme--{repo}/snapshots"))
            .join(sha)
            .join("build")
    };
    assert!(snapshot("relu", RELU_SHA).join("torch-cpu").is_dir());
    assert!(snapshot("relu", RELU_SHA).join("torch-universal").is_dir());
    assert!(snapshot("gelu", GELU_SHA).join("torch-universal").is_dir());
    assert!(!snapshot("gelu", GELU_SHA).join("torch-cpu").exists());
    // A kernel with none of the named variants is an error naming it.
    snapshot!(
        "no_named_variant",
        world.download(&["--variant", "torch-cpu"])
    );
}

#[test]
fn variant_hash_lock_without_a_runtime_notes_the_models_cache() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    // The note only with -v, and not when the runtime is named.
    snapshot!(
        "models_note_quiet",
        world.download(&["--variant", "torch-cpu"])
    );
    snapshot!(
        "models_note_verbose",
        world.download(&["--variant", "torch-cpu", "-v"])
    );
    snapshot!(
        "models_note_with_runtime",
        world.download(&["--variant", "torch-cpu", "--target-runtime", "0.16.2"])
    );
}

#[test]
fn missing_or_broken_lock_is_a_clear_error() {
    let world = TestContext::world();
    snapshot!("missing_lock", world.download(&["--all-variants"]));
    assert!(!world.cache.exists(), "cache touched");

    fs_err::write(world.project.join("kernels.lock"), "{not json").unwrap();
    snapshot!("broken_lock", world.download(&["--all-variants"]));
    assert!(!world.cache.exists(), "cache touched");
    assert!(world.requests().is_empty());
}

fn stub_torch() -> PathBuf {
    common::repo_root().join("tests/python/stub_torch")
}

#[test]
fn default_selection_follows_the_reference_order() {
    let world = TestContext::world();
    // A variant-hash lock: read by runtimes with the exact (≤0.12) order.
    world.lock_a(&[
        ("acme/relu", RELU_SHA, &relu_files()),
        ("acme/gelu", GELU_SHA, &gelu_files()),
    ]);
    let stub = stub_torch();
    let stub = stub.to_str().unwrap();
    /// (stub torch environment, kernel, expected variant; `ARCH` = this host's arch variant)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: &[Case] = &[
        (&[("STUB_TORCH_CUDA", "12.6")], "relu", "ARCH"),
        (&[("STUB_TORCH_CUDA", "12.8")], "relu", "torch-cuda"),
        (
            &[("STUB_TORCH_HIP", "6.3.4-abc")],
            "relu",
            "torch-universal",
        ),
        (&[("STUB_TORCH_CUDA", "12.6")], "gelu", "torch-cuda"),
    ];
    for (env, kernel, expected) in cases {
        let expected = if *expected == "ARCH" {
            arch_variant()
        } else {
            (*expected).to_owned()
        };
        // The reference (kernels 0.10.5) computes the same preference list.
        let mut py = std::process::Command::new(common::pyref_python("kernels-0.10.5"));
        py.env("PYTHONPATH", stub).args([
            "-c",
            "from kernels.utils import build_variants; print(','.join(build_variants()))",
        ]);
        for (k, v) in *env {
            py.env(k, v);
        }
        let out = py.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(',')
            .map(str::to_owned)
            .collect();
        let files = if *kernel == "relu" {
            relu_files()
        } else {
            gelu_files()
        };
        let available = variants(&files);
        let reference_pick = reference
            .iter()
            .find(|v| available.contains_key(*v))
            .unwrap();
        assert_eq!(reference_pick, &expected, "reference order {reference:?}");

        let _ = fs_err::remove_dir_all(&world.cache);
        let mut env_all: Vec<(&str, &str)> = vec![("PYTHONPATH", stub)];
        env_all.extend_from_slice(env);
        let out = world.download_with(&[], &env_all);
        assert_ok(&out);
        let repo_dir = world.repo_dir("kernel", &format!("acme/{kernel}"));
        let sha = if *kernel == "relu" {
            RELU_SHA
        } else {
            GELU_SHA
        };
        let picked: Vec<String> = snapshot_paths(&repo_dir, sha)
            .iter()
            .map(|p| p.split('/').nth(1).unwrap().to_owned())
            .collect();
        // The reference downloads every existing candidate (its
        // `allow_patterns`) and loads the first; so do we.
        let reference_fetch: std::collections::BTreeSet<&String> = reference
            .iter()
            .filter(|v| available.contains_key(*v))
            .collect();
        let picked: std::collections::BTreeSet<&String> = picked.iter().collect();
        assert_eq!(picked, reference_fetch, "{env:?}");
    }
}

#[test]
fn no_torch_names_the_explicit_options() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA)]);
    let no_torch = world.project.join("no_torch");
    fs_err::create_dir_all(no_torch.join("torch")).unwrap();
    fs_err::write(
        no_torch.join("torch/__init__.py"),
        "raise ModuleNotFoundError(\"No module named 'torch'\")\n",
    )
    .unwrap();
    let out = world.download_with(&[], &[("PYTHONPATH", no_torch.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    // torch cannot be imported: pass `--variant` or `--all-variants`.
    snapshot!("no_torch", out);
    assert!(!world.cache.exists(), "cache touched");
}

#[test]
fn python_hub_0_35_reads_model_type_download_offline() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    let out = world.download(&["--all-variants", "--repo-type", "model"]);
    assert_ok(&out);
    assert!(world.repo_dir("model", "acme/relu").is_dir());
    assert!(!world.repo_dir("kernel", "acme/relu").exists());
    let wanted: Vec<MirrorFile> = variants(&relu).into_values().flatten().collect();
    world.reset();
    python_reads_snapshot(
        &world,
        "hub-0.35.3",
        "model",
        "acme/relu",
        RELU_SHA,
        &wanted,
    );
    assert!(world.requests().is_empty(), "offline Python made requests");
}

#[test]
fn python_hub_2_4_reads_kernel_type_download_offline() {
    let world = TestContext::world();
    let gelu = gelu_files();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants", "--concurrency", "1"]));
    world.reset();
    python_reads_snapshot(&world, "hub-2.4.0", "kernel", "acme/gelu", GELU_SHA, &gelu);
    assert!(world.requests().is_empty(), "offline Python made requests");
}

#[test]
fn interrupted_download_resumes_with_range() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let so = gelu_files()[1].clone();
    world.fault(serde_json::json!({"listener": "cdn", "count": 2, "truncate_after_bytes": 20000}));
    let out = world.download_with(
        &["--variant", "torch-cuda"],
        &[("KERNELS_MAX_RETRIES", "1")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    snapshot!("interrupted_twice", out);
    let repo_dir = world.repo_dir("kernel", "acme/gelu");
    let partial = repo_dir
        .join("blobs")
        .join(format!("{}.incomplete", so.etag()));
    let kept = fs_err::metadata(&partial).unwrap().len();
    assert!(
        kept > 0 && kept < so.content.len() as u64,
        "kept {kept} bytes"
    );
    assert!(!repo_dir.join("blobs").join(so.etag()).exists());
    assert!(
        !repo_dir
            .join("snapshots")
            .join(GELU_SHA)
            .join(&so.path)
            .exists()
    );

    world.reset();
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let log = world.requests();
    let cdn = cdn_requests(&log);
    assert_eq!(cdn.len(), 1, "{cdn:#?}");
    assert_eq!(cdn[0]["headers"]["range"], format!("bytes={kept}-"));
    assert_eq!(cdn[0]["status"], 206);
    assert_layout(&repo_dir, GELU_SHA, &gelu_files()[1..]);
}

#[test]
fn cache_written_by_python_is_verified_and_reused() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let out = common::python("hub-2.4.0", &world.server.endpoint, &world.cache)
        .args([
            "-c",
            "import sys; from huggingface_hub import snapshot_download; \
             snapshot_download('acme/gelu', repo_type='kernel', revision=sys.argv[1], allow_patterns=['build/*'])",
            GELU_SHA,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    world.reset();
    assert_ok(&world.download(&["--all-variants"]));
    let log = world.requests();
    assert!(resolve_requests(&log).is_empty(), "re-downloaded: {log:#?}");
    assert_layout(
        &world.repo_dir("kernel", "acme/gelu"),
        GELU_SHA,
        &gelu_files(),
    );
}

/// The reference `kernels` 0.10.5 locks the bundled mirror, we download, and the
/// reference validates our cache offline against its own lock hashes.
#[test]
fn reference_0_10_5_validates_our_download() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let cache = tmp.path().join("cache");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(
        project.join("pyproject.toml"),
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n",
    )
    .unwrap();
    let reference = |args: &[&str], offline: bool| {
        let python = common::pyref_python("kernels-0.10.5");
        let mut cmd = common::python("kernels-0.10.5", &server.endpoint, &cache);
        cmd.arg(python.with_file_name("kernels")).args(args);
        if offline {
            cmd.env("HF_HUB_OFFLINE", "1");
        }
        cmd.output().unwrap()
    };
    let out = reference(&["lock", project.to_str().unwrap()], false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = common::kernels(&server.endpoint, &cache)
        .arg("download")
        .arg(&project)
        .args(["--all-variants", "--repo-type", "model"])
        .output()
        .unwrap();
    assert_ok(&out);

    let out = reference(
        &["download", project.to_str().unwrap(), "--all-variants"],
        true,
    );
    assert!(
        out.status.success(),
        "the reference rejected our cache:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn transient_server_errors_are_retried_within_the_budget() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    world.fault(serde_json::json!({"listener": "cdn", "count": 1, "status": 503}));
    assert_ok(&world.download(&["--variant", "torch-cuda"]));

    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    world.fault(serde_json::json!({"listener": "cdn", "count": 2, "status": 503}));
    let out = world.download_with(
        &["--variant", "torch-cuda"],
        &[("KERNELS_MAX_RETRIES", "1")],
    );
    snapshot!("server_errors_past_the_budget", out);
}

#[test]
fn offline_run_verifies_the_cache_without_requests() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--all-variants"]));
    world.reset();
    let offline = [("HF_HUB_OFFLINE", "1")];
    let out = world.download_with(&["--all-variants"], &offline);
    assert_ok(&out);
    snapshot!("offline_verified", out);
    assert!(world.requests().is_empty());

    // A corrupted blob fails the offline run, names the file, and stays linked.
    let cuda = variants(&relu).remove("torch-cuda").unwrap();
    let so = cuda.iter().find(|f| f.lfs()).unwrap();
    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let blob = repo_dir.join("blobs").join(so.etag());
    let mut bytes = fs_err::read(&blob).unwrap();
    bytes[0] ^= 1;
    fs_err::write(&blob, &bytes).unwrap();
    let out = world.download_with(&["--variant", "torch-cuda"], &offline);
    snapshot!("offline_corrupted_blob", out);
    assert!(
        blob.exists(),
        "a failed refetch must not leave a dangling link"
    );
    assert!(world.requests().is_empty());

    // Online, the blob is replaced; a kernel never downloaded fails offline.
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    assert_eq!(fs_err::read(&blob).unwrap(), so.content);
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    snapshot!(
        "offline_kernel_not_cached",
        world.download_with(&["--all-variants"], &offline)
    );
}
