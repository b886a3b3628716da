//! The target runtime the project's interpreter reports (issue 21, item 1):
//! when neither an option, `[tool.kernels]` nor the files of the project's
//! environment name a runtime, `kernels` asks the `python3` on `PATH` once
//! (`importlib.metadata`). That sees the layouts the file lookup cannot:
//! `pip install --target` directories on `PYTHONPATH`, `pip install --user`
//! (`PYTHONUSERBASE`), a prefix reached through a launcher (conda's
//! `condabin`, a Docker wrapper) and Debian's `dist-packages`. A lock the
//! runtime found cannot read fails `download` and `verify`.
//!
//! The interpreter is the base Python of the pinned reference environments
//! (no virtual environment, no `kernels`); the runtimes are fake
//! `kernels-0.17.2.dist-info/METADATA` folders, except in the last test, which
//! puts the real reference 0.17.2 on `PYTHONPATH` and loads what we wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels::lock::format::{LockFormat, Lockfile};
use kernels_test_support::{self as common, TestContext, snapshot};

const VERSIONS: &str = "[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n";

/// `python3.11` in paths → `python3.X`: the layouts name the interpreter's version.
const PY_FILTER: &[(&str, &str)] = &[(r"python3\.\d+", "python3.X")];

/// The base interpreter of the reference environments: a plain CPython.
/// Fails (never skips) when the references are not set up, or when that
/// Python has a `kernels` of its own.
fn plain_python() -> PathBuf {
    let python = fs_err::canonicalize(common::pyref_python("kernels-0.17.2")).unwrap();
    let out = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m\ntry:\n m.distribution('kernels'); print(False)\nexcept m.PackageNotFoundError:\n print(True)",
        ])
        .env_remove("PYTHONPATH")
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "True",
        "{} must not have a `kernels` package of its own",
        python.display()
    );
    python
}

