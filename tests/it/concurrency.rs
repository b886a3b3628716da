//! Several downloaders on one cache at once: ours and `huggingface_hub`'s
//! `snapshot_download`, coordinated by the per-blob locks in `.locks/`.

use std::process::{Command, Stdio};

use kernels_test_support as common;
use kernels_test_support::{
    GELU_SHA, RELU_SHA, TestContext, arch_variant, assert_layout, gelu_files, relu_files, variants,
};

fn spawn(mut cmd: Command) -> std::process::Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Asserts that `kernels verify --all-variants` passes on the world's cache.
fn assert_verifies(world: &TestContext, env: &[(&str, &str)]) {
    let out = common::kernels(&world.server.endpoint, &world.cache)
        .arg("verify")
        .arg(&world.project)
        .arg("--all-variants")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn four_of_ours_and_python_share_one_cache() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    // Slow LFS responses so that the downloads overlap.
    world.fault(serde_json::json!({"listener": "cdn", "latency_ms": 150}));

    let mut python = common::python("hub-2.4.0", &world.server.endpoint, &world.cache);
    python.args([
        "-c",
        "import sys; from huggingface_hub import snapshot_download; \
         snapshot_download('acme/relu', repo_type='kernel', revision=sys.argv[1], allow_patterns=['build/*'], max_workers=2)",
        RELU_SHA,
    ]);
    let mut children = Vec::new();
    for _ in 0..4 {
        let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
        cmd.arg("download")
            .arg(&world.project)
            .args(["--all-variants", "--concurrency", "2"]);
        children.push(("kernels download", spawn(cmd)));
    }
    children.push(("snapshot_download", spawn(python)));
    for (name, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let repo_dir = world.repo_dir("kernel", "acme/relu");
    let wanted: Vec<_> = variants(&relu).into_values().flatten().collect();
    assert_layout(&repo_dir, RELU_SHA, &wanted);
    let locks: Vec<_> = fs_err::read_dir(world.cache.join(".locks/kernels--acme--relu"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(locks.iter().all(|l| l.ends_with(".lock")), "{locks:?}");
    assert_verifies(&world, &[]);
}

/// While we hold a blob's `.locks/` file, `huggingface_hub` waits for it: the
/// two use the same lock file and the same `flock`.
#[test]
fn python_waits_for_our_blob_lock() {
    let world = TestContext::world();
    let gelu_so = gelu_files()[1].clone();
    let repo = kernels_cache::HubCache::new(&world.cache).repo(
        &"acme/gelu".parse().unwrap(),
        kernels_types::wire::RepoType::Kernel,
    );
    let lock = repo.lock_blob(&gelu_so.etag()).unwrap();
    let mut python = common::python("hub-2.4.0", &world.server.endpoint, &world.cache);
    python.args([
        "-c",
        "import sys; from huggingface_hub import hf_hub_download; \
         hf_hub_download('acme/gelu', sys.argv[2], repo_type='kernel', revision=sys.argv[1])",
        GELU_SHA,
        &gelu_so.path,
    ]);
    let child = spawn(python);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let blob = repo.blob_path(&gelu_so.etag());
    assert!(
        !blob.exists(),
        "Python wrote the blob while we held its lock"
    );
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs_err::read(&blob).unwrap(), gelu_so.content);
}

/// The other way round: while Python's `filelock` holds a blob's lock, our
/// download of that blob waits.
#[test]
fn we_wait_for_pythons_filelock() {
    use std::io::{BufRead, BufReader, Write};

    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let gelu_so = gelu_files()[1].clone();
    let repo = kernels_cache::HubCache::new(&world.cache).repo(
        &"acme/gelu".parse().unwrap(),
        kernels_types::wire::RepoType::Kernel,
    );
    let lock_path = repo.lock_path(&gelu_so.etag());
    fs_err::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let mut python = common::python("hub-2.4.0", &world.server.endpoint, &world.cache);
    python
        .args([
            "-c",
            "import sys; from filelock import FileLock\n\
             with FileLock(sys.argv[1]):\n    print('locked', flush=True)\n    sys.stdin.readline()",
        ])
        .arg(&lock_path)
        .stdin(Stdio::piped());
    let mut holder = spawn(python);
    let mut line = String::new();
    BufReader::new(holder.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "locked");

    let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
    cmd.arg("download")
        .arg(&world.project)
        .args(["--variant", "torch-cuda"]);
    let ours = spawn(cmd);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let blob = repo.blob_path(&gelu_so.etag());
    assert!(
        !blob.exists(),
        "we wrote the blob while Python held its lock"
    );
    assert!(
        world.requests().iter().all(|r| r["listener"] != "cdn"),
        "we fetched content while Python held the lock"
    );
    holder.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(holder.wait().unwrap().success());
    let out = ours.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs_err::read(&blob).unwrap(), gelu_so.content);
}

/// Without symlinks each download moves a new blob into its snapshot file (as
/// `huggingface_hub` does), so a blob another download is about to place can
/// vanish from `blobs/` into a variant this one did not select (relu's
/// `__init__.py` backs three): that download copies it from there, or keeps
/// what the other one placed at its own path, instead of failing.
#[test]
fn copy_mode_downloads_share_one_cache() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    world.fault(serde_json::json!({"listener": "cdn", "latency_ms": 50}));
    let arch = arch_variant();
    let selections: [&[&str]; 5] = [
        &["--all-variants"],
        &["--variant", "torch-cpu"],
        &["--variant", "torch-cuda"],
        &["--variant", &arch],
        &["--variant", "torch-cuda", "--variant", &arch],
    ];
    let children: Vec<_> = selections
        .iter()
        .map(|selection| {
            let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
            cmd.arg("download")
                .arg(&world.project)
                .args(*selection)
                .args(["--concurrency", "2"])
                .env("HF_HUB_DISABLE_SYMLINKS", "1");
            spawn(cmd)
        })
        .collect();
    for child in children {
        common::assert_ok(&child.wait_with_output().unwrap());
    }
    assert_verifies(&world, &[("HF_HUB_DISABLE_SYMLINKS", "1")]);
    let snapshot = world
        .repo_dir("kernel", "acme/relu")
        .join("snapshots")
        .join(RELU_SHA);
    for file in variants(&relu).into_values().flatten() {
        let copy = snapshot.join(&file.path);
        let meta = fs_err::symlink_metadata(&copy).unwrap();
        assert!(meta.is_file(), "{} is not a regular file", file.path);
        assert_eq!(fs_err::read(&copy).unwrap(), file.content, "{}", file.path);
    }
}
