//! Differential matrix: every fixture project under `fixtures/projects`
//! against every reference `kernels` release that accepts its requirement
//! forms, all against one `kernels serve` of the bundled mirror.
//!
//! | reference | requirement forms | repo type |
//! |---|---|---|
//! | 0.10.5 (huggingface_hub 0.35.3) | PEP 440 strings | model |
//! | 0.12.3 (huggingface_hub 0.35.3) | strings and integers | model |
//! | 0.13.0 (huggingface_hub 1.33.0) | strings and integers | model |
//! | 0.16.2 (huggingface_hub 2.4.0) | integers | kernel |
//! | 0.17.2 (huggingface_hub 2.4.0) | integers | kernel |
//!
//! For each (project, reference) pair the test asserts:
//!
//! 1. **lock**: `kernels lock --target-runtime <version>` writes exactly the
//!    bytes the reference's `kernels lock` writes.
//! 2. **reference loads our download**: after our `kernels download` (torch
//!    detected through the reference's interpreter with the stub torch of
//!    `tests/python/stub_torch`), the reference's `load_kernel(repo_id,
//!    lockfile=…)` runs with `HF_HUB_OFFLINE=1` on our cache. Pure-Python
//!    kernels import completely. Compiled kernels of the mirror carry
//!    synthetic `.so` files, so their import ends in an `ImportError` whose
//!    `path` is that `.so`; the test accepts exactly that error and asserts the
//!    `.so` lies in the variant directory our download chose, in our cache
//!    (which proves the reference resolved the lock, the cache folder and the
//!    same variant). Loading writes nothing into the cache. kernels 0.13.0
//!    cannot load offline from any cache (it lists variants through the Hub
//!    API, upstream issue #553), so its load runs online against the server.
//! 3. **reference download on our cache**: the reference's `kernels download`
//!    exits 0 and leaves every file of our cache as it was (no new file, same
//!    inode, size and modification time under `blobs/`, `snapshots/` and
//!    `refs/`; huggingface_hub's metadata caches `.locks/`, `.no_exist/` and
//!    `trees/` aside).
//! 4. **we accept the reference's cache**: after the reference's `kernels
//!    download` into a fresh cache, our `kernels download` with
//!    `HF_HUB_OFFLINE=1` exits 0 without opening a connection (the endpoint is
//!    a listener that must stay silent) and without touching a file.
//!
//! The stub torch is set, per project and reference, to an environment for
//! which every locked kernel has a variant; where the reference resolves
//! variants (0.13+), a CUDA version one minor above a built one is preferred
//! so that the CUDA minor fallback is exercised.
//!
//! Projects whose `[tool.kernels.dependencies]` are identical share the
//! reference runs (the reference's output only depends on that table and the
//! server); our commands still run for every project. A summary line
//! `N passed, M failed` is printed per reference version.

use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernels::lock::profile::{Profile, ProfileSource, RuntimeVersion};
use kernels::variant::{TorchEnv, VariantSelection};
use kernels_types::repo_id::RepoId;
use kernels_types::variant_name::{Backend, BuildVariant, CxxAbi, Framework, Os};
use serde_json::Value;

use kernels_test_support::{self as common, Server};

/// A reference release in the matrix.
struct Reference {
    version: &'static str,
    /// Accepts PEP 440 specifier strings.
    strings: bool,
    /// Accepts integer versions.
    ints: bool,
    /// Sends an invalid user agent (trailing `; `) when telemetry is disabled,
    /// which httpx refuses; run it with telemetry left on (the requests go to
    /// the local server only).
    telemetry_bug: bool,
    /// `load_kernel` lists variants through the Hub API even with
    /// `HF_HUB_OFFLINE=1` (0.13.0; upstream issue #553, fixed in 0.14), so it
    /// cannot load offline from any cache: its load runs online against the
    /// same server (files still come from our cache only).
    lists_online: bool,
}

const REFERENCES: &[Reference] = &[
    Reference {
        version: "0.10.5",
        strings: true,
        ints: false,
        telemetry_bug: false,
        lists_online: false,
    },
    Reference {
        version: "0.12.3",
        strings: true,
        ints: true,
        telemetry_bug: false,
        lists_online: false,
    },
    Reference {
        version: "0.13.0",
        strings: true,
        ints: true,
        telemetry_bug: true,
        lists_online: true,
    },
    Reference {
        version: "0.16.2",
        strings: false,
        ints: true,
        telemetry_bug: true,
        lists_online: false,
    },
    Reference {
        version: "0.17.2",
        strings: false,
        ints: true,
        telemetry_bug: true,
        lists_online: false,
    },
];

impl Reference {
    fn env_name(&self) -> String {
        format!("kernels-{}", self.version)
    }

    fn profile(&self) -> Profile {
        Profile::for_runtime(
            RuntimeVersion::parse(self.version).expect("reference version"),
            ProfileSource::Option,
        )
    }