/// `major.minor` of `python`, as in `lib/python3.11`.
fn python_version(python: &Path) -> String {
    let out = Command::new(python)
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A fake `kernels` `version` distribution in the site directory `site`.
fn fake_kernels(site: &Path, version: &str) {
    let dist = site.join(format!("kernels-{version}.dist-info"));
    fs_err::create_dir_all(&dist).unwrap();
    fs_err::write(
        dist.join("METADATA"),
        format!("Metadata-Version: 2.4\nName: kernels\nVersion: {version}\n\n"),
    )
    .unwrap();
}

/// `<tmp>/bin` holding `python3`: a link to `python`.
fn bin_with_link(ctx: &TestContext, python: &Path) -> PathBuf {
    let bin = ctx.tmp.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(python, bin.join("python3")).unwrap();
    bin
}

/// `<tmp>/bin` holding `python3`: a shell launcher that records its scope
/// argument (`runtime` or `torch`) in `<tmp>/runs` and runs `python`.
fn bin_with_launcher(ctx: &TestContext, python: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = ctx.tmp.path().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let launcher = bin.join("python3");
    fs_err::write(
        &launcher,
        format!(
            "#!/bin/sh\necho \"$3\" >> '{}'\nexec '{}' \"$@\"\n",
            ctx.tmp.path().join("runs").display(),
            python.display()
        ),
    )
    .unwrap();
    fs_err::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn stub_torch() -> PathBuf {
    common::repo_root().join("tests/python/stub_torch")
}

/// A context locking [`VERSIONS`] with `bin` as the whole `PATH` and the stub
/// torch on `PYTHONPATH` after `pythonpath` (`-v`: the target line is printed).
fn context_with(ctx: TestContext, bin: &Path, pythonpath: Option<&Path>) -> TestContext {
    let mut paths: Vec<PathBuf> = pythonpath.into_iter().map(Path::to_owned).collect();
    paths.push(stub_torch());
    let joined = std::env::join_paths(paths).unwrap();
    ctx.with_pyproject(VERSIONS)
        .with_env("PATH", bin)
        .with_env("PYTHONPATH", joined)
        .with_env("PYTHONDONTWRITEBYTECODE", "1")
}

fn lock_format(ctx: &TestContext) -> LockFormat {
    Lockfile::read(&ctx.project.join("kernels.lock"))
        .unwrap()
        .format()
}

/// `kernels lock` writes a `KernelLocks` lock for the runtime the interpreter
/// reports, and `kernels download` goes on with it.
fn locks_and_downloads_for_0_17(ctx: &TestContext, name: &str) -> Output {
    let lock = ctx.run(&["lock"]);
    assert_eq!(lock_format(ctx), LockFormat::KernelLocks, "{lock:?}");
    let download = ctx.run(&["download"]);
    common::assert_ok(&download);
    snapshot!(format!("{name}_download"), download, PY_FILTER);
    assert!(
        ctx.cache
            .join("kernels--kernels-test--versions/snapshots")
            .is_dir()
    );
    lock
}

#[test]
fn target_directory_on_pythonpath() {
    let ctx = TestContext::new();
    let target = ctx.tmp.path().join("deps");
    fake_kernels(&target, "0.17.2");
    let bin = bin_with_link(&ctx, &plain_python());
    let ctx = context_with(ctx, &bin, Some(&target));
    let lock = locks_and_downloads_for_0_17(&ctx, "target");
    // "installed in python3 (importlib.metadata, [TMP]/deps)".
    snapshot!("target_lock", lock, PY_FILTER);
}

#[test]
fn user_site_packages() {
    let ctx = TestContext::new();
    let python = plain_python();
    let base = ctx.tmp.path().join("userbase");
    let site = base.join(format!(
        "lib/python{}/site-packages",
        python_version(&python)
    ));
    fake_kernels(&site, "0.17.2");
    let bin = bin_with_link(&ctx, &python);
    let ctx = context_with(ctx, &bin, None).with_env("PYTHONUSERBASE", &base);
    let lock = locks_and_downloads_for_0_17(&ctx, "user");
    // "installed in python3 (importlib.metadata, [TMP]/userbase/lib/python3.X/site-packages)".
    snapshot!("user_lock", lock, PY_FILTER);
}

/// A Python prefix of its own (made with `venv`, marked as a conda
/// environment) that `PATH` reaches through a launcher, as conda's `condabin`
/// and Docker wrappers do: the prefix is not next to the `python3` on `PATH`.
#[test]
fn conda_like_prefix_behind_a_launcher() {
    let ctx = TestContext::new();
    let python = plain_python();
    let prefix = ctx.tmp.path().join("opt/conda");
    let made = Command::new(&python)
        .args(["-m", "venv", "--without-pip"])
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(made.success());
    fs_err::create_dir_all(prefix.join("conda-meta")).unwrap();
    let site = prefix.join(format!(
        "lib/python{}/site-packages",
        python_version(&python)
    ));
    fake_kernels(&site, "0.17.2");
    let bin = bin_with_launcher(&ctx, &prefix.join("bin/python"));
    let ctx = context_with(ctx, &bin, None);
    let lock = locks_and_downloads_for_0_17(&ctx, "conda");
    // "installed in python3 (importlib.metadata, [TMP]/opt/conda/lib/python3.X/site-packages)".
    snapshot!("conda_lock", lock, PY_FILTER);
}

/// Debian's Python reads `<prefix>/local/lib/python3.X/dist-packages` (where
/// `pip install` puts packages outside a virtual environment); this one is
/// reached through a launcher. Needs Debian's `/usr/bin/python3`.
#[test]
fn debian_dist_packages() {
    let ctx = TestContext::new();
    let debian = Path::new("/usr/bin/python3");
    let prefix = ctx.tmp.path().join("debian");
    let made = Command::new(debian)
        .args(["-m", "venv", "--without-pip"])
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(made.success(), "Debian's /usr/bin/python3 -m venv failed");
    let python = prefix.join("bin/python");
    let dist = prefix.join(format!(
        "local/lib/python{}/dist-packages",
        python_version(&python)
    ));
    let sites = Command::new(&python)
        .args(["-c", "import site; print(site.getsitepackages())"])
        .output()
        .unwrap();
    // A precondition on this machine's Python, not on our output.
    assert!(
        String::from_utf8_lossy(&sites.stdout).contains(&dist.display().to_string()),
        "{} is not a Debian Python with dist-packages: {}",
        debian.display(),
        String::from_utf8_lossy(&sites.stdout)
    );
    fake_kernels(&dist, "0.17.2");
    let bin = bin_with_launcher(&ctx, &python);
    let ctx = context_with(ctx, &bin, None);
    let lock = locks_and_downloads_for_0_17(&ctx, "dist_packages");
    // "installed in python3 (importlib.metadata, [TMP]/debian/local/lib/python3.X/dist-packages)".
    snapshot!("dist_packages_lock", lock, PY_FILTER);
}

/// `lock` asks only for the runtime (no `import torch`); `download`, `env`
/// and `verify` ask runtime and torch in one start of the interpreter.
#[test]
fn the_interpreter_is_started_once_per_command() {
    let ctx = TestContext::new();
    let target = ctx.tmp.path().join("deps");
    fake_kernels(&target, "0.17.2");
    let bin = bin_with_launcher(&ctx, &plain_python());
    let ctx = context_with(ctx, &bin, Some(&target));
    let runs = ctx.tmp.path().join("runs");
    // Without the stored probes of earlier commands (the next test has them).
    let receipts = ctx.cache.join(".locks/kernels-probes");
    let mut seen = Vec::new();
    for args in [
        &["lock"][..],
        &["download"],
        &["env"],
        &["verify"],
        &["download", "--all-variants"],
    ] {
        let _ = fs_err::remove_dir_all(&receipts);
        common::assert_ok(&ctx.run(args));
        seen.push(format!(
            "{}: {}",
            args.join(" "),
            fs_err::read_to_string(&runs)
                .unwrap()
                .trim()
                .replace('\n', ", ")
        ));
        fs_err::remove_file(&runs).unwrap();
    }
    assert_eq!(
        seen,
        [
            "lock: runtime",
            "download: torch",
            "env: torch",
            "verify: torch",
            "download --all-variants: runtime"
        ]
    );
    // An option names the runtime: only torch is asked.
    let _ = fs_err::remove_dir_all(&receipts);
    common::assert_ok(&ctx.run(&["download", "--target-runtime", "0.17.2"]));
    assert_eq!(fs_err::read_to_string(&runs).unwrap(), "torch\n");
    fs_err::remove_file(&runs).unwrap();
    common::assert_ok(&ctx.run(&["lock", "--target-runtime", "0.17.2"]));
    assert!(!runs.exists(), "lock with --target-runtime started Python");
}

/// What the interpreter launcher recorded since the last call (its scope
/// arguments, comma-separated; empty when it was not started), then cleared.
fn take_runs(ctx: &TestContext) -> String {
    let runs = ctx.tmp.path().join("runs");
    let seen = fs_err::read_to_string(&runs)
        .unwrap_or_default()
        .trim()
        .replace('\n', ", ");
    let _ = fs_err::remove_file(&runs);
    seen
}

/// The name of one variant `download` placed for `kernels-test/versions`.
fn downloaded_variant(ctx: &TestContext) -> String {
    let snapshots = ctx.cache.join("kernels--kernels-test--versions/snapshots");
    let commit = fs_err::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let build = fs_err::read_dir(commit.path().join("build")).unwrap();
    build
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .min()
        .unwrap()
}

/// Issue 46, item 3: nothing in `download --all-variants`, named variants or a
/// target given by flags needs the interpreter once the runtime is known, and
/// a warm run reuses the stored probe while the interpreter's fingerprint (its
/// path, the `sys.path` directories torch and `kernels` live in, the
/// environment) is unchanged. The `python3` on `PATH` is a launcher that
/// records every start.
#[test]
fn a_warm_download_starts_no_interpreter() {
    let ctx = TestContext::new();
    let target = ctx.tmp.path().join("deps");
    fake_kernels(&target, "0.17.2");
    let bin = bin_with_launcher(&ctx, &plain_python());
    let ctx = context_with(ctx, &bin, Some(&target));
    common::assert_ok(&ctx.run(&["lock"]));
    assert_eq!(take_runs(&ctx), "runtime");
    // Detecting torch needs the interpreter once; the runtime probe of `lock`
    // did not ask torch.
    common::assert_ok(&ctx.run(&["download"]));
    assert_eq!(take_runs(&ctx), "torch");
    let variant = downloaded_variant(&ctx);
    let mut seen = Vec::new();
    for args in [
        &["download"][..],
        &["download", "--all-variants"],
        &["verify"],
        &["download", "--variant", &variant],
    ] {
        common::assert_ok(&ctx.run(args));
        seen.push(format!(
            "{}: {}",
            args[..args.len().min(2)].join(" "),
            take_runs(&ctx)
        ));
    }
    assert_eq!(
        seen,
        [
            "download: ",
            "download --all-variants: ",
            "verify: ",
            "download --variant: "
        ]
    );
    // A target fully given by flags needs no interpreter, whatever is stored.
    let _ = fs_err::remove_dir_all(ctx.cache.join(".locks/kernels-probes"));
    let flags = ["download", "--target-runtime", "0.17.2", "--all-variants"];
    common::assert_ok(&ctx.run(&flags));
    assert_eq!(take_runs(&ctx), "");

    // Installing a package where the interpreter imports from changes the
    // fingerprint: the next run asks again, and stores the new answer.
    fake_kernels(&target, "0.17.3");
    fs_err::remove_dir_all(target.join("kernels-0.17.2.dist-info")).unwrap();
    common::assert_ok(&ctx.run(&["download"]));
    assert_eq!(take_runs(&ctx), "torch");
    common::assert_ok(&ctx.run(&["download", "--all-variants"]));
    assert_eq!(take_runs(&ctx), "");
    // Another environment is another interpreter context.
    let other = ctx.with_env("STUB_TORCH_VERSION", "2.9.0");
    common::assert_ok(&other.run(&["download", "--all-variants"]));
    assert_eq!(take_runs(&other), "runtime");
}

/// A variant-hash lock and kernels 0.17.2 found by the interpreter, or a
/// `KernelLocks` lock and 0.13.0 in `.venv`: `download` and `verify` fail
/// before anything is fetched, naming the runtime, where it is and the fix;
/// `lock` keeps the format with a warning; the fix works.
#[test]
fn a_lock_the_found_runtime_cannot_read_fails_download_and_verify() {
    let ctx = TestContext::new();
    let target = ctx.tmp.path().join("deps");
    fake_kernels(&target, "0.17.2");
    let bin = bin_with_link(&ctx, &plain_python());
    let ctx = context_with(ctx, &bin, Some(&target));
    common::assert_ok(&ctx.run(&["lock", "--target-runtime", "0.16.2"]));
    assert_eq!(lock_format(&ctx), LockFormat::VariantHash);
    let download = ctx.run(&["download"]);
    // "is in the variant-hash (kernels ≤0.16) format, which kernels 0.17.2
    // (installed in python3 (importlib.metadata, [TMP]/deps)) cannot read",
    // with `kernels lock --target-runtime 0.17.2`.
    snapshot!("unreadable_download", download);
    assert!(!ctx.cache.join("kernels--kernels-test--versions").exists());
    snapshot!("unreadable_verify", ctx.run(&["verify"]));
    // `lock` keeps the lock's format, so it fails the same way (one verdict
    // for every gate, tests/it/gates.rs).
    snapshot!("unreadable_lock", ctx.run(&["lock"]));
    // The fix.
    common::assert_ok(&ctx.run(&["lock", "--target-runtime", "0.17.2"]));
    common::assert_ok(&ctx.run(&["download"]));

    // The same rule for a runtime found by its files, the other way round.
    let old = TestContext::new().with_pyproject(VERSIONS);
    let dist = old.project.join(".venv/lib/python3.12/site-packages");
    fake_kernels(&dist, "0.13.0");
    common::assert_ok(&old.run(&["lock", "--target-runtime", "0.17.2"]));
    let verify = old.run(&["verify"]);
    // "is in the KernelLocks (kernels 0.17) format, which kernels 0.13.0
    // (installed in .venv) cannot read".
    snapshot!("unreadable_verify_venv", verify);
}

/// The site-packages of the reference 0.17.2 environment (its `kernels`
/// and dependencies).
fn reference_site_packages() -> PathBuf {
    let lib = common::pyref_root().join("kernels-0.17.2/lib");
    let python = fs_err::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("python3")
        })
        .unwrap_or_else(|| panic!("no python3* in {}", lib.display()));
    python.join("site-packages")
}

