//! [`TestContext`]: what one integration test runs `kernels` in — a `kernels
//! serve` on loopback, a project folder, a Hub cache and the scrubbed environment —
//! and [`TestContext::kernels`], the binary with all of that set (uv's
//! `TestContext` is the model).
//!
//! ```no_run
//! use kernels_test_support::{TestContext, snapshot};
//!
//! let context = TestContext::new()
//!     .with_pyproject("[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n");
//! snapshot!("lock", context.run(&["lock"]));
//! ```
//!
//! The acme world of [`crate::world`] (a generated mirror with the request log and
//! fault rules) is a context too: [`TestContext::world`].

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{Server, mirror_dir, repo_root};

/// An endpoint nothing listens on (port 9, discard), for commands that must not
/// reach a Hub.
pub const NO_HUB: &str = "http://127.0.0.1:9";

/// One test's server, project folder, cache and environment. Every folder lives
/// in [`TestContext::tmp`] and is removed on drop, with the server.
pub struct TestContext {
    /// Owns the project, the cache and anything a test adds beside them (a
    /// generated mirror is written to `mirror/` in it).
    pub tmp: tempfile::TempDir,
    /// The `kernels serve` that [`TestContext::kernels`] points `HF_ENDPOINT` at.
    pub server: Server,
    /// The project folder (`<tmp>/project`, created empty): the working
    /// directory of [`TestContext::kernels`].
    pub project: PathBuf,
    /// The Hub cache (`<tmp>/cache`, `HF_HUB_CACHE`), not created until a command
    /// writes it.
    pub cache: PathBuf,
    /// Variables set on every command after the scrub, in order.
    env: Vec<(OsString, OsString)>,
}

impl Default for TestContext {
    fn default() -> TestContext {
        TestContext::new()
    }
}

impl TestContext {
    /// A context serving the bundled mirror (`kernels/`).
    pub fn new() -> TestContext {
        TestContext::with_server(Server::start(&mirror_dir()))
    }

    /// A context serving the mirror directory `mirror` (left where it is).
    pub fn with_mirror(mirror: &Path) -> TestContext {
        TestContext::with_server(Server::start(mirror))
    }

    /// A context serving the bundled mirror with `--test-control` (the request
    /// log and fault rules of [`crate::world::control`]).
    pub fn with_test_control() -> TestContext {
        TestContext::with_server(Server::start_with_args(&mirror_dir(), &["--test-control"]))
    }

    /// A context around a server the test started itself.
    pub fn with_server(server: Server) -> TestContext {
        TestContext::assemble(tempfile::tempdir().expect("create a tempdir"), server)
    }

    /// A context serving a mirror that `write` creates at `<tmp>/mirror`, started
    /// with the extra `kernels serve` arguments `serve_args` (for example
    /// `--test-control`).
    pub fn with_generated_mirror(write: impl FnOnce(&Path), serve_args: &[&str]) -> TestContext {
        let tmp = tempfile::tempdir().expect("create a tempdir");
        let mirror = tmp.path().join("mirror");
        fs_err::create_dir_all(&mirror).expect("create the mirror folder");
        write(&mirror);
        let server = Server::start_with_args(&mirror, serve_args);
        TestContext::assemble(tmp, server)
    }

    fn assemble(tmp: tempfile::TempDir, server: Server) -> TestContext {
        let project = tmp.path().join("project");
        let cache = tmp.path().join("cache");
        fs_err::create_dir_all(&project).expect("create the project folder");
        TestContext {
            tmp,
            server,
            project,
            cache,
            env: Vec::new(),
        }
    }

    /// Writes `text` as the project's `pyproject.toml`.
    #[must_use]
    pub fn with_pyproject(self, text: &str) -> TestContext {
        self.write("pyproject.toml", text);
        self
    }

    /// Copies `fixtures/projects/<name>/pyproject.toml` of the repository into the
    /// project folder.
    #[must_use]
    pub fn with_fixture_project(self, name: &str) -> TestContext {
        let source = repo_root()
            .join("fixtures/projects")
            .join(name)
            .join("pyproject.toml");
        fs_err::copy(source, self.project.join("pyproject.toml")).expect("copy a fixture project");
        self
    }

    /// Puts the stub `torch` of `tests/python/stub_torch` (torch 2.7, CPU only) on
    /// `PYTHONPATH`, so that what the project's Python reports does not depend
    /// on the host.
    #[must_use]
    pub fn with_stub_torch(self) -> TestContext {
        let stub = repo_root().join("tests/python/stub_torch");
        self.with_env("PYTHONPATH", stub)
    }

    /// [`TestContext::with_stub_torch`] from a copy in the test's folder: with
    /// bytecode writing on, its `__pycache__` lands there, not in the
    /// repository.
    #[must_use]
    pub fn with_stub_torch_copy(self) -> TestContext {
        let stub = self.tmp.path().join("stub_torch");
        let source = repo_root().join("tests/python/stub_torch");
        fs_err::create_dir_all(stub.join("torch")).unwrap();
        for file in ["sitecustomize.py", "torch/__init__.py"] {
            fs_err::copy(source.join(file), stub.join(file)).unwrap();
        }
        self.with_env("PYTHONPATH", stub)
    }

    /// Sets `name=value` on every command of this context (after the scrub).
    #[must_use]
    pub fn with_env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> TestContext {
        self.env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Base URL of the server (`HF_ENDPOINT` of every command).
    pub fn endpoint(&self) -> &str {
        &self.server.endpoint
    }

    /// The `kernels` binary in the project folder, with a scrubbed environment,
    /// `HF_ENDPOINT` at the server, the cache as `HF_HUB_CACHE`, `HF_HOME` below
    /// it, colour off, then the variables of [`TestContext::with_env`].
    pub fn kernels(&self) -> Command {
        let mut cmd = crate::kernels(self.endpoint(), &self.cache);
        cmd.current_dir(&self.project);
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        cmd
    }

    /// Like [`TestContext::kernels`] with `HF_ENDPOINT` at [`NO_HUB`]: every
    /// request fails to connect.
    pub fn kernels_without_hub(&self) -> Command {
        let mut cmd = self.kernels();
        cmd.env("HF_ENDPOINT", NO_HUB);
        cmd
    }

    /// Runs `kernels <args>` (see [`TestContext::kernels`]) to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.kernels().args(args).output().expect("run kernels")
    }

    /// Like [`TestContext::run`], and asserts that it succeeded (showing stderr
    /// otherwise).
    pub fn run_ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "kernels {} failed ({}):\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Writes `text` to `name` in the project folder (creating parent folders).
    pub fn write(&self, name: &str, text: &str) {
        let path = self.project.join(name);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).expect("create parent folder");
        }
        fs_err::write(path, text).expect("write a project file");
    }

    /// The text of `name` in the project folder.
    pub fn read(&self, name: &str) -> String {
        fs_err::read_to_string(self.project.join(name)).expect("read a project file")
    }

    /// The project's `kernels.lock`.
    pub fn lockfile(&self) -> String {
        self.read("kernels.lock")
    }
}
