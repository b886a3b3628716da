//! The acme world: a small mirror written in a tempdir (`acme/relu`, `acme/gelu`)
//! and served with `kernels serve --test-control`, as a [`TestContext`]; and the
//! assertions on the Hugging Face cache layout that several test modules share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use kernels_types::digest::{Digest, git_blob_sha1, git_lfs_concat, sha256};
use serde_json::Value;

use crate::TestContext;

/// Commit of `acme/relu` in the world mirror.
pub const RELU_SHA: &str = "1111111111111111111111111111111111111111";
/// Commit of `acme/gelu` in the world mirror.
pub const GELU_SHA: &str = "2222222222222222222222222222222222222222";
/// The token [`TestContext::download`] passes as `HF_TOKEN`.
pub const TOKEN: &str = "hf_download_test_token";

/// One file of the test mirror.
#[derive(Clone)]
pub struct MirrorFile {
    /// Path in the repository.
    pub path: String,
    /// File content.
    pub content: Vec<u8>,
}

impl MirrorFile {
    /// Whether the mirror stores it as LFS (`*.so`).
    pub fn lfs(&self) -> bool {
        self.path.ends_with(".so")
    }

    /// The blob name the HF cache must use.
    pub fn etag(&self) -> String {
        if self.lfs() {
            hex(&sha256(&self.content))
        } else {
            hex(&git_blob_sha1(&self.content))
        }
    }

    fn digest(&self) -> Digest {
        if self.lfs() {
            Digest::Sha256(sha256(&self.content))
        } else {
            Digest::GitSha1(git_blob_sha1(&self.content))
        }
    }
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Deterministic pseudo-random bytes (xorshift) standing in for a shared object.
pub fn so_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = b"\x7fELF".to_vec();
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(x as u8);
    }
    out
}

/// The machine name Python's `platform.machine()` reports on this Linux host.
fn machine() -> &'static str {
    std::env::consts::ARCH
}

/// The variant name of this host's architecture that `acme/relu` has.
pub fn arch_variant() -> String {
    format!("torch27-cxx11-cu126-{}-linux", machine())
}

/// The files of `acme/relu`: several variants, LFS `.so` files, bytecode.
pub fn relu_files() -> Vec<MirrorFile> {
    let f = |path: &str, content: Vec<u8>| MirrorFile {
        path: path.to_owned(),
        content,
    };
    let init = b"from ._ops import ops\n".to_vec();
    let arch = arch_variant();
    vec![
        f("README.md", b"# relu\n".to_vec()),
        f(
            ".gitattributes",
            b"*.so filter=lfs diff=lfs merge=lfs -text\n".to_vec(),
        ),
        f("build/torch-cpu/relu/__init__.py", init.clone()),
        f("build/torch-cpu/relu/_ops.abi3.so", so_bytes(1, 70_000)),
        f(
            "build/torch-cpu/relu/__pycache__/__init__.cpython-311.pyc",
            b"bytecode".to_vec(),
        ),
        f("build/torch-cuda/relu/__init__.py", init.clone()),
        f("build/torch-cuda/relu/_ops.abi3.so", so_bytes(2, 300_000)),
        f(
            "build/torch-cuda/metadata.json",
            b"{\"python-depends\":[]}\n".to_vec(),
        ),
        f(&format!("build/{arch}/relu/__init__.py"), init.clone()),
        f(
            &format!("build/{arch}/relu/_ops.abi3.so"),
            so_bytes(3, 120_000),
        ),
        f(
            "build/torch-universal/relu/__init__.py",
            b"x = 1\n".to_vec(),
        ),
    ]
}

/// The files of `acme/gelu`: a universal and a CUDA variant.
pub fn gelu_files() -> Vec<MirrorFile> {
    vec![
        MirrorFile {
            path: "build/torch-universal/gelu/__init__.py".into(),
            content: b"def gelu(x):\n    return x\n".to_vec(),
        },
        MirrorFile {
            path: "build/torch-cuda/gelu/_ops.abi3.so".into(),
            content: so_bytes(4, 50_000),
        },
    ]
}