    /// The reference's `kernels` CLI with `args`, against `endpoint`, using
    /// `cache` as the Hub cache.
    fn cli(&self, endpoint: &str, cache: &Path, args: &[&OsArg]) -> Command {
        let mut cmd = common::python(&self.env_name(), endpoint, cache);
        if self.telemetry_bug {
            cmd.env_remove("HF_HUB_DISABLE_TELEMETRY");
        }
        cmd.args([
            "-c",
            "import sys\nfrom kernels.cli import main\nsys.argv[0] = 'kernels'\nsys.exit(main())",
        ]);
        for arg in args {
            cmd.arg(arg);
        }
        cmd
    }
}

type OsArg = std::ffi::OsStr;

/// One fixture project.
struct Project {
    name: String,
    dir: PathBuf,
    /// `[tool.kernels.dependencies]` as canonical text (the sharing key).
    deps_key: String,
    strings: bool,
    ints: bool,
}

fn projects() -> Vec<Project> {
    let root = common::repo_root().join("fixtures/projects");
    let mut out = Vec::new();
    for entry in fs_err::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let text = fs_err::read_to_string(dir.join("pyproject.toml")).unwrap();
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let deps = doc["tool"]["kernels"]["dependencies"]
            .as_table()
            .unwrap()
            .clone();
        let strings = deps.values().any(toml::Value::is_str);
        let ints = deps.values().any(toml::Value::is_integer);
        out.push(Project {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            dir,
            deps_key: toml::to_string(&deps).unwrap(),
            strings,
            ints,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn applies(reference: &Reference, project: &Project) -> bool {
    (!project.strings || reference.strings) && (!project.ints || reference.ints)
}

/// A fresh project directory holding only the fixture's `pyproject.toml`.
fn copy_project(project: &Project, into: &Path) -> PathBuf {
    fs_err::create_dir_all(into).unwrap();
    fs_err::copy(
        project.dir.join("pyproject.toml"),
        into.join("pyproject.toml"),
    )
    .unwrap();
    into.to_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        tail(&String::from_utf8_lossy(&out.stderr), 30)
    )
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    all[start..].join("\n") + "\n"
}

fn run(mut cmd: Command, what: &str) -> Result<Output, String> {
    let out = cmd
        .output()
        .map_err(|err| format!("{what}: cannot start: {err}"))?;
    if out.status.success() {
        Ok(out)
    } else {
        Err(format!("{what} failed: {}", describe(&out)))
    }
}

/// Every file and symlink of the cached repositories' `blobs/`, `snapshots/`
/// and `refs/`, with what a rewrite would change: (inode, size, mtime in ns,
/// link target). huggingface_hub's own metadata caches (`.locks/`,
/// `.no_exist/` negative entries and the `trees/` listings of hub 2.x) are
/// not kernel content and are left out.
type Listing = BTreeMap<PathBuf, (u64, u64, i128, Option<PathBuf>)>;

fn listing(cache: &Path) -> Listing {
    let mut out = Listing::new();
    if !cache.exists() {
        return out;
    }
    for entry in walkdir::WalkDir::new(cache).into_iter().filter_entry(|e| {
        e.depth() != 2
            || matches!(
                &*e.file_name().to_string_lossy(),
                "blobs" | "snapshots" | "refs"
            )
    }) {
        let entry = entry.unwrap();
        if entry.file_type().is_dir() || entry.depth() < 3 {
            continue;
        }
        let meta = fs_err::symlink_metadata(entry.path()).unwrap();
        let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        let target = meta
            .file_type()
            .is_symlink()
            .then(|| fs_err::read_link(entry.path()).unwrap());
        out.insert(
            entry.path().strip_prefix(cache).unwrap().to_owned(),
            (meta.ino(), meta.len(), mtime, target),
        );
    }
    out
}

fn compare_listings(before: &Listing, after: &Listing) -> Result<(), String> {
    let mut problems = Vec::new();
    for (path, meta) in after {
        match before.get(path) {
            None => problems.push(format!("added {}", path.display())),
            Some(old) if old != meta => problems.push(format!("rewrote {}", path.display())),
            Some(_) => {}
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        problems.push(format!("removed {}", path.display()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        problems.truncate(10);
        Err(problems.join(", "))
    }
}

/// The locked kernels: (repo id, commit, variant names when the lock lists them).
fn locked(lock: &str) -> Vec<(String, String, Option<BTreeSet<String>>)> {
    let value: Value = serde_json::from_str(lock).unwrap();
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            if let Some(dep) = entry.get("dependency") {
                (
                    dep["repo-id"].as_str().unwrap().to_owned(),
                    entry["lock"]["commit"].as_str().unwrap().to_owned(),
                    None,
                )
            } else {
                (
                    entry["repo_id"].as_str().unwrap().to_owned(),
                    entry["sha"].as_str().unwrap().to_owned(),
                    Some(
                        entry["variants"]
                            .as_object()
                            .unwrap()
                            .keys()
                            .cloned()
                            .collect(),
                    ),
                )
            }
        })
        .collect()
}

/// The directories under `build/` of `repo` at `commit`, from the server.
fn listed_variants(endpoint: &str, repo_type: &str, repo: &str, commit: &str) -> BTreeSet<String> {
    let url = format!("{endpoint}/api/{repo_type}s/{repo}/tree/{commit}/build");
    let text = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let resp = reqwest::get(&url).await.unwrap();
            assert!(resp.status().is_success(), "{url}: {}", resp.status());
            resp.text().await.unwrap()
        });
    let items: Vec<Value> = serde_json::from_str(&text).unwrap();
    items
        .iter()
        .filter(|i| i["type"] == "directory")
        .map(|i| {
            i["path"]
                .as_str()
                .unwrap()
                .trim_start_matches("build/")
                .to_owned()
        })
        .collect()
}

/// A stub-torch environment: the `STUB_TORCH_*` variables and the same
/// environment as [`TorchEnv`].
#[derive(Debug, Clone)]
struct StubEnv {
    vars: Vec<(&'static str, String)>,
    env: TorchEnv,
}

fn host_machine() -> String {
    let out = Command::new("uname").arg("-m").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Candidate environments from the Linux Torch arch variants of this host's
/// CPU (newest Torch first; with `bump`, CUDA one minor above the build's
/// first), then CUDA 12.6 with Torch 2.7 for noarch-only kernels.
fn candidates(variants: &BTreeSet<String>, bump: bool) -> Vec<StubEnv> {
    let machine = host_machine();
    let mut arch: Vec<_> = variants
        .iter()
        .filter_map(|n| BuildVariant::parse(n).arch().copied())
        .filter(|a| a.os == Os::Linux && a.cpu.as_str() == machine && a.cxx_abi.is_some())
        .filter_map(|a| match a.framework {
            Framework::Torch(v) => Some((v, a.cxx_abi, a.backend)),
            _ => None,
        })
        .collect();
    arch.sort_by_key(|a| std::cmp::Reverse(a.0));
    let make = |torch: (u32, u32), cxx11: bool, backend: &Backend, cuda_minor_bump: u32| {
        let mut vars = vec![
            ("STUB_TORCH_VERSION", format!("{}.{}.0", torch.0, torch.1)),
            ("STUB_TORCH_CXX11", if cxx11 { "1" } else { "0" }.to_owned()),
        ];
        let (mut cuda, mut hip, mut xpu) = (None, None, None);
        match backend {
            Backend::Cuda(v) => {
                cuda = Some(format!("{}.{}", v.major, v.minor + cuda_minor_bump));
            }
            Backend::Rocm(v) => hip = Some(format!("{}.{}.40000-0000", v.major, v.minor)),
            Backend::Xpu(Some(v)) => xpu = Some(format!("{}0{}01", v.major, v.minor)),
            Backend::Cpu => {}
            _ => return None,
        }
        for (name, value) in [
            ("STUB_TORCH_CUDA", &cuda),
            ("STUB_TORCH_HIP", &hip),
            ("STUB_TORCH_XPU", &xpu),
        ] {
            if let Some(value) = value {
                vars.push((name, value.clone()));
            }
        }
        Some(StubEnv {
            vars,
            env: TorchEnv {
                major: torch.0,
                minor: torch.1,
                cuda,
                hip,
                xpu,
                mps: false,
                neuron: false,
                cxx11_abi: cxx11,
                tvm_ffi: None,
                system: "Linux".to_owned(),
                machine: machine.clone(),
                mac_version: None,
                rocm: None,
                accelerator: None,
                tpu_backend: false,
                no_torch: false,
                cann: None,
                mlx: false,
                python: None,
            },
        })
    };
    let mut out = Vec::new();
    for (version, abi, backend) in &arch {
        let torch = (version.major, version.minor);
        let cxx11 = *abi == Some(CxxAbi::Cxx11);
        if bump && matches!(backend, Backend::Cuda(_)) {
            out.extend(make(torch, cxx11, backend, 1));
        }
        out.extend(make(torch, cxx11, backend, 0));
    }
    out.extend(make(
        (2, 7),
        true,
        &Backend::Cuda(kernels_types::variant_name::MinorVersion::new(12, 6)),
        0,
    ));
    out
}

/// Picks the first candidate under which our selection finds a variant for
/// every kernel, and returns it with the chosen variants per repo (one with a
/// resolver; with exact names every candidate the kernel has, the first being
/// the one the runtime loads).
fn pick_env(
    kernels: &[(String, String, BTreeSet<String>)],
    reference: &Reference,
) -> Result<(StubEnv, BTreeMap<String, Vec<String>>), String> {
    let preference = reference.profile().variant_preference;
    let bump = !preference.is_exact();
    let all: BTreeSet<String> = kernels.iter().flat_map(|k| k.2.iter().cloned()).collect();
    for candidate in candidates(&all, bump) {
        let selection = VariantSelection::Detected {
            env: Box::new(candidate.env.clone()),
            rules: preference.into(),
        };
        let chosen: Option<BTreeMap<String, Vec<String>>> = kernels
            .iter()
            .map(|(repo, commit, variants)| {
                let id: RepoId = repo.parse().ok()?;
                let pick = selection
                    .choose(&id, &commit.parse().ok()?, variants)
                    .ok()?;
                (!pick.is_empty()).then(|| (repo.clone(), pick))
            })
            .collect();
        if let Some(chosen) = chosen {
            return Ok((candidate, chosen));
        }
    }
    Err("no stub torch environment suits every locked kernel".to_owned())
}

/// Result of one (project, reference) pair.
struct CaseResult {
    version: &'static str,
    project: String,
    error: Option<String>,
}

struct Ctx<'a> {
    server: &'a Server,
    scratch: PathBuf,
    stub: PathBuf,
}

impl Ctx<'_> {
    fn ours(&self, cache: &Path) -> Command {
        common::kernels(&self.server.endpoint, cache)
    }
}

/// Runs the reference-side work for one group of projects with identical
/// dependencies, then the per-project checks.
fn run_group(
    ctx: &Ctx<'_>,
    reference: &Reference,
    group: &[&Project],
    slot: usize,
) -> Vec<CaseResult> {
    let base = ctx.scratch.join(format!("{}-{slot}", reference.version));
    let result = |project: &Project, error: Option<String>| CaseResult {
        version: reference.version,
        project: project.name.clone(),
        error,
    };
    // 1. The reference's lock (one run per group).
    let ref_dir = copy_project(group[0], &base.join("ref-lock"));
    let ref_lock = run(
        reference.cli(
            &ctx.server.endpoint,
            &base.join("ref-lock-cache"),
            &[OsArg::new("lock"), ref_dir.as_os_str()],
        ),
        "reference `kernels lock`",
    )
    .and_then(|_| fs_err::read_to_string(ref_dir.join("kernels.lock")).map_err(|e| e.to_string()));
    let ref_lock = match ref_lock {
        Ok(text) => text,
        Err(err) => return group.iter().map(|p| result(p, Some(err.clone()))).collect(),
    };

    // Our lock, per project.
    let mut lock_errors = Vec::new();
    for (i, project) in group.iter().enumerate() {
        let dir = copy_project(project, &base.join(format!("ours-{i}")));
        let mut cmd = ctx.ours(&base.join("our-lock-cache"));
        cmd.args(["lock", "--target-runtime", reference.version])
            .arg(&dir);
        let ours = run(cmd, "our `kernels lock`").and_then(|_| {
            fs_err::read_to_string(dir.join("kernels.lock")).map_err(|e| e.to_string())
        });
        lock_errors.push(match ours {
            Ok(text) if text == ref_lock => None,
            Ok(text) => Some(format!(
                "lock differs from the reference's:\n--- ours\n{}\n--- reference\n{}",
                tail(&text, 40),
                tail(&ref_lock, 40)
            )),
            Err(err) => Some(err),
        });
    }

    // 2–4. Downloads, shared by the group (the lock is the reference's).
    let download = download_checks(ctx, reference, &base, &ref_dir, &ref_lock);
    group
        .iter()
        .zip(lock_errors)
        .map(|(project, lock_error)| {
            let errors: Vec<String> = lock_error
                .into_iter()
                .chain(download.clone().err())
                .collect();
            result(project, (!errors.is_empty()).then(|| errors.join("\n")))
        })
        .collect()
}

fn download_checks(
    ctx: &Ctx<'_>,
    reference: &Reference,
    base: &Path,
    project_dir: &Path,
    lock: &str,
) -> Result<(), String> {
    let profile = reference.profile();
    let repo_type = profile.repo_type.as_str();
    let prefix = profile.cache_prefix();
    let kernels: Vec<(String, String, BTreeSet<String>)> = locked(lock)
        .into_iter()
        .map(|(repo, commit, variants)| {
            let variants = variants.unwrap_or_else(|| {
                listed_variants(&ctx.server.endpoint, repo_type, &repo, &commit)
            });
            (repo, commit, variants)
        })
        .collect();
    let (stub, chosen) = pick_env(&kernels, reference)?;
    let pyref = common::pyref_root().join(reference.env_name());
    let with_stub = |cmd: &mut Command| {
        cmd.env("PYTHONPATH", &ctx.stub);
        for (k, v) in &stub.vars {
            cmd.env(k, v);
        }
    };
    let lock_path = project_dir.join("kernels.lock");
    let context = |what: &str, err: String| format!("{what} (stub torch {:?}): {err}", stub.vars);

    // Our download (torch detected through the reference's interpreter).
    let our_cache = base.join("our-cache");
    let mut cmd = ctx.ours(&our_cache);
    cmd.args(["download", "--target-runtime", reference.version])
        .arg(project_dir)
        .env("VIRTUAL_ENV", &pyref);
    with_stub(&mut cmd);
    let out = run(cmd, "our `kernels download`").map_err(|e| context("download", e))?;
    // The environment line names the stub's torch exactly (the rest of the
    // transcript differs per project and reference: no snapshot here).
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("Environment: {}", stub.env.describe());
    let reported: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("Environment: "))
        .collect();
    if reported != [expected.as_str()] {
        return Err(format!(
            "our download did not report the environment as `{expected}`:\n{stderr}"
        ));
    }
    for (repo, commit, _) in &kernels {
        let build = our_cache
            .join(format!("{prefix}{}", repo.replace('/', "--")))
            .join("snapshots")
            .join(commit)
            .join("build");
        let got: BTreeSet<String> = fs_err::read_dir(&build)
            .map_err(|e| e.to_string())?
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let expected: BTreeSet<String> = chosen[repo].iter().cloned().collect();
        if got != expected {
            return Err(context(
                "our variant choice",
                format!("{repo}: downloaded {got:?}, the matrix expected {expected:?}"),
            ));
        }
    }

    // 2. The reference loads every kernel offline from our cache.
    let before = listing(&our_cache);
    let mut cmd = common::python(&reference.env_name(), &ctx.server.endpoint, &our_cache);
    if !reference.lists_online {
        cmd.env("HF_HUB_OFFLINE", "1");
    }
    if reference.telemetry_bug {
        cmd.env_remove("HF_HUB_DISABLE_TELEMETRY");
    }
    cmd.arg(common::repo_root().join("tests/python/load_locked.py"))
        .arg(&lock_path)
        .args(kernels.iter().map(|k| &k.0));
    with_stub(&mut cmd);
    let out = run(cmd, "reference `load_kernel`").map_err(|e| context("load", e))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (repo, commit, _) in &kernels {
        let line = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["repo"] == repo.as_str())
            .ok_or_else(|| format!("no load result for {repo}:\n{stdout}"))?;
        let variant_dir = our_cache
            .join(format!("{prefix}{}", repo.replace('/', "--")))
            .join("snapshots")
            .join(commit)
            .join("build")
            .join(&chosen[repo][0]);
        let path = line["file"]
            .as_str()
            .or(line["synthetic_so"].as_str())
            .ok_or_else(|| format!("{repo}: reference load failed: {line}"))?;
        if !Path::new(path).starts_with(&variant_dir) {
            return Err(format!(
                "{repo}: the reference loaded {path}, not from {}",
                variant_dir.display()
            ));
        }
    }
    compare_listings(&before, &listing(&our_cache))
        .map_err(|e| format!("reference load changed our cache: {e}"))?;

    // 3. The reference's download on our cache adds and changes nothing.
    let mut cmd = reference.cli(
        &ctx.server.endpoint,
        &our_cache,
        &[OsArg::new("download"), project_dir.as_os_str()],
    );
    with_stub(&mut cmd);
    run(cmd, "reference `kernels download` on our cache").map_err(|e| context("ref", e))?;
    compare_listings(&before, &listing(&our_cache))
        .map_err(|e| format!("reference download on our cache: {e}"))?;

    // 4. The reference's fresh cache is accepted offline, untouched.
    let ref_cache = base.join("ref-cache");
    let mut cmd = reference.cli(
        &ctx.server.endpoint,
        &ref_cache,
        &[OsArg::new("download"), project_dir.as_os_str()],
    );
    with_stub(&mut cmd);
    run(cmd, "reference `kernels download`").map_err(|e| context("ref", e))?;
    let before = listing(&ref_cache);
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    let dead_endpoint = format!("http://{}", silent.local_addr().unwrap());
    let mut cmd = common::kernels(&dead_endpoint, &ref_cache);
    cmd.args(["download", "--target-runtime", reference.version])
        .arg(project_dir)
        .env("HF_HUB_OFFLINE", "1")
        .env("VIRTUAL_ENV", &pyref);
    with_stub(&mut cmd);
    run(
        cmd,
        "our offline `kernels download` on the reference's cache",
    )
    .map_err(|e| context("offline", e))?;
    if silent.accept().is_ok() {
        return Err("our offline download opened a connection".to_owned());
    }
    compare_listings(&before, &listing(&ref_cache))
        .map_err(|e| format!("our offline download on the reference's cache: {e}"))
}

