//! `docs/docker.md`'s Dockerfile, run as the recipe runs it without a Docker
//! daemon (issue 13, item 7): each stage gets a root directory that absolute
//! paths are mapped into; `COPY` from the context copies the test project,
//! `COPY --from` is `cp -a`; every `RUN` runs as written with `sh -c` (the build
//! stage as root against `kernels serve` of the bundled mirror); the `CMD` runs
//! as uid 65534 (`setpriv`) with the stage's `ENV` on the read-only copy, where
//! the reference 0.17.2 runtime (stub torch) loads every kernel offline. Only the
//! two `pip install` lines are replaced: by the built binary and by the pinned
//! reference environment.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use kernels_test_support::{self as common, Server};

use crate::runtime_offline::{KERNELS, assert_loaded_from_cache, run_ok};

const PROJECT: &str = "kernels-tests-kernel_locking-6dfe59c7";
const RUNTIME_UID: &str = "65534";

/// The first ```dockerfile block of docs/docker.md.
fn dockerfile() -> String {
    let doc = fs_err::read_to_string(common::repo_root().join("docs/docker.md")).unwrap();
    let start = doc.find("```dockerfile\n").expect("a dockerfile block") + 14;
    let end = doc[start..].find("```").unwrap() + start;
    doc[start..end].to_owned()
}

struct Stage {
    name: String,
    root: PathBuf,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    user: Option<String>,
    cmd: Option<Vec<String>>,
}

impl Stage {
    /// A path of the image: absolute ones inside the stage's root, relative
    /// ones from `WORKDIR`.
    fn path(&self, p: &str) -> PathBuf {
        match p.strip_prefix('/') {
            Some(rest) => self.root.join(rest),
            None => self.cwd.join(p),
        }
    }

    /// A shell line with every absolute word mapped into the stage's root.
    fn map_words(&self, line: &str) -> String {
        line.split(' ')
            .map(|w| {
                if w.starts_with('/') {
                    self.path(w).display().to_string()
                } else {
                    w.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Every entry under `root` with its type, mode, size and modification time.
fn listing(root: &Path) -> BTreeMap<PathBuf, (u32, u64, i64, i64)> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let m = e.path().symlink_metadata().unwrap();
            (
                e.path().strip_prefix(root).unwrap().to_owned(),
                (m.mode(), m.len(), m.mtime(), m.mtime_nsec()),
            )
        })
        .collect()
}

fn as_runtime_user(program: &Path) -> Command {
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args([
        &format!("--reuid={RUNTIME_UID}"),
        &format!("--regid={RUNTIME_UID}"),
        "--clear-groups",
    ])
    .arg(program);
    cmd
}

#[test]
fn docker_recipe_runs_as_written_build_as_root_runtime_read_only_as_65534() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    // The runtime user must reach its stage's root.
    fs_err::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    // The build context: the project with the `kernels.lock` its developer
    // committed (`kernels lock`, before any image is built).
    let context = tmp.path().join("context");
    fs_err::create_dir_all(&context).unwrap();
    let manifest = fs_err::read_to_string(
        common::repo_root()
            .join("fixtures/projects")
            .join(PROJECT)
            .join("pyproject.toml"),
    )
    .unwrap();
    // The recipe's first step: the runtime stage's version in pyproject.toml.
    let doc = fs_err::read_to_string(common::repo_root().join("docs/docker.md")).unwrap();
    let setting = doc
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/docker.md names the target runtime in a toml block");
    assert_eq!(setting, "[tool.kernels]\ntarget-runtime = \"0.17.2\"\n");
    fs_err::write(
        context.join("pyproject.toml"),
        format!("{manifest}\n{setting}"),
    )
    .unwrap();
    let mut lock = common::kernels(&server.endpoint, &tmp.path().join("dev-cache"));
    lock.arg("lock").arg(&context);
    run_ok(&mut lock, "kernels lock (developer)");

    // The wheel's two commands: `kernels` and `kernels-cli`, the name the
    // recipe uses (a link here; the wheel builds both, pyproject.toml).
    let kernels_bin = tmp.path().join("wheel-scripts");
    fs_err::create_dir_all(&kernels_bin).unwrap();
    for name in ["kernels", "kernels-cli"] {
        std::os::unix::fs::symlink(common::kernels_bin(), kernels_bin.join(name)).unwrap();
    }
    let pyref = common::pyref_root().join("kernels-0.17.2");
    let python = common::pyref_python("kernels-0.17.2");
    let system_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    let stub = common::repo_root().join("tests/python/stub_torch");

    let mut stages: Vec<Stage> = Vec::new();
    let mut installs = Vec::new();
    for line in dockerfile().lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (instr, rest) = line.split_once(' ').unwrap();
        if instr == "FROM" {
            let name = rest.rsplit(' ').next().unwrap().to_owned();
            let root = tmp.path().join(&name);
            fs_err::create_dir_all(&root).unwrap();
            stages.push(Stage {
                cwd: root.clone(),
                name,
                root,
                env: Vec::new(),
                user: None,
                cmd: None,
            });
            continue;
        }
        if instr == "COPY" {
            let stage = stages.last().expect("FROM first");
            let words: Vec<&str> = rest.split(' ').collect();
            let (from, words) = match words[0].strip_prefix("--from=") {
                Some(from) => (Some(from), &words[1..]),
                None => (None, &words[..]),
            };
            let (dest, sources) = words.split_last().unwrap();
            let dest = stage.path(dest);
            if let Some(parent) = dest.parent() {
                fs_err::create_dir_all(parent).unwrap();
            }
            for source in sources {
                let source = match from {
                    Some(from) => stages.iter().find(|s| s.name == from).unwrap().path(source),
                    None => context.join(source),
                };
                let mut cp = Command::new("cp");
                cp.arg("-a").arg(&source).arg(&dest);
                run_ok(&mut cp, &format!("COPY {rest}"));
            }
            continue;
        }
        let stage = stages.last_mut().expect("FROM first");
        match instr {
            "WORKDIR" => {
                stage.cwd = stage.path(rest);
                fs_err::create_dir_all(&stage.cwd).unwrap();
            }
            "ENV" => {
                for kv in rest.split(' ') {
                    let (k, v) = kv.split_once('=').unwrap();
                    let v = if v.starts_with('/') {
                        stage.path(v).display().to_string()
                    } else {
                        v.to_owned()
                    };
                    stage.env.push((k.to_owned(), v));
                }
            }
            "USER" => stage.user = Some(rest.to_owned()),
            "CMD" => stage.cmd = Some(serde_json::from_str(rest).unwrap()),
            "RUN" => {
                // Recognising a line of the recipe, not asserting output.
                if rest.contains("pip install") {
                    installs.push((stage.name.clone(), rest.to_owned()));
                    continue;
                }
                assert!(stage.user.is_none(), "RUN after USER: {line}");
                let mut cmd = Command::new("sh");
                cmd.arg("-c").arg(stage.map_words(rest)).env_clear();
                cmd.current_dir(&stage.cwd)
                    .env("HOME", tmp.path().join("root-home"))
                    .env("PATH", format!("{}:{system_path}", kernels_bin.display()))
                    .env("HF_ENDPOINT", &server.endpoint)
                    .env("NO_COLOR", "1")
                    .envs(stage.env.iter().map(|(k, v)| (k, v)));
                run_ok(&mut cmd, &format!("{}: RUN {rest}", stage.name));
            }
            other => panic!("instruction {other} is not run by this test: {line}"),
        }
    }