/// Variants of a file list with their files (bytecode excluded, as the
/// reference ≥0.16 lock and download do).
pub fn variants(files: &[MirrorFile]) -> BTreeMap<String, Vec<MirrorFile>> {
    let mut out: BTreeMap<String, Vec<MirrorFile>> = BTreeMap::new();
    for file in files {
        let Some(rest) = file.path.strip_prefix("build/") else {
            continue;
        };
        if file.path.ends_with(".pyc") {
            continue;
        }
        let variant = rest.split('/').next().unwrap().to_owned();
        out.entry(variant).or_default().push(file.clone());
    }
    out
}

/// The `git_lfs_concat` lock hash of one variant.
pub fn variant_hash(variant: &str, files: &[MirrorFile]) -> String {
    let prefix = format!("build/{variant}/");
    git_lfs_concat(
        files
            .iter()
            .map(|f| (f.path.strip_prefix(&prefix).unwrap(), f.digest())),
    )
}

/// Writes `orgs/<org>.toml` of the mirror format: an organization the Hub
/// marks as a trusted kernel publisher, as kernels 0.17+ check when locking
/// (a project's first lock is written for them when no runtime is named).
pub fn write_trusted_org(mirror: &Path, org: &str) {
    fs_err::create_dir_all(mirror.join("orgs")).unwrap();
    fs_err::write(
        mirror.join("orgs").join(format!("{org}.toml")),
        format!("fullname = \"{org}\"\ntrusted_kernel_publisher = true\n"),
    )
    .unwrap();
}

/// Writes a repo of the mirror format (`repos/kernels/<owner>/<name>`, one commit).
pub fn write_repo(mirror: &Path, repo: &str, sha: &str, files: &[MirrorFile]) {
    let dir = mirror.join("repos/kernels").join(repo);
    let tree = dir.join("commits/c1/tree");
    for file in files {
        let path = tree.join(&file.path);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, &file.content).unwrap();
    }
    fs_err::write(
        dir.join("commits/c1/commit.toml"),
        format!("sha = \"{sha}\"\ntitle = \"Build\"\n"),
    )
    .unwrap();
    fs_err::write(
        dir.join("repo.toml"),
        "commits = [\"c1\"]\nalso_serve_as = [\"model\"]\nlfs = [\"*.so\"]\n\n[branches]\nmain = \"c1\"\n",
    )
    .unwrap();
}

/// Calls `/__fixture/<path>` of the `kernels serve --test-control` (or a
/// proxy in front of it) at `origin` and returns its JSON answer (`Null` for
/// an empty one); panics unless the answer is a success.
pub fn control(origin: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let url = format!("{origin}/__fixture/{path}");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut req = reqwest::Client::new().request(method, &url);
            if let Some(body) = body {
                req = req.json(&body);
            }
            let resp = req.send().await.unwrap();
            assert!(resp.status().is_success(), "{url}: {}", resp.status());
            let text = resp.text().await.unwrap();
            serde_json::from_str(&text).unwrap_or(Value::Null)
        })
}

/// Adds a fault rule to the server at `origin` (see [`control`]).
pub fn add_fault(origin: &str, rule: Value) {
    control(origin, reqwest::Method::POST, "faults", Some(rule));
}

/// The request log of the server at `origin` (see [`control`]).
pub fn requests(origin: &str) -> Vec<Value> {
    match control(origin, reqwest::Method::GET, "requests", None) {
        Value::Array(items) => items,
        other => panic!("request log is not an array: {other}"),
    }
}

/// The acme world: a [`TestContext`] whose server is `kernels serve
/// --test-control` over a generated mirror with `acme/relu` and `acme/gelu`.
impl TestContext {
    /// The world with `acme/relu` and `acme/gelu`.
    pub fn world() -> TestContext {
        Self::world_with(|_| {})
    }

    /// Like [`TestContext::world`], with `extra` adding to the mirror before the
    /// server starts.
    pub fn world_with(extra: impl FnOnce(&Path)) -> TestContext {
        TestContext::with_generated_mirror(
            |mirror| {
                write_repo(mirror, "acme/relu", RELU_SHA, &relu_files());
                write_repo(mirror, "acme/gelu", GELU_SHA, &gelu_files());
                extra(mirror);
            },
            &["--test-control"],
        )
    }