#[test]
fn differential_matrix_against_reference_releases() {
    for reference in REFERENCES {
        common::pyref_python(&reference.env_name());
    }
    let server = Server::bundled();
    let scratch = tempfile::tempdir().unwrap();
    let ctx = Ctx {
        server: &server,
        scratch: scratch.path().to_owned(),
        stub: common::repo_root().join("tests/python/stub_torch"),
    };
    let projects = projects();
    // Jobs: (reference, projects with identical dependencies).
    let mut jobs: Vec<(&Reference, Vec<&Project>)> = Vec::new();
    for reference in REFERENCES {
        let mut groups: BTreeMap<&str, Vec<&Project>> = BTreeMap::new();
        for project in projects.iter().filter(|p| applies(reference, p)) {
            groups.entry(&project.deps_key).or_default().push(project);
        }
        jobs.extend(groups.into_values().map(|g| (reference, g)));
    }
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((reference, group)) = jobs.get(i) else {
                        break;
                    };
                    let out = run_group(&ctx, reference, group, i);
                    results.lock().unwrap().extend(out);
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut failed_total = 0;
    for reference in REFERENCES {
        let mine: Vec<&CaseResult> = results
            .iter()
            .filter(|r| r.version == reference.version)
            .collect();
        let failed: Vec<&&CaseResult> = mine.iter().filter(|r| r.error.is_some()).collect();
        for case in &failed {
            eprintln!(
                "FAIL kernels {} / {}: {}",
                case.version,
                case.project,
                case.error.as_deref().unwrap_or_default()
            );
        }
        eprintln!(
            "kernels {}: {} passed, {} failed",
            reference.version,
            mine.len() - failed.len(),
            failed.len()
        );
        failed_total += failed.len();
    }
    assert_eq!(failed_total, 0, "differential matrix failures (see above)");
}

