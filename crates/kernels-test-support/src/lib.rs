//! Test support for the `kernels` workspace (a dev-dependency only).
//!
//! - [`TestContext`]: one test's server, project folder, cache and scrubbed
//!   environment, with [`TestContext::kernels`], the command that uses them;
//! - [`Server`]: a `kernels serve` child process on loopback;
//! - [`kernels`] and [`python`]: commands with a scrubbed environment
//!   ([`scrub`], built from [`kernels_types::env_vars::ENV_VARS`]);
//! - [`world`]: the acme world (a small generated mirror with a test-control
//!   server, [`TestContext::world`]), and the
//!   cache-layout assertions shared by the download, verify, fault and crash tests;
//! - [`sigstore`]: a test Sigstore (Fulcio CA, CT and Rekor keys, trusted root) that
//!   signs `metadata.json` into real bundles, and the signed-variant fixtures;
//! - [`snapshot!`]: the one snapshot macro, with the shared filters of [`snapshot`].

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub mod context;
pub mod hostile;
pub mod sigstore;
pub mod snapshot;
pub mod world;

pub use context::{NO_HUB, TestContext};
pub use insta;
pub use world::*;

/// Root of this repository (the root package `kernels`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/kernels-test-support has two parents")
        .to_path_buf()
}

/// The bundled mirror (`kernels/`).
pub fn mirror_dir() -> PathBuf {
    repo_root().join("kernels")
}

/// Path of the `kernels` binary under test: `NEXTEST_BIN_EXE_kernels` or
/// `CARGO_BIN_EXE_kernels` when the runner sets it, else `kernels` in the
/// target directory of the running test executable (`target/<profile>/deps/..`).
pub fn kernels_bin() -> PathBuf {
    for name in ["NEXTEST_BIN_EXE_kernels", "CARGO_BIN_EXE_kernels"] {
        if let Some(path) = std::env::var_os(name) {
            return PathBuf::from(path);
        }
    }
    let exe = std::env::current_exe().expect("current test executable");
    let mut dir = exe.parent().expect("test executable has a folder");
    if dir.ends_with("deps") {
        dir = dir.parent().expect("deps/ has a parent");
    }
    let bin = dir.join(format!("kernels{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the kernels binary is missing at {} (run the tests through cargo)",
        bin.display()
    );
    bin
}

/// Variables a test must control beyond what the settings layer reads: colour
/// and terminal width (miette, clap), logging and backtraces of the binary.
pub const ALSO_CONTROLLED: &[&str] = &[
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "COLUMNS",
    "TERM",
    "RUST_LOG",
    "RUST_BACKTRACE",
];

/// Variables the Python reference reads that would change what it does.
const PYTHON_ONLY: &[&str] = &[
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "HF_HUB_ENABLE_HF_TRANSFER",
    "HF_HUB_DISABLE_SYMLINKS",
    "HF_HUB_USER_AGENT_ORIGIN",
];

/// Every variable [`scrub`] removes from a `kernels` process: the settings
/// layer's [`ENV_VARS`](kernels_types::env_vars::ENV_VARS) plus [`ALSO_CONTROLLED`].
pub fn scrubbed_vars() -> impl Iterator<Item = &'static str> {
    kernels_types::env_vars::ENV_VARS
        .iter()
        .chain(ALSO_CONTROLLED)
        .copied()
}

/// Removes every variable of [`scrubbed_vars`] from `cmd`, so that nothing in the
/// developer's shell (`KERNELS_MAX_RETRIES=0`, `HF_HUB_OFFLINE=1`, a token, a
/// virtual environment on `PATH`) changes what a test sees. Tests set back what
/// they need.
pub fn scrub(cmd: &mut Command) -> &mut Command {
    for name in scrubbed_vars() {
        cmd.env_remove(name);
    }
    cmd
}

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
        scrub(&mut cmd)
            .arg("serve")
            .arg(mirror)
            .args(["--port", "0"])
            .args(extra);
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

/// The `kernels` binary with a scrubbed environment and nothing set.
pub fn kernels_scrubbed() -> Command {
    let mut cmd = Command::new(kernels_bin());
    scrub(&mut cmd);
    cmd
}

/// A `kernels` command with a scrubbed environment pointing at `endpoint` and
/// using `cache` as the Hub cache (colour off).
pub fn kernels(endpoint: &str, cache: &Path) -> Command {
    let mut cmd = kernels_scrubbed();
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
/// and using `cache` as the Hub cache. `PATH` and `HOME` are kept (the interpreter
/// needs them; the Hub locations are set explicitly).
pub fn python(env_name: &str, endpoint: &str, cache: &Path) -> Command {
    let mut cmd = Command::new(pyref_python(env_name));
    for name in scrubbed_vars()
        .chain(PYTHON_ONLY.iter().copied())
        .filter(|n| !matches!(*n, "PATH" | "HOME"))
    {
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