    /// Writes a variant-hash (format A) lock with the given kernels.
    pub fn lock_a(&self, kernels: &[(&str, &str, &[MirrorFile])]) {
        let entries: Vec<Value> = kernels
            .iter()
            .map(|(repo, sha, files)| {
                let variants: serde_json::Map<String, Value> = variants(files)
                    .iter()
                    .map(|(v, fs)| {
                        (
                            v.clone(),
                            serde_json::json!({"hash": variant_hash(v, fs), "hash_type": "git_lfs_concat"}),
                        )
                    })
                    .collect();
                serde_json::json!({"repo_id": repo, "sha": sha, "variants": variants})
            })
            .collect();
        fs_err::write(
            self.project.join("kernels.lock"),
            serde_json::to_string_pretty(&entries).unwrap(),
        )
        .unwrap();
    }

    /// Writes a `KernelLocks` (format B, 0.17) lock.
    pub fn lock_b(&self, kernels: &[(&str, &str)]) {
        let entries: Vec<Value> = kernels
            .iter()
            .map(|(repo, sha)| {
                serde_json::json!({"dependency": {"repo-id": repo, "version": 1}, "lock": {"commit": sha}})
            })
            .collect();
        fs_err::write(
            self.project.join("kernels.lock"),
            serde_json::to_string_pretty(&entries).unwrap(),
        )
        .unwrap();
    }

    /// Runs `kernels download <project> <args>` with [`TOKEN`].
    pub fn download(&self, args: &[&str]) -> Output {
        self.download_with(args, &[])
    }

    /// Like [`TestContext::download`] with extra environment variables.
    pub fn download_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = self.kernels();
        cmd.arg("download").arg(&self.project).args(args);
        cmd.env("HF_TOKEN", TOKEN);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// Runs `kernels verify <project> <args>` (no token).
    pub fn verify(&self, args: &[&str]) -> Output {
        self.kernels()
            .arg("verify")
            .arg(&self.project)
            .args(args)
            .output()
            .unwrap()
    }

    /// Calls the server's `/__fixture/<path>` control API and returns its JSON answer.
    pub fn control(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        control(&self.server.endpoint, method, path, body)
    }

    /// The server's request log.
    pub fn requests(&self) -> Vec<Value> {
        requests(&self.server.endpoint)
    }

    /// Clears the request log and the fault rules.
    pub fn reset(&self) {
        self.control(reqwest::Method::POST, "reset", None);
    }

    /// Adds a fault rule (`kernels serve --test-control`).
    pub fn fault(&self, rule: Value) {
        self.control(reqwest::Method::POST, "faults", Some(rule));
    }

    /// The cache folder of `repo` with prefix `<repo_type>s--`.
    pub fn repo_dir(&self, repo_type: &str, repo: &str) -> PathBuf {
        self.cache
            .join(format!("{repo_type}s--{}", repo.replace('/', "--")))
    }
}

/// Standard error of `out`, lossily decoded.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts that a `kernels download` succeeded, showing its stderr otherwise.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "kernels download failed ({}):\n{}",
        out.status,
        stderr(out)
    );
}

/// Asserts the exact HF layout for `files` under `repo_dir` at `sha`.
pub fn assert_layout(repo_dir: &Path, sha: &str, files: &[MirrorFile]) {
    for file in files {
        let pointer = repo_dir.join("snapshots").join(sha).join(&file.path);
        let meta = fs_err::symlink_metadata(&pointer)
            .unwrap_or_else(|e| panic!("{}: {e}", pointer.display()));
        assert!(
            meta.file_type().is_symlink(),
            "{} is not a symlink",
            pointer.display()
        );
        let depth = file.path.split('/').count() + 1;
        let expected = format!("{}blobs/{}", "../".repeat(depth), file.etag());
        assert_eq!(
            fs_err::read_link(&pointer).unwrap(),
            PathBuf::from(&expected),
            "link target of {}",
            file.path
        );
        let blob = repo_dir.join("blobs").join(file.etag());
        assert!(blob.is_file() && !fs_err::symlink_metadata(&blob).unwrap().is_symlink());
        assert_eq!(
            fs_err::read(&pointer).unwrap(),
            file.content,
            "{}",
            file.path
        );
    }
    // Refs only for the branch or tag names the lock records (0.17 `version = N`
    // is `vN`), each exactly the 40 bytes of the locked commit.
    for entry in walkdir::WalkDir::new(repo_dir.join("refs"))
        .into_iter()
        .flatten()
    {
        if entry.file_type().is_file() {
            assert_eq!(
                fs_err::read(entry.path()).unwrap(),
                sha.as_bytes(),
                "{}",
                entry.path().display()
            );
        }
    }
    for entry in walkdir::WalkDir::new(repo_dir.parent().unwrap()) {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy();
        assert!(
            !name.ends_with(".incomplete"),
            "leftover {}",
            entry.path().display()
        );
        assert!(
            !name.ends_with(".tmp"),
            "leftover {}",
            entry.path().display()
        );
    }
}