/// Every build-variant name of the bundled mirror plus a few kinds it lacks.
fn all_variant_names() -> Vec<String> {
    let mut names: BTreeSet<String> = [
        "tvm-ffi01-cu128-x86_64-linux",
        "tvm-ffi01-cu126-x86_64-linux",
        "torch210-cu126-x86_64-linux",
        "torch29-cu128-x86_64-linux",
        "torch-stable-abi29-cu126-x86_64-linux",
        "torch-stable-abi210-cu128-x86_64-linux",
        "torch-stable-abi210-cu130-aarch64-linux",
        "torch-npu",
    ]
    .map(String::from)
    .into();
    for entry in walkdir::WalkDir::new(common::mirror_dir().join("repos")) {
        let entry = entry.unwrap();
        let parent = entry.path().parent().and_then(|p| p.file_name());
        if entry.file_type().is_dir() && parent.is_some_and(|p| p == "build") {
            names.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.into_iter().collect()
}

/// Our resolver ranks like the reference resolvers (0.13.0 and 0.16.2/0.17.2)
/// for a grid of environments over every variant name of the mirror: the same
/// accepted variants in the same order (names handed over sorted, so both
/// sides break ties alike).
#[test]
fn resolver_ranks_like_the_reference_resolvers() {
    use kernels::lock::profile::VariantPreference;
    let names = all_variant_names();
    let parsed: Vec<BuildVariant> = names.iter().map(|n| BuildVariant::parse(n)).collect();
    let mut envs: Vec<(TorchEnv, Value)> = Vec::new();
    let backends: &[(&str, Option<&str>)] = &[
        ("cuda", Some("11.8")),
        ("cuda", Some("12.6")),
        ("cuda", Some("12.9")),
        ("cuda", Some("13.0")),
        ("rocm", Some("6.3")),
        ("rocm", Some("7.1")),
        ("xpu", Some("2025.3")),
        ("cpu", None),
    ];
    for (system, machine) in [("Linux", "x86_64"), ("Linux", "aarch64")] {
        for torch in [(2, 7), (2, 8), (2, 9), (2, 10), (2, 13)] {
            for (backend, version) in backends {
                for cxx11 in [true, false] {
                    for tvm in [None, Some("0.1")] {
                        let env = TorchEnv {
                            major: torch.0,
                            minor: torch.1,
                            cuda: (*backend == "cuda").then(|| version.unwrap().to_owned()),
                            hip: (*backend == "rocm").then(|| version.unwrap().to_owned()),
                            xpu: (*backend == "xpu").then(|| "20250301".to_owned()),
                            mps: false,
                            neuron: false,
                            cxx11_abi: cxx11,
                            tvm_ffi: tvm.map(str::to_owned),
                            system: system.to_owned(),
                            machine: machine.to_owned(),
                            mac_version: None,
                            rocm: None,
                            accelerator: None,
                            tpu_backend: false,
                            no_torch: false,
                            cann: None,
                            mlx: false,
                            python: None,
                        };
                        let case = serde_json::json!({
                            "names": names, "backend": [backend, version], "cpu": machine,
                            "os": "linux", "torch": format!("{}.{}", torch.0, torch.1),
                            "cxx11": cxx11, "tvm": tvm,
                        });
                        envs.push((env, case));
                    }
                }
            }
        }
    }
    for (backend, mps, mac) in [
        ("metal", true, "15.5"),
        ("metal", true, "26.0"),
        ("cpu", false, "15.5"),
    ] {
        let env = TorchEnv {
            major: 2,
            minor: 10,
            cuda: None,
            hip: None,
            xpu: None,
            mps,
            neuron: false,
            cxx11_abi: true,
            tvm_ffi: None,
            system: "Darwin".to_owned(),
            machine: "arm64".to_owned(),
            mac_version: Some(mac.to_owned()),
            rocm: None,
            accelerator: None,
            tpu_backend: false,
            no_torch: false,
            cann: None,
            mlx: false,
            python: None,
        };
        let case = serde_json::json!({
            "names": names, "backend": [backend, null], "cpu": "aarch64", "os": "darwin",
            "torch": "2.10", "cxx11": null, "tvm": null, "macos": mac,
        });
        envs.push((env, case));
    }
    let windows = TorchEnv {
        major: 2,
        minor: 10,
        cuda: Some("12.9".to_owned()),
        hip: None,
        xpu: None,
        mps: false,
        neuron: false,
        cxx11_abi: true,
        tvm_ffi: None,
        system: "Windows".to_owned(),
        machine: "AMD64".to_owned(),
        mac_version: None,
        rocm: None,
        accelerator: None,
        tpu_backend: false,
        no_torch: false,
        cann: None,
        mlx: false,
        python: None,
    };
    let case = serde_json::json!({
        "names": names, "backend": ["cuda", "12.9"], "cpu": "x86_64", "os": "windows",
        "torch": "2.10", "cxx11": null, "tvm": null,
    });
    envs.push((windows, case));

    let cases: Vec<&Value> = envs.iter().map(|(_, c)| c).collect();
    let input = serde_json::to_vec(&cases).unwrap();
    for (version, preference) in [
        ("0.13.0", VariantPreference::Resolver),
        ("0.16.2", VariantPreference::ResolverStableAbi),
        ("0.17.2", VariantPreference::ResolverMetalMacos26),
    ] {
        let mut child = Command::new(common::pyref_python(&format!("kernels-{version}")))
            .arg(common::repo_root().join("tests/python/resolve_variants.py"))
            .env(
                "PYTHONPATH",
                common::repo_root().join("tests/python/stub_torch"),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&input).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kernels {version}: {}",
            describe(&out)
        );
        let lines: Vec<Vec<String>> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), envs.len());
        for ((env, case), reference) in envs.iter().zip(lines) {
            let ours: Vec<String> = env
                .resolve(&parsed, preference)
                .iter()
                .map(|v| v.name().to_owned())
                .collect();
            let mut case = case.clone();
            case["names"] = Value::Null;
            assert_eq!(ours, reference, "kernels {version}, {case}");
        }
    }
}

