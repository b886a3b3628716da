//! `kernels lock && kernels download`, then the reference runtime loads the
//! kernels with `HF_HUB_OFFLINE=1` from our cache alone (issue 12, first
//! "Verified by"): 0.17.2 by `get_kernel(repo, version=N)`, by
//! `get_locked_kernel` and by `load_kernel`; 0.16.2 by `load_kernel`. The
//! endpoint is a listener that must stay silent.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;

use serde_json::Value;

use kernels_test_support::{self as common, Server};

pub(crate) const PROJECT: &str = "kernels-tests-kernel_locking-6dfe59c7";
pub(crate) const KERNELS: &[(&str, u32)] =
    &[("kernels-community/relu", 1), ("kernels-test/versions", 2)];

pub(crate) fn run_ok(cmd: &mut std::process::Command, what: &str) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lock_download_and_load(server: &Server, runtime: &str, expected_calls: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let cache = dir.path().join("cache");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::copy(
        common::repo_root()
            .join("fixtures/projects")
            .join(PROJECT)
            .join("pyproject.toml"),
        project.join("pyproject.toml"),
    )
    .unwrap();
    let env_name = format!("kernels-{runtime}");
    let pyref = common::pyref_root().join(&env_name);
    let stub = common::repo_root().join("tests/python/stub_torch");
    let with_stub = |cmd: &mut std::process::Command| {
        cmd.env("PYTHONPATH", &stub)
            .env("STUB_TORCH_VERSION", "2.10.0")
            .env("STUB_TORCH_CUDA", "12.8");
    };
    for sub in ["lock", "download"] {
        let mut cmd = common::kernels(&server.endpoint, &cache);
        cmd.args([sub, "--target-runtime", runtime])
            .arg(&project)
            .env("VIRTUAL_ENV", &pyref);
        with_stub(&mut cmd);
        run_ok(&mut cmd, &format!("kernels {sub} ({runtime})"));
    }

    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", silent.local_addr().unwrap());
    let mut cmd = common::python(&env_name, &endpoint, &cache);
    cmd.env("HF_HUB_OFFLINE", "1")
        // 0.13+ send an invalid user agent when telemetry is disabled; nothing
        // leaves the machine offline anyway.
        .env_remove("HF_HUB_DISABLE_TELEMETRY")
        .arg(common::repo_root().join("tests/python/load_offline.py"))
        .arg(project.join("kernels.lock"))
        .args(KERNELS.iter().map(|(repo, v)| format!("{repo}={v}")));
    with_stub(&mut cmd);
    let stdout = run_ok(&mut cmd, &format!("reference {runtime} offline load"));
    assert!(
        silent.accept().is_err(),
        "the offline load opened a connection"
    );

    assert_loaded_from_cache(&stdout, &cache, expected_calls, runtime);
}

/// The reference's offline loads (`load_offline.py`'s JSON lines in `stdout`)
/// made each call of `expected_calls` for every kernel of [`KERNELS`], each from
/// a snapshot of `cache`.
pub(crate) fn assert_loaded_from_cache(
    stdout: &str,
    cache: &Path,
    expected_calls: &[&str],
    runtime: &str,
) {
    let results: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for (repo, _) in KERNELS {
        let calls: BTreeSet<&str> = results
            .iter()
            .filter(|r| r["repo"] == *repo)
            .filter_map(|r| r["call"].as_str())
            .collect();
        assert_eq!(
            calls,
            expected_calls.iter().copied().collect(),
            "{runtime} {repo}: {stdout}"
        );
        let snapshots = cache
            .join(format!("kernels--{}", repo.replace('/', "--")))
            .join("snapshots");
        for result in results.iter().filter(|r| r["repo"] == *repo) {
            let path = result["file"]
                .as_str()
                .or(result["synthetic_so"].as_str())
                .unwrap_or_else(|| panic!("{runtime} {repo}: {result}"));
            assert!(
                Path::new(path).starts_with(&snapshots),
                "{runtime} {repo}: loaded {path}, not from our cache"
            );
        }
    }
}

#[test]
fn reference_0_17_loads_offline_by_version_and_by_lock() {
    let server = Server::bundled();
    lock_download_and_load(
        &server,
        "0.17.2",
        &["get_kernel", "get_locked_kernel", "load_kernel"],
    );
}

#[test]
fn reference_0_16_loads_offline_by_lock() {
    let server = Server::bundled();
    lock_download_and_load(&server, "0.16.2", &["load_kernel"]);
}

/// Issue 14's round trip for the runtime: a mirror written by `kernels mirror`
/// from the bundled mirror (server A) and served as B answers the 0.17.2
/// runtime's offline loads after `kernels lock && kernels download` against B.
#[test]
fn reference_0_17_loads_offline_from_a_mirror_written_by_kernels_mirror() {
    let a = Server::bundled();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let cache = dir.path().join("cache");
    let out = dir.path().join("mirror");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::copy(
        common::repo_root()
            .join("fixtures/projects")
            .join(PROJECT)
            .join("pyproject.toml"),
        project.join("pyproject.toml"),
    )
    .unwrap();
    let mut lock = common::kernels(&a.endpoint, &cache);
    lock.args(["lock", "--target-runtime", "0.17.2"])
        .arg(&project);
    run_ok(&mut lock, "kernels lock against A");
    let mut mirror = common::kernels(&a.endpoint, &cache);
    mirror.arg("mirror").arg(&project).arg("--out").arg(&out);
    run_ok(&mut mirror, "kernels mirror from A");

    let b = Server::start(&out);
    lock_download_and_load(
        &b,
        "0.17.2",
        &["get_kernel", "get_locked_kernel", "load_kernel"],
    );
}
