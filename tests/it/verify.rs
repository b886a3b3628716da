//! `kernels verify`, `kernels download --offline`, `--dry-run` and the output
//! modes, against `kernels serve --test-control` and its request log.

use std::process::Output;

use serde_json::Value;

use kernels_test_support::{self as common, snapshot};
use kernels_test_support::{
    GELU_SHA, RELU_SHA, TestContext, assert_ok, cdn_requests, gelu_files, relu_files,
    resolve_requests, stderr, variants,
};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn verify_accepts_a_complete_cache_and_reports_every_difference() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--all-variants"]));
    world.reset();

    let out = world.verify(&["--all-variants"]);
    assert_ok(&out);
    snapshot!("verify_complete", out);

    // Break the cache four ways.
    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let by_variant = variants(&relu);
    let cuda_so = by_variant["torch-cuda"].iter().find(|f| f.lfs()).unwrap();
    let blob = repo_dir.join("blobs").join(cuda_so.etag());
    let mut bytes = fs_err::read(&blob).unwrap();
    bytes[10] ^= 0x55;
    fs_err::write(&blob, &bytes).unwrap();
    let cpu_so = by_variant["torch-cpu"].iter().find(|f| f.lfs()).unwrap();
    fs_err::remove_file(repo_dir.join("blobs").join(cpu_so.etag())).unwrap();
    fs_err::remove_dir_all(
        repo_dir
            .join("snapshots")
            .join(RELU_SHA)
            .join("build/torch-universal"),
    )
    .unwrap();
    let arch = by_variant
        .keys()
        .find(|v| v.starts_with("torch27"))
        .unwrap()
        .clone();
    let arch_init = by_variant[&arch]
        .iter()
        .find(|f| f.path.ends_with("__init__.py"))
        .unwrap();
    fs_err::remove_file(
        repo_dir
            .join("snapshots")
            .join(RELU_SHA)
            .join(&arch_init.path),
    )
    .unwrap();

    // One line per problem on stdout (a wrong blob, a missing blob, a missing
    // variant, two variant hashes), the summary and the repair on stderr.
    snapshot!("verify_four_breaks", world.verify(&["--all-variants"]));
    assert!(world.requests().is_empty(), "verify made requests");

    // Only the selected variant is checked; download repairs, verify agrees.
    let out = world.verify(&["--variant", "torch-cuda"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
    assert_ok(&world.download(&["--all-variants"]));
    assert_ok(&world.verify(&["--all-variants"]));
}

#[test]
fn offline_flag_makes_no_request_and_names_what_is_missing() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA), ("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants"]));

    // Everything cached and verified: the receipts of the first run say what
    // each commit holds, so even this 0.17 lock costs no request (it cost one
    // tree listing per kernel before receipts).
    world.reset();
    assert_ok(&world.download(&["--all-variants"]));
    let log = world.requests();
    assert!(log.is_empty(), "{log:#?}");

    world.reset();
    let out = world.download(&["--all-variants", "--offline"]);
    assert_ok(&out);
    snapshot!("offline_all_cached", out);
    assert!(world.requests().is_empty());
    let out = world.download(&[
        "--all-variants",
        "--offline",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_ok(&out);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["download_files"], 0, "{doc}");
    assert_eq!(doc["kernels"][0]["variants"][1]["cached_files"], 1, "{doc}");
    assert!(world.requests().is_empty());

    let gelu_so = &gelu_files()[1];
    let repo_dir = world.repo_dir("kernel", "acme/gelu");
    fs_err::remove_file(repo_dir.join("blobs").join(gelu_so.etag())).unwrap();
    // The missing blob and the repair command are named; relu is fine.
    snapshot!(
        "offline_missing_blob",
        world.download(&["--all-variants", "--offline"])
    );
    assert!(world.requests().is_empty());
}

#[test]
fn offline_works_with_the_server_stopped() {
    let TestContext {
        tmp: _tmp,
        server,
        project,
        cache,
        ..
    } = TestContext::world();
    fs_err::write(
        project.join("kernels.lock"),
        format!(
            r#"[{{"dependency": {{"repo-id": "acme/gelu", "version": 1}}, "lock": {{"commit": "{GELU_SHA}"}}}}]"#
        ),
    )
    .unwrap();
    let endpoint = server.endpoint.clone();
    let run = |args: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = common::kernels(&endpoint, &cache);
        cmd.arg("download").arg(&project).args(args);
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    assert_ok(&run(&["--variant", "torch-cuda"], None));
    drop(server);
    assert_ok(&run(&["--variant", "torch-cuda", "--offline"], None));
    assert_ok(&run(
        &["--variant", "torch-cuda"],
        Some(("HF_HUB_OFFLINE", "1")),
    ));
    snapshot!(
        "offline_server_stopped_variant_not_cached",
        run(&["--variant", "torch-universal", "--offline"], None)
    );
}