/// Issue 21's first "Verified by": the real reference 0.17.2 only on
/// `PYTHONPATH` of a plain `python3`; `kernels lock` (no option, no
/// `[tool.kernels]` key) writes a lock that its `load_kernel(lockfile=…)`,
/// `get_locked_kernel` and `get_kernel` read, offline, from our cache.
#[test]
fn reference_0_17_on_pythonpath_reads_the_lock() {
    let project = common::repo_root()
        .join("fixtures/projects")
        .join(crate::runtime_offline::PROJECT);
    let ctx = TestContext::new();
    let python = plain_python();
    let bin = bin_with_link(&ctx, &python);
    let site = reference_site_packages();
    let pythonpath = std::env::join_paths([site.clone(), stub_torch()]).unwrap();
    let ctx = ctx
        .with_pyproject(&fs_err::read_to_string(project.join("pyproject.toml")).unwrap())
        .with_env("PATH", &bin)
        .with_env("PYTHONPATH", &pythonpath)
        .with_env("PYTHONDONTWRITEBYTECODE", "1")
        .with_env("STUB_TORCH_VERSION", "2.10.0")
        .with_env("STUB_TORCH_CUDA", "12.8");
    let lock = ctx.run(&["lock"]);
    common::assert_ok(&lock);
    let site = site.display().to_string();
    // The other lines depend on this machine's interpreter: the runtime's is recorded.
    snapshot!(
        "site_runtime_line",
        common::stderr(&lock)
            .lines()
            .find(|l| l.starts_with("Target runtime:"))
            .unwrap_or_default()
            .replace(&site, "[SITE]")
    );
    assert_eq!(lock_format(&ctx), LockFormat::KernelLocks);
    common::assert_ok(&ctx.run(&["download"]));

    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    let mut load = Command::new(&python);
    load.env_clear()
        .env("PATH", &bin)
        .env("PYTHONPATH", &pythonpath)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("STUB_TORCH_VERSION", "2.10.0")
        .env("STUB_TORCH_CUDA", "12.8")
        .env(
            "HF_ENDPOINT",
            format!("http://{}", silent.local_addr().unwrap()),
        )
        .env("HF_HUB_CACHE", &ctx.cache)
        .env("HF_HOME", ctx.cache.join("hf-home"))
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_DISABLE_XET", "1")
        .env("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        .arg(common::repo_root().join("tests/python/load_offline.py"))
        .arg(ctx.project.join("kernels.lock"))
        .args(
            crate::runtime_offline::KERNELS
                .iter()
                .map(|(repo, v)| format!("{repo}={v}")),
        );
    let stdout = crate::runtime_offline::run_ok(&mut load, "reference 0.17.2 on PYTHONPATH");
    assert!(
        silent.accept().is_err(),
        "the offline load opened a connection"
    );
    crate::runtime_offline::assert_loaded_from_cache(
        &stdout,
        &ctx.cache,
        &["get_kernel", "get_locked_kernel", "load_kernel"],
        "0.17.2",
    );
}
