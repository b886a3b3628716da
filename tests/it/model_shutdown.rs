//! Old runtimes after the Hub's model-repo shutdown (huggingface/kernels#757):
//! runtimes 0.13 and older read `models--` caches and ask the `model` API,
//! which no longer serves kernel repositories. Against a mirror that serves
//! `kernels-community/activation` only as a `kernel` repository, a 0.10.5
//! project locks and downloads through the `kernel` API, the cache keeps the
//! `models--` layout, reference 0.10.5 loads it offline, and an existing lock
//! keeps its commit.

use crate::sticky::copy_dir;
use std::path::{Path, PathBuf};

use kernels_test_support::{self as common, Server, TestContext, snapshot};

const ACTIVATION: &str = "repos/kernels/kernels-community/activation";
/// `v0.0.2` of the bundled `kernels-community/activation`.
const V002: &str = "6a030420d0dd33ffdc1281afc8ae8e94b4f4f9d0";
/// The reference environment of the target runtime.
const PYREF: &str = "kernels-0.10.5";

/// A mirror with the bundled `kernels-community/activation` (and the orgs),
/// served as a `kernel` repository only: its `also_serve_as = ["model"]` line
/// is dropped.
fn kernel_only_mirror() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let src = common::mirror_dir();
    copy_dir(&src.join("orgs"), &root.path().join("orgs"));
    let repo = root.path().join(ACTIVATION);
    copy_dir(&src.join(ACTIVATION), &repo);
    let toml_path = repo.join("repo.toml");
    let text = fs_err::read_to_string(&toml_path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.starts_with("also_serve_as"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(
        kept, text,
        "the bundled repo.toml no longer serves it as a model"
    );
    fs_err::write(&toml_path, kept).unwrap();
    root
}

/// The status line of a plain HTTP GET of `path` over loopback.
fn status_line(endpoint: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let host = endpoint.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.lines().next().unwrap_or_default().to_owned()
}

/// The stub torch 2.7 with CUDA 12.6, seen through the reference's interpreter.
fn with_stub_env(context: TestContext) -> TestContext {
    context
        .with_stub_torch()
        .with_env("STUB_TORCH_VERSION", "2.7.0")
        .with_env("STUB_TORCH_CUDA", "12.6")
        .with_env("VIRTUAL_ENV", common::pyref_root().join(PYREF))
}

fn pyproject(requirement: &str) -> String {
    format!("[tool.kernels.dependencies]\n\"kernels-community/activation\" = \"{requirement}\"\n")
}

/// The variant directory of `commit` in the `models--` cache folder.
fn models_variant(cache: &Path, commit: &str, variant: &str) -> PathBuf {
    cache
        .join("models--kernels-community--activation/snapshots")
        .join(commit)
        .join("build")
        .join(variant)
}

#[test]
fn old_runtime_locks_and_downloads_through_the_kernel_api() {
    let mirror = kernel_only_mirror();
    let context = with_stub_env(TestContext::with_mirror(mirror.path()))
        .with_pyproject(&pyproject(">=0.0.2"));
    // The model API really is gone for it.
    let refs = "/api/models/kernels-community/activation/refs";
    // As the Hub answers anonymous requests for a missing repository.
    assert_eq!(
        status_line(context.endpoint(), refs),
        "HTTP/1.1 401 Unauthorized"
    );

    let lock = context.run(&["lock", "--target-runtime", "0.10.5"]);
    snapshot!("shutdown_lock", lock);
    let download = context.run(&["download", "--target-runtime", "0.10.5"]);
    snapshot!("shutdown_download", download);
    assert!(
        !context
            .cache
            .join("kernels--kernels-community--activation")
            .exists()
    );

    // Reference 0.10.5 loads it offline from the `models--` folder.
    let lock_path = context.project.join("kernels.lock");
    let mut cmd = common::python(PYREF, context.endpoint(), &context.cache);
    cmd.env("HF_HUB_OFFLINE", "1")
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .env("STUB_TORCH_VERSION", "2.7.0")
        .env("STUB_TORCH_CUDA", "12.6")
        .arg(common::repo_root().join("tests/python/load_locked.py"))
        .arg(&lock_path)
        .arg("kernels-community/activation");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "reference load failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let locked: serde_json::Value = serde_json::from_str(&context.lockfile()).unwrap();
    let commit = locked[0]["sha"].as_str().unwrap();
    let loaded = line["file"].as_str().or(line["synthetic_so"].as_str());
    let dir = models_variant(&context.cache, commit, "torch27-cxx11-cu126-x86_64-linux");
    assert!(
        loaded.is_some_and(|p| Path::new(p).starts_with(&dir)),
        "the reference loaded {line}, not from {}",
        dir.display()
    );
}

#[test]
fn old_lock_keeps_its_commit_when_the_repo_is_only_a_kernel_repo() {
    // Locked while the model API still served it, at v0.0.2.
    let mut context = TestContext::new().with_pyproject(&pyproject("==0.0.2"));
    context.run_ok(&["lock", "--target-runtime", "0.10.5"]);
    let before = context.lockfile();
    assert_eq!(crate::sticky::locked_commits(&before), [V002], "{before}");
    // The Hub drops the model repository; the requirement now allows v0.0.3.
    let mirror = kernel_only_mirror();
    context.server = Server::start(mirror.path());
    context.write("pyproject.toml", &pyproject(">=0.0.2"));
    let relock = context.run(&["lock", "--target-runtime", "0.10.5"]);
    snapshot!("shutdown_relock_keeps", relock);
    assert_eq!(context.lockfile(), before);
}