    assert_eq!(
        installs.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["build", "runtime"],
        "{installs:?}"
    );
    assert_eq!(
        installs[0].1,
        "--mount=type=bind,source=dist,target=/dist pip install --no-cache-dir /dist/kernels_cli-*.whl"
    );
    assert_eq!(installs[1].1, "pip install --no-cache-dir kernels==0.17.2");

    let runtime = stages.last().unwrap();
    assert_eq!(runtime.name, "runtime");
    assert_eq!(runtime.user.as_deref(), Some("65534:65534"));
    let env: BTreeMap<&str, &str> = runtime
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(env.get("HF_HUB_OFFLINE"), Some(&"1"));
    let cache = runtime.path("/opt/hf-cache");
    assert_eq!(env.get("HF_HUB_CACHE"), Some(&cache.to_str().unwrap()));
    assert_eq!(runtime.cmd.as_ref().unwrap()[0], "python");

    // Read-only for the runtime user.
    let mut touch = as_runtime_user(Path::new("/usr/bin/touch"));
    touch.arg(cache.join("probe")).env_clear();
    assert!(!touch.status().unwrap().success(), "the cache is writable");

    let before = listing(&runtime.root);
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    // `CMD` is the script that loads every kernel every way 0.17.2 offers.
    let mut cmd = as_runtime_user(&python);
    cmd.arg(common::repo_root().join("tests/python/load_offline.py"))
        .arg(runtime.path("kernels.lock"))
        .args(KERNELS.iter().map(|(repo, v)| format!("{repo}={v}")))
        .env_clear()
        .current_dir(&runtime.cwd)
        .env(
            "PATH",
            format!("{}:{system_path}", pyref.join("bin").display()),
        )
        .env("HOME", "/nonexistent")
        .env(
            "HF_ENDPOINT",
            format!("http://{}", silent.local_addr().unwrap()),
        )
        .env("PYTHONPATH", &stub)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("STUB_TORCH_VERSION", "2.10.0")
        .env("STUB_TORCH_CUDA", "12.8")
        .envs(runtime.env.iter().map(|(k, v)| (k, v)));
    let stdout = run_ok(&mut cmd, "runtime CMD (reference 0.17.2, uid 65534)");
    assert!(
        silent.accept().is_err(),
        "the offline load opened a connection"
    );
    assert_eq!(before, listing(&runtime.root), "the runtime stage wrote");

    assert_loaded_from_cache(
        &stdout,
        &cache,
        &["get_kernel", "get_locked_kernel", "load_kernel"],
        "runtime stage",
    );
}