#[test]
fn dry_run_reports_sizes_and_makes_only_metadata_requests() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    let out = world.download(&["--all-variants", "--dry-run"]);
    assert_ok(&out);
    // 8 files, 6 distinct blobs (the three `__init__.py` of the same content share one).
    snapshot!("dry_run_sizes", out);
    assert!(!world.cache.join("kernels--acme--relu").exists());
    let log = world.requests();
    assert!(!log.is_empty());
    for request in &log {
        let path = request["path"].as_str().unwrap();
        assert!(path.starts_with("/api/"), "not a metadata request: {path}");
    }

    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    world.reset();
    let out = world.download(&["--all-variants", "--dry-run", "--format", "json"]);
    assert_ok(&out);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doc["schema"], 2);
    assert_eq!(doc["command"], "download --dry-run");
    let kernel = &doc["kernels"][0];
    assert_eq!(kernel["repo_id"], "acme/relu");
    assert_eq!(kernel["commit"], RELU_SHA);
    let by_variant = variants(&relu);
    for v in kernel["variants"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let files = &by_variant[name];
        let bytes: u64 = files.iter().map(|f| f.content.len() as u64).sum();
        assert_eq!(v["files"], files.len(), "{v}");
        assert_eq!(v["bytes"], bytes, "{v}");
        if name == "torch-cuda" {
            assert_eq!(
                (v["cached_files"].clone(), v["cached_bytes"].clone()),
                (files.len().into(), bytes.into())
            );
        }
    }
    // torch-cuda brought 3 of the 6 blobs (`__init__.py`, `_ops.abi3.so`, `metadata.json`).
    assert_eq!(kernel["download_files"], 3, "{kernel}");
    assert_eq!(doc["download_files"], kernel["download_files"]);
    assert!(
        resolve_requests(&world.requests()).is_empty()
            && cdn_requests(&world.requests()).is_empty()
    );
}

#[test]
fn quiet_prints_nothing_and_lines_name_each_kernel() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA), ("acme/gelu", GELU_SHA)]);
    let out = world.download(&["--all-variants", "--quiet"]);
    assert_ok(&out);
    assert!(
        out.stderr.is_empty() && out.stdout.is_empty(),
        "{}",
        stderr(&out)
    );
    let out = world.download(&["--all-variants"]);
    let err = stderr(&out);
    // One line per kernel and the summary (the target runtime only with -v;
    // no unsigned note: this run placed nothing, the run that did said it).
    // No escape codes without a terminal. The kernels come in completion
    // order: their two lines are sorted.
    let mut lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    lines[..2].sort_unstable();
    snapshot!("cached_download_lines", lines.join("\n"));
}

/// Runs a download under a pseudo-terminal (`script`), slowed down so the bars draw.
fn download_on_a_terminal(world: &TestContext, no_color: bool) -> String {
    world.fault(serde_json::json!({"listener": "cdn", "latency_ms": 400}));
    let mut cmd = std::process::Command::new("script");
    let line = format!(
        "{} download {} --all-variants --concurrency 1",
        common::kernels_bin().display(),
        world.project.display()
    );
    cmd.args(["-qefc", &line, "/dev/null"]);
    let template = common::kernels(&world.server.endpoint, &world.cache);
    for (key, value) in template.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("TERM", "xterm-256color").env("COLUMNS", "160");
    if !no_color {
        cmd.env_remove("NO_COLOR");
    }
    let out = cmd.output().expect("run `script` (util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn terminal_bars_show_rate_and_eta_and_respect_no_color() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let screen = download_on_a_terminal(&world, true);
    // Substring checks on the raw bytes of a terminal: the bars' frames,
    // rates and ETAs depend on timing, and colour is a matter of escapes.
    assert!(
        screen.contains("Downloading") && screen.contains("ETA"),
        "{screen:?}"
    );
    assert!(screen.contains("/s"), "no transfer rate: {screen:?}");
    // No bold or green escape with NO_COLOR.
    assert!(
        !screen.contains("\x1b[1m") && !screen.contains("\x1b[32m"),
        "colour with NO_COLOR: {screen:?}"
    );
    // The kernel's line, among the bars' frames.
    assert!(
        screen.contains("Downloaded acme/gelu v1 (2222222)"),
        "{screen:?}"
    );

    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let screen = download_on_a_terminal(&world, false);
    // Colour on a terminal: a bold or green escape.
    assert!(
        screen.contains("\x1b[1m") || screen.contains("\x1b[32m"),
        "no colour on a terminal: {screen:?}"
    );
}

/// A snapshot link to a `blobs/` name that is 40 characters but not hex is
/// reported, naming the file, with exit 1 (it used to panic).
#[test]
fn a_link_to_a_non_hex_blob_name_is_a_clear_error() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--all-variants"]));

    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let by_variant = variants(&relu);
    let file = &by_variant["torch-universal"][0];
    let link = repo_dir.join("snapshots").join(RELU_SHA).join(&file.path);
    let bogus = "z".repeat(40);
    let target = fs_err::read_link(&link).unwrap();
    let target = target.with_file_name(&bogus);
    fs_err::write(repo_dir.join("blobs").join(&bogus), b"x = 1\n").unwrap();
    fs_err::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();

    // Each names the file, the bogus name and "not a blob name".
    snapshot!("non_hex_blob_verify", world.verify(&["--all-variants"]));
    snapshot!(
        "non_hex_blob_download_offline",
        world.download(&["--all-variants", "--offline"])
    );
}

/// Two `--variant` flags offline (issue 24): as online, each kernel takes the
/// named variants it has, so `verify` and `download --offline` accept a kernel
/// that has one of them cached (acme/gelu has no torch-cpu build).
#[test]
fn two_named_variants_accept_a_kernel_with_either() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--variant", "torch-cuda"]));
    let p = world.project.display().to_string();
    let both = ["--variant", "torch-cuda", "--variant", "torch-cpu"];
    let verify = world.run(&[&["verify", p.as_str()][..], &both[..]].concat());
    let offline = world.run(&[&["download", p.as_str(), "--offline"][..], &both[..]].concat());
    snapshot!(
        "two_named_variants_offline",
        format!(
            "{}\n--- download --offline\n{}",
            common::snapshot::SnapshotText::snapshot_text(&verify),
            common::snapshot::SnapshotText::snapshot_text(&offline)
        )
    );
}