/// One stubbed platform of [`platform_rules_like_the_reference`]: the
/// `STUB_TORCH_*` / `STUB_PLATFORM_*` variables, the `build/` directories of
/// a kernel, and the reference versions to compare on.
struct PlatformCase {
    what: &'static str,
    env: &'static [(&'static str, &'static str)],
    names: &'static [&'static str],
}

const PLATFORM_CASES: &[PlatformCase] = &[
    PlatformCase {
        what: "Metal on macOS 15, arch and universal",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Darwin"),
            ("STUB_PLATFORM_MACHINE", "arm64"),
            ("STUB_PLATFORM_MAC_VER", "15.5"),
            ("STUB_TORCH_VERSION", "2.9.0"),
            ("STUB_TORCH_MPS", "1"),
        ],
        names: &["torch29-metal-aarch64-darwin", "torch-universal"],
    },
    PlatformCase {
        what: "Metal on macOS 15, arch, noarch and universal",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Darwin"),
            ("STUB_PLATFORM_MACHINE", "arm64"),
            ("STUB_PLATFORM_MAC_VER", "15.5"),
            ("STUB_TORCH_VERSION", "2.9.0"),
            ("STUB_TORCH_MPS", "1"),
        ],
        names: &[
            "torch29-metal-aarch64-darwin",
            "torch-metal",
            "torch-universal",
        ],
    },
    PlatformCase {
        what: "Metal on macOS 26",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Darwin"),
            ("STUB_PLATFORM_MACHINE", "arm64"),
            ("STUB_PLATFORM_MAC_VER", "26.0"),
            ("STUB_TORCH_VERSION", "2.9.0"),
            ("STUB_TORCH_MPS", "1"),
        ],
        names: &["torch29-metal-aarch64-darwin", "torch-universal"],
    },
    PlatformCase {
        what: "Windows AMD64, CUDA, both arch spellings",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Windows"),
            ("STUB_PLATFORM_MACHINE", "AMD64"),
            ("STUB_TORCH_CUDA", "12.8"),
        ],
        names: &[
            "torch27-cxx11-cu128-AMD64-windows",
            "torch27-cu128-x86_64-windows",
            "torch-cuda",
            "torch-universal",
        ],
    },
    PlatformCase {
        what: "Windows AMD64, CUDA, builder names only",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Windows"),
            ("STUB_PLATFORM_MACHINE", "AMD64"),
            ("STUB_TORCH_CUDA", "12.8"),
        ],
        names: &["torch27-cu128-x86_64-windows", "torch-universal"],
    },
    PlatformCase {
        what: "Linux CUDA, every candidate present",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Linux"),
            ("STUB_PLATFORM_MACHINE", "x86_64"),
            ("STUB_TORCH_CUDA", "12.6"),
        ],
        names: &[
            "torch27-cxx11-cu126-x86_64-linux",
            "torch-cuda",
            "torch-cpu",
            "torch-universal",
        ],
    },
    PlatformCase {
        what: "Linux CPU-only torch",
        env: &[
            ("STUB_PLATFORM_SYSTEM", "Linux"),
            ("STUB_PLATFORM_MACHINE", "x86_64"),
        ],
        names: &[
            "torch27-cxx11-cpu-x86_64-linux",
            "torch-cpu",
            "torch-universal",
        ],
    },
];

