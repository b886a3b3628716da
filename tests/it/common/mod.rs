//! Shared test harness: a `kernels serve` child process, isolated command
//! environments and the pinned Python reference environments.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Root of this repository.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bundled mirror (`kernels/`).
pub fn mirror_dir() -> PathBuf {
    repo_root().join("kernels")
}

/// Path of the `kernels` binary under test.
pub fn kernels_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kernels"))
}

/// Environment variables that must not leak from the developer's shell into a test.
const SCRUBBED: &[&str] = &[
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "KERNELS_CACHE",
    "HF_KERNELS_CACHE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "VIRTUAL_ENV",
    "KERNELS_LOCKED",
    "KERNELS_FROZEN",
    "KERNELS_OFFLINE",
];

/// A running `kernels serve` on loopback, killed on drop.
pub struct Server {
    child: Child,
    /// Base URL of the Hub listener, for `HF_ENDPOINT`.
    pub endpoint: String,
}

impl Server {
    /// Serves `mirror` on a free port; waits until the endpoint line is printed.
    pub fn start(mirror: &Path) -> Server {
        Self::start_with_args(mirror, &[])
    }

    /// Like [`Server::start`] with extra `kernels serve` arguments.
    pub fn start_with_args(mirror: &Path, extra: &[&str]) -> Server {
        let mut cmd = Command::new(kernels_bin());
        cmd.arg("serve")
            .arg(mirror)
            .args(["--port", "0"])
            .args(extra);
        for name in SCRUBBED {
            cmd.env_remove(name);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn kernels serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read endpoint line");
        let endpoint = line.trim().to_owned();
        assert!(
            endpoint.starts_with("http://"),
            "kernels serve printed {endpoint:?} instead of its endpoint"
        );
        Server { child, endpoint }
    }

    /// Starts the bundled mirror.
    pub fn bundled() -> Server {
        Self::start(&mirror_dir())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kernels` command with a scrubbed environment pointing at `endpoint` and
/// using `cache` as the Hub cache.
pub fn kernels(endpoint: &str, cache: &Path) -> Command {
    let mut cmd = Command::new(kernels_bin());
    for name in SCRUBBED {
        cmd.env_remove(name);
    }
    cmd.env("HF_ENDPOINT", endpoint)
        .env("HF_HUB_CACHE", cache)
        .env("HF_HOME", cache.join("hf-home"))
        .env("NO_COLOR", "1");
    cmd
}

/// Root of the pinned Python reference environments made by `scripts/pyref-setup`
/// (`KERNELS_PYREF`, default `.pyref/` in the repository).
pub fn pyref_root() -> PathBuf {
    std::env::var_os("KERNELS_PYREF")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".pyref"))
}

/// The Python interpreter of one reference environment, for example
/// `kernels-0.10.5` or `hub-2.4.0`. Panics (the test fails, never skips) when it
/// has not been set up.
pub fn pyref_python(env_name: &str) -> PathBuf {
    let python = pyref_root().join(env_name).join("bin").join("python");
    assert!(
        python.exists(),
        "Python reference environment `{env_name}` is missing at {}: run `bash scripts/pyref-setup`",
        python.display()
    );
    python
}

/// A Python reference command with a scrubbed environment pointing at `endpoint`
/// and using `cache` as the Hub cache.
pub fn python(env_name: &str, endpoint: &str, cache: &Path) -> Command {
    let mut cmd = Command::new(pyref_python(env_name));
    for name in SCRUBBED {
        cmd.env_remove(name);
    }
    cmd.env("HF_ENDPOINT", endpoint)
        .env("HF_HUB_CACHE", cache)
        .env("HF_HOME", cache.join("hf-home"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HUB_DISABLE_XET", "1")
        .env("HF_HUB_DISABLE_PROGRESS_BARS", "1");
    cmd
}
