//! What every command prints, through the real binary against `kernels serve`
//! over the bundled mirror, as reviewed snapshots (the shared `snapshot!` macro:
//! ports, temporary paths and durations are filtered). A UX change shows up here
//! as a snapshot diff: review it with `cargo insta review`, or rerun with
//! `INSTA_UPDATE=always` and read `git diff tests/it/snapshots/`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};

use kernels_test_support::{self as common, TestContext, snapshot};

const PROJECT: &str = "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n";
const VARIANT: &str = "torch210-cxx11-cpu-x86_64-linux";

/// A context with [`PROJECT`] over the bundled mirror.
fn setup() -> TestContext {
    TestContext::new().with_pyproject(PROJECT)
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn lock_success() {
    let setup = setup();
    let out = setup.run(&["lock"]);
    assert_eq!(code(&out), Some(0));
    snapshot!("lock_success", out);
    snapshot!(
        "lock_success_file",
        fs_err::read_to_string(setup.project.join("kernels.lock")).unwrap()
    );
}

#[test]
fn lock_check_fresh_and_stale() {
    let setup = setup();
    setup.run_ok(&["lock"]);
    let fresh = setup.run(&["lock", "--check"]);
    assert_eq!(code(&fresh), Some(0));
    snapshot!("lock_check_fresh", fresh);
    fs_err::write(
        setup.project.join("pyproject.toml"),
        format!("{PROJECT}\"kernels-community/activation\" = \">=0.0.2\"\n"),
    )
    .unwrap();
    let stale = setup.run(&["lock", "--check"]);
    assert_eq!(code(&stale), Some(1));
    snapshot!("lock_check_stale", stale);
}

#[test]
fn download_outputs() {
    let setup = setup();
    // Without a lock, `download` locks first; `--frozen` uses none.
    let missing = setup.run(&["download", "--frozen", "--variant", VARIANT]);
    assert_eq!(code(&missing), Some(1));
    snapshot!("download_no_lock", missing);

    setup.run_ok(&["lock"]);
    let dry = setup.run(&["download", "--variant", VARIANT, "--dry-run"]);
    assert_eq!(code(&dry), Some(0));
    snapshot!("download_dry_run", dry);

    let cold = setup
        .kernels_without_hub()
        .args(["download", "--variant", VARIANT, "--offline"])
        .output()
        .unwrap();
    assert_eq!(code(&cold), Some(1));
    snapshot!("download_offline_cold", cold);

    let ok = setup.run(&["download", "--variant", VARIANT]);
    assert_eq!(code(&ok), Some(0));
    snapshot!("download_success", ok);

    let offline = setup
        .kernels_without_hub()
        .args(["download", "--variant", VARIANT, "--offline"])
        .output()
        .unwrap();
    assert_eq!(code(&offline), Some(0));
    snapshot!("download_offline_warm", offline);
}

/// The largest blob of the cache (an LFS `.so`), for corrupting it.
fn largest_blob(cache: &Path) -> std::path::PathBuf {
    walkdir::WalkDir::new(cache)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file() && e.path().parent().unwrap().ends_with("blobs"))
        .max_by_key(|e| (e.metadata().unwrap().len(), e.path().to_owned()))
        .expect("a blob")
        .into_path()
}

#[test]
fn verify_success_and_corrupted() {
    let setup = setup();
    setup.run_ok(&["lock"]);
    assert!(
        setup
            .run(&["download", "--variant", VARIANT])
            .status
            .success()
    );
    let ok = setup.run(&["verify", "--variant", VARIANT]);
    assert_eq!(code(&ok), Some(0));
    snapshot!("verify_success", ok);

    let blob = largest_blob(&setup.cache);
    let len = fs_err::metadata(&blob).unwrap().len() as usize;
    fs_err::write(&blob, vec![b'x'; len]).unwrap();
    let bad = setup.run(&["verify", "--variant", VARIANT]);
    assert_eq!(code(&bad), Some(1));
    snapshot!("verify_corrupted", bad);
}

#[test]
fn to_wheel_success_and_bad_version() {
    let setup = setup();
    let out_dir = setup.tmp.path().join("wheels");
    let ok = setup
        .kernels()
        .args([
            "to-wheel",
            "kernels-community/relu",
            "1.0.0",
            "--revision",
            "v1",
        ])
        .args(["--variant", VARIANT, "--out-dir"])
        .arg(&out_dir)
        .env("SOURCE_DATE_EPOCH", "315532800")
        .output()
        .unwrap();
    assert_eq!(
        code(&ok),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    snapshot!("to_wheel_success", ok);

    let bad = setup
        .kernels()
        .args(["to-wheel", "kernels-community/relu", "not-a-version"])
        .output()
        .unwrap();
    assert_eq!(code(&bad), Some(1));
    snapshot!("to_wheel_bad_version", bad);
}

#[test]
fn serve_startup_and_bad_mirror() {
    let mut child = common::kernels_scrubbed()
        .arg("serve")
        .arg(common::mirror_dir())
        .args(["--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    snapshot!("serve_startup", line);

    let missing = tempfile::tempdir().unwrap();
    let bad = common::kernels_scrubbed()
        .arg("serve")
        .arg(missing.path().join("no-such-mirror"))
        .args(["--port", "0"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(code(&bad), Some(1));
    snapshot!("serve_bad_mirror", bad);
}

#[test]
fn completions_and_version() {
    let context = TestContext::new();
    let version = context.run(&["--version"]);
    snapshot!(
        "version",
        version,
        &[(env!("CARGO_PKG_VERSION"), "[VERSION]")]
    );
    let bash = context.run(&["completions", "bash"]);
    assert_eq!(code(&bash), Some(0));
    snapshot!("completions_bash", bash);
}