/// The variant rules that depend on the platform (0.17's Metal rule below
/// macOS 26, the Windows names of runtimes before 0.11, the download of every
/// existing candidate of runtimes ≤0.12, CPU-only torch) against the
/// reference, with `platform.system()/machine()/mac_ver()` and torch stubbed
/// (`tests/python/stub_torch`): our detection (through the stubs) and
/// selection fetch exactly what the reference's `build_variants()` /
/// `resolve_variants()` fetch, and fail where it fails. One reference process
/// per release handles every case.
#[test]
fn platform_rules_like_the_reference() {
    let stub = common::repo_root().join("tests/python/stub_torch");
    let scratch = tempfile::tempdir().unwrap();
    let id: RepoId = "acme/relu".parse().unwrap();
    let input: Vec<Value> = PLATFORM_CASES
        .iter()
        .map(|c| {
            let env: serde_json::Map<String, Value> = c
                .env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
                .collect();
            serde_json::json!({"env": env, "names": c.names})
        })
        .collect();
    let input = serde_json::to_vec(&input).unwrap();
    for version in ["0.10.5", "0.11.3", "0.12.3", "0.16.2", "0.17.2"] {
        let python = common::pyref_python(&format!("kernels-{version}"));
        let mut child = Command::new(&python)
            .arg(common::repo_root().join("tests/python/select_variants.py"))
            .env("PYTHONPATH", &stub)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&input).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "kernels {version}: {}",
            describe(&out)
        );
        let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), PLATFORM_CASES.len(), "kernels {version}");
        let preference = Profile::for_runtime(
            RuntimeVersion::parse(version).unwrap(),
            ProfileSource::Option,
        )
        .variant_preference;
        for (i, (case, reference)) in PLATFORM_CASES.iter().zip(lines).enumerate() {
            // Our detection runs through the same stubs (a wrapper that sets
            // the variables and runs the reference's interpreter).
            let wrapper = scratch.path().join(format!("python-{i}"));
            let mut script = format!(
                "#!/bin/sh\nexport PYTHONPATH='{}'\nunset STUB_PLATFORM_MAC_VER\n",
                stub.display()
            );
            for (k, v) in case.env {
                script.push_str(&format!("export {k}='{v}'\n"));
            }
            script.push_str(&format!("exec '{}' \"$@\"\n", python.display()));
            fs_err::write(&wrapper, script).unwrap();
            fs_err::set_permissions(
                &wrapper,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .unwrap();
            let env = TorchEnv::detect(&wrapper).unwrap();
            let available: BTreeSet<String> = case.names.iter().map(|n| (*n).to_owned()).collect();
            let selection = VariantSelection::Detected {
                env: Box::new(env),
                rules: preference.into(),
            };
            let ours = selection.select(&id, &"c".repeat(40).parse().unwrap(), &available);
            let context = format!("kernels {version}, {}", case.what);
            match (&ours, reference.get("fetch")) {
                (Ok(choice), Some(fetch)) => {
                    let fetch: Vec<String> = serde_json::from_value(fetch.clone()).unwrap();
                    assert_eq!(choice.variants, fetch, "{context}");
                }
                (Err(err), Some(fetch)) => {
                    assert_eq!(
                        fetch,
                        &Value::Array(Vec::new()),
                        "{context}: we fail: {err}"
                    );
                }
                (Err(err), None) => {
                    assert!(
                        matches!(
                            err,
                            kernels::variant::VariantError::NoVariantForCpuTorch { .. }
                        ),
                        "{context}: {err} vs {reference}"
                    );
                }
                (Ok(choice), None) => {
                    panic!(
                        "{context}: we fetch {:?}, the reference fails: {reference}",
                        choice.variants
                    )
                }
            }
        }
    }
}