/// Files linked under `snapshots/<sha>/`, as repo paths.
pub fn snapshot_paths(repo_dir: &Path, sha: &str) -> Vec<String> {
    let root = repo_dir.join("snapshots").join(sha);
    let mut out: Vec<String> = walkdir::WalkDir::new(&root)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_type().is_dir())
        .map(|e| {
            e.path()
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    out.sort();
    out
}

/// The requests of the log that reached the CDN listener.
pub fn cdn_requests(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|r| r["listener"] == "cdn").collect()
}

/// The requests of the log for a `/resolve/` URL.
pub fn resolve_requests(log: &[Value]) -> Vec<&Value> {
    log.iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.contains("/resolve/")))
        .collect()
}

/// Python `huggingface_hub` loads what we wrote, offline, with identical bytes.
pub fn python_reads_snapshot(
    world: &TestContext,
    env: &str,
    repo_type: &str,
    repo: &str,
    sha: &str,
    files: &[MirrorFile],
) {
    let script = r#"
import hashlib, json, os, sys
from huggingface_hub import hf_hub_download, snapshot_download
repo_id, repo_type, sha = sys.argv[1], sys.argv[2], sys.argv[3]
paths = json.loads(sys.argv[4])
root = snapshot_download(repo_id, repo_type=repo_type, revision=sha, local_files_only=True)
out = {}
for path in paths:
    with open(os.path.join(root, path), "rb") as f:
        a = hashlib.sha256(f.read()).hexdigest()
    single = hf_hub_download(repo_id, path, repo_type=repo_type, revision=sha, local_files_only=True)
    with open(single, "rb") as f:
        b = hashlib.sha256(f.read()).hexdigest()
    out[path] = [a, b]
print(json.dumps(out))
"#;
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let out = crate::python(env, &world.server.endpoint, &world.cache)
        .env("HF_HUB_OFFLINE", "1")
        .args(["-c", script, repo, repo_type, sha])
        .arg(serde_json::to_string(&paths).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{env} could not load the snapshot:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: BTreeMap<String, [String; 2]> = serde_json::from_slice(&out.stdout).unwrap();
    for file in files {
        let want = hex(&sha256(&file.content));
        assert_eq!(
            seen[&file.path],
            [want.clone(), want],
            "{env}: {}",
            file.path
        );
    }
}

/// Asserts the cache invariants: every file named like a blob under a
/// `blobs/` folder hashes to its name (sha256 for 64 hex characters, git blob
/// sha1 for 40), and every snapshot link resolves to such a blob. Partial
/// `.incomplete` files are allowed (they are not blobs).
pub fn assert_cache_verified(cache: &Path) {
    if !cache.exists() {
        return;
    }
    for entry in walkdir::WalkDir::new(cache) {
        let entry = entry.unwrap();
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let parent = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        if parent.as_deref() == Some("blobs") && entry.file_type().is_file() {
            if name.ends_with(".incomplete") {
                continue;
            }
            let content = fs_err::read(path).unwrap();
            let actual = match name.len() {
                64 => hex(&sha256(&content)),
                40 => hex(&git_blob_sha1(&content)),
                _ => panic!("unexpected file in blobs/: {}", path.display()),
            };
            assert_eq!(actual, name, "{} does not hash to its name", path.display());
        }
        let in_snapshots = path.components().any(|c| c.as_os_str() == "snapshots");
        if in_snapshots && entry.path_is_symlink() {
            let target = fs_err::canonicalize(path)
                .unwrap_or_else(|e| panic!("{} points at a missing blob: {e}", path.display()));
            assert!(target.is_file(), "{}", path.display());
            assert_eq!(
                target.parent().and_then(|p| p.file_name()).unwrap(),
                "blobs",
                "{} does not point into blobs/",
                path.display()
            );
        }
    }
}
