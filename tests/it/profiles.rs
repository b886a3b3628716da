//! Target profiles: which runtime `kernels lock` and `kernels download` write
//! for, chosen from `--target-runtime`, `[tool.kernels] target-runtime`, the
//! existing lock, or the `kernels` installed in the project's Python
//! environment; the 0.17 profile's transitive dependencies, cycles and trust;
//! and the `kernel` → `model` repository fallback. All against the bundled
//! mirror.

use std::path::Path;
use std::process::{Command, Output};

use kernels::lock::format::{LockFormat, Lockfile};

use kernels_test_support::{self as common, Server, snapshot};

/// A fake Python environment at `prefix` with `kernels` `version` installed
/// (only its `dist-info/METADATA`).
fn fake_env(prefix: &Path, version: &str) {
    let dist = prefix.join(format!(
        "lib/python3.12/site-packages/kernels-{version}.dist-info"
    ));
    fs_err::create_dir_all(&dist).unwrap();
    fs_err::write(
        dist.join("METADATA"),
        format!("Metadata-Version: 2.4\nName: kernels\nVersion: {version}\n\nA description.\n"),
    )
    .unwrap();
}

fn project_with(pyproject: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("pyproject.toml"), pyproject).unwrap();
    dir
}

/// `kernels <sub>` with `PATH` limited to an empty directory, so that no
/// `python3` of the host is found.
fn kernels(server: &Server, cache: &Path, sub: &str, dir: &Path, extra: &[&str]) -> Output {
    let empty_path = cache.join("empty-path");
    fs_err::create_dir_all(&empty_path).unwrap();
    command(server, cache, &empty_path)
        .arg(sub)
        .args(extra)
        .arg(dir)
        .output()
        .unwrap()
}

fn command(server: &Server, cache: &Path, path: &Path) -> Command {
    let mut cmd = common::kernels(&server.endpoint, cache);
    // `-v`: the `Target runtime: …` line is printed only then.
    cmd.env("PATH", path).arg("-v");
    cmd
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_ok(output: &Output) -> String {
    let text = stderr(output);
    assert!(output.status.success(), "{text}");
    text
}

/// Asserts exit 1 and snapshots the transcript as `name`.
fn assert_fails(name: &str, output: &Output) {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    snapshot!(name, output);
}

fn target_line(text: &str) -> &str {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("Target runtime:"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    lines[0]
}

fn lock_format(dir: &Path) -> LockFormat {
    Lockfile::read(&dir.join("kernels.lock")).unwrap().format()
}

const VERSIONS: &str = "[tool.kernels.dependencies]\n\"kernels-test/versions\" = 2\n";

/// A new integer-only project with no runtime anywhere (no lock, no
/// `target-runtime`, no `python3` on `PATH`): the first lock is written for
/// the newest runtime modelled, said once, and 0.19.1 loads the kernel
/// through that lock from our cache, offline.
#[test]
fn first_lock_without_a_runtime_is_read_by_0_19_1() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path();
    let dir = project_with(VERSIONS);
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.19.1 (no kernels.lock and no runtime named or installed: the newest runtime modelled) — KernelLocks lock, kernel repos, kernels-- cache"
    );
    assert_eq!(lock_format(dir.path()), LockFormat::KernelLocks);
    assert_ok(&kernels(
        &server,
        cache,
        "download",
        dir.path(),
        &["--all-variants"],
    ));
    let output = common::python("kernels-0.19.1", &server.endpoint, cache)
        .env("HF_HUB_OFFLINE", "1")
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .arg(common::repo_root().join("tests/python/load_locked.py"))
        .arg(dir.path().join("kernels.lock"))
        .arg("kernels-test/versions")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("\"repo\": \"kernels-test/versions\""),
        "0.19.1 did not load through the first lock: {stdout}\n{}",
        stderr(&output)
    );
    // The loaded module is the locked commit's, from our cache.
    let locked = Lockfile::read(&dir.path().join("kernels.lock")).unwrap();
    let commit = locked
        .locked_kernels(&dir.path().join("kernels.lock"))
        .unwrap()
        .into_iter()
        .find(|k| k.repo_id.as_str() == "kernels-test/versions")
        .unwrap()
        .commit;
    let snapshot = cache
        .join("kernels--kernels-test--versions/snapshots")
        .join(commit.as_str());
    assert!(
        stdout.contains(&*snapshot.to_string_lossy()),
        "not loaded from {}: {stdout}",
        snapshot.display()
    );

    // With a specifier string, the newest runtime that reads it: 0.13.0.
    let strings =
        project_with("[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.1\"\n");
    let text = assert_ok(&kernels(&server, cache, "lock", strings.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.13.0 (no kernels.lock and no runtime named or installed: the newest runtime modelled that reads the specifier strings in pyproject.toml) — variant-hash lock, model repos, models-- cache"
    );
    assert_eq!(lock_format(strings.path()), LockFormat::VariantHash);
}

/// A new project with a specifier string and no runtime anywhere: the first
/// lock is for 0.13.0 (variant-hash, `model` repos), and every later command,
/// still without a runtime, keeps that choice instead of falling back to the
/// default profile (`kernels--` cache, where 0.13 does not look): `download`
/// fills the `models--` folder, and 0.13.0 loads the kernel from it (its
/// `load_kernel` lists the variants on the Hub, then reads the files from the
/// cache only).
#[test]
fn string_project_keeps_its_first_lock_runtime_in_later_commands() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path();
    let dir = project_with("[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.1\"\n");
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert!(target_line(&text).starts_with("Target runtime: kernels 0.13.0 (no kernels.lock"));
    let later = "Target runtime: kernels 0.13.0 (the existing kernels.lock is in the variant-hash format and pyproject.toml has specifier strings: the newest runtime modelled that reads both) — variant-hash lock, model repos, models-- cache";
    for (sub, extra) in [
        ("download", &["--all-variants"][..]),
        ("verify", &["--all-variants"][..]),
        ("lock", &[][..]),
    ] {
        let text = assert_ok(&kernels(&server, cache, sub, dir.path(), extra));
        assert_eq!(target_line(&text), later, "kernels {sub} {extra:?}");
        assert!(!text.contains("does not say which runtime"), "{text}");
    }
    // `lock --check` prints no profile line; offline, it reads the locked
    // versions from the cache folder of the same profile.
    let text = assert_ok(&kernels(
        &server,
        cache,
        "lock",
        dir.path(),
        &["--check", "--offline"],
    ));
    assert!(!text.contains("cannot be checked offline"), "{text}");
    let env = kernels(
        &server,
        cache,
        "env",
        dir.path(),
        &["--cpu", "--torch-version", "2.8", "--project"],
    );
    let stdout = String::from_utf8_lossy(&env.stdout);
    let (_, row) = later.split_once(": ").unwrap();
    assert!(
        env.status.success() && stdout.contains(&format!("Target runtime  {row}")),
        "{stdout}"
    );
    assert_eq!(lock_format(dir.path()), LockFormat::VariantHash);
    assert!(cache.join("models--kernels-test--versions").is_dir());
    assert!(!cache.join("kernels--kernels-test--versions").exists());
    let output = common::python("kernels-0.13.0", &server.endpoint, cache)
        // With telemetry off, huggingface_hub 1.x ends 0.13.0's user agent
        // with "; ", which httpx refuses as a header value.
        .env_remove("HF_HUB_DISABLE_TELEMETRY")
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .arg(common::repo_root().join("tests/python/load_locked.py"))
        .arg(dir.path().join("kernels.lock"))
        .arg("kernels-test/versions")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let snapshots = cache.join("models--kernels-test--versions/snapshots");
    assert!(
        output.status.success() && stdout.contains(&*snapshots.to_string_lossy()),
        "0.13.0 did not load from {}: {stdout}\n{}",
        snapshots.display(),
        stderr(&output)
    );
}

#[test]
fn profile_is_chosen_by_each_source() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let cache = cache.path();

    // Nothing names a runtime: the first lock is for the newest one modelled.
    let dir = project_with(VERSIONS);
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.19.1 (no kernels.lock and no runtime named or installed: the newest runtime modelled) — KernelLocks lock, kernel repos, kernels-- cache"
    );
    // Rewritten as a variant-hash lock, which names no runtime.
    let text = assert_ok(&kernels(
        &server,
        cache,
        "lock",
        dir.path(),
        &["--target-runtime", "0.16.2"],
    ));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.16.2 (from --target-runtime) — variant-hash lock, kernel repos, kernels-- cache"
    );
    assert_eq!(lock_format(dir.path()), LockFormat::VariantHash);

    // The existing lock (now variant-hash) is refined by an installed runtime writing that format.
    fake_env(&dir.path().join(".venv"), "0.16.2");
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.16.2 (format of the existing kernels.lock, installed in .venv) — variant-hash lock, kernel repos, kernels-- cache"
    );

    // An installed 0.17 does not override an existing variant-hash lock: it
    // cannot read it, which fails `kernels lock` as it fails every gate
    // (tests/it/gates.rs), naming `kernels lock --target-runtime 0.17.2` ...
    let other = tempfile::tempdir().unwrap();
    fake_env(other.path(), "0.17.2");
    let output = command(&server, cache, &cache.join("empty-path"))
        .env("VIRTUAL_ENV", other.path())
        .arg("lock")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_fails("venv_0_17_keeps_variant_hash_lock", &output);
    // ... but is used when there is no lock (VIRTUAL_ENV before .venv).
    fs_err::remove_file(dir.path().join("kernels.lock")).unwrap();
    let output = command(&server, cache, &cache.join("empty-path"))
        .env("VIRTUAL_ENV", other.path())
        .arg("lock")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = assert_ok(&output);
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.17.2 (installed in VIRTUAL_ENV) — KernelLocks lock, kernel repos, kernels-- cache"
    );
    assert_eq!(lock_format(dir.path()), LockFormat::KernelLocks);

    // The KernelLocks lock alone means the newest runtime modelled that reads it.
    fs_err::remove_dir_all(dir.path().join(".venv")).unwrap();
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.19.1 (the existing kernels.lock is in the KernelLocks format) — KernelLocks lock, kernel repos, kernels-- cache"
    );

    // `[tool.kernels] target-runtime` beats the lock; `--target-runtime` beats both.
    fs_err::write(
        dir.path().join("pyproject.toml"),
        format!("[tool.kernels]\ntarget-runtime = \"0.13.0\"\n\n{VERSIONS}"),
    )
    .unwrap();
    let text = assert_ok(&kernels(&server, cache, "lock", dir.path(), &[]));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.13.0 (from `target-runtime` in [tool.kernels] of pyproject.toml) — variant-hash lock, model repos, models-- cache"
    );
    assert_eq!(lock_format(dir.path()), LockFormat::VariantHash);
    let text = assert_ok(&kernels(
        &server,
        cache,
        "lock",
        dir.path(),
        &["--target-runtime", "0.16.2", "--repo-type", "model"],
    ));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.16.2 (from --target-runtime) — variant-hash lock, model repos (--repo-type), models-- cache"
    );

    // `python3` on PATH inside a virtual environment (no Python is started).
    let dir = project_with(VERSIONS);
    let env = tempfile::tempdir().unwrap();
    fake_env(env.path(), "0.10.5");
    fs_err::create_dir_all(env.path().join("bin")).unwrap();
    fs_err::write(env.path().join("bin/python3"), "not a python").unwrap();
    fs_err::write(env.path().join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let output = command(&server, cache, &env.path().join("bin"))
        .arg("lock")
        .arg(dir.path())
        .output()
        .unwrap();
    let text = assert_ok(&output);
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.10.5 (installed in python3 on PATH) — variant-hash lock, model repos, models-- cache"
    );

    // Invalid versions are user errors.
    assert_fails(
        "target_runtime_not_a_version",
        &kernels(
            &server,
            cache,
            "lock",
            dir.path(),
            &["--target-runtime", "latest"],
        ),
    );
    fs_err::write(
        dir.path().join("pyproject.toml"),
        format!("[tool.kernels]\ntarget-runtime = 17\n\n{VERSIONS}"),
    )
    .unwrap();
    assert_fails(
        "target_runtime_integer",
        &kernels(&server, cache, "lock", dir.path(), &[]),
    );
}

/// `.venv` with kernels 0.17.2: a `KernelLocks` lock with the transitive
/// `kernels-community/einops`, byte-identical to the real lock of the project.
#[test]
fn venv_with_0_17_gets_kernel_locks_with_transitive_dependencies() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let project =
        common::repo_root().join("fixtures/projects/kernels-tests-kernel_locking-97dab31e");
    let dir = project_with(&fs_err::read_to_string(project.join("pyproject.toml")).unwrap());
    fake_env(&dir.path().join(".venv"), "0.17.2");
    let output = kernels(&server, cache.path(), "lock", dir.path(), &[]);
    let text = assert_ok(&output);
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.17.2 (installed in .venv) — KernelLocks lock, kernel repos, kernels-- cache"
    );
    // With "kernels-community/einops v1 (0bd0077), required by
    // kernels-test/kernel-deps version 1".
    snapshot!("venv_0_17_transitive_lock", output);
    assert_eq!(
        fs_err::read(dir.path().join("kernels.lock")).unwrap(),
        fs_err::read(project.join("kernels.lock.real")).unwrap()
    );

    // `download` follows the same profile: every lock entry, `kernels--` cache.
    fs_err::write(
        dir.path().join("pyproject.toml"),
        "[tool.kernels.dependencies]\n\"kernels-test/kernel-deps\" = 1\n",
    )
    .unwrap();
    assert_ok(&kernels(&server, cache.path(), "lock", dir.path(), &[]));
    // `-v` logs each file as its download ends (in no fixed order): the
    // `Target runtime:` line is checked exactly instead of a snapshot.
    let text = assert_ok(&kernels(
        &server,
        cache.path(),
        "download",
        dir.path(),
        &["--variant", "torch-cpu"],
    ));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.17.2 (format of the existing kernels.lock, installed in .venv) — KernelLocks lock, kernel repos, kernels-- cache"
    );
    assert!(
        cache
            .path()
            .join("kernels--kernels-community--einops/snapshots/0bd00775195dda6f84c16c31f6d94564232d08b3/build/torch-cpu")
            .is_dir()
    );
}

/// `.venv` with kernels 0.10.5: a variant-hash lock and a `models--` cache.
#[test]
fn venv_with_0_10_5_gets_variant_hash_and_models_cache() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let dir = project_with("[tool.kernels.dependencies]\n\"kernels-test/kernel-deps\" = 1\n");
    fake_env(&dir.path().join(".venv"), "0.10.5");
    let output = kernels(&server, cache.path(), "lock", dir.path(), &[]);
    let text = assert_ok(&output);
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.10.5 (installed in .venv) — variant-hash lock, model repos, models-- cache"
    );
    // With "integer version, which the `kernels lock` of kernels 0.10.5 cannot read".
    snapshot!("venv_0_10_5_lock", output);
    let lock = Lockfile::read(&dir.path().join("kernels.lock")).unwrap();
    assert_eq!(lock.format(), LockFormat::VariantHash);
    let kernels_locked = lock.locked_kernels(Path::new("kernels.lock")).unwrap();
    // No transitive entries before 0.17.
    assert_eq!(kernels_locked.len(), 1);

    let text = assert_ok(&kernels(
        &server,
        cache.path(),
        "download",
        dir.path(),
        &["--variant", "torch-cpu"],
    ));
    assert_eq!(
        target_line(&text),
        "Target runtime: kernels 0.10.5 (format of the existing kernels.lock, installed in .venv) — variant-hash lock, model repos, models-- cache"
    );
    assert!(
        cache
            .path()
            .join("models--kernels-test--kernel-deps/snapshots/b1c7a501401316a27653d46107b98259ee79d888/build/torch-cpu")
            .is_dir()
    );
    assert!(
        !cache
            .path()
            .join("kernels--kernels-test--kernel-deps")
            .exists()
    );
}

#[test]
fn cycles_missing_metadata_and_empty_tables_fail_under_0_17() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let t = ["--target-runtime", "0.17.2"];
    let dir = project_with("[tool.kernels.dependencies]\n\"kernels-test/cycle-a\" = 1\n");
    // The cycle a → b → a, with versions.
    assert_fails(
        "cyclic_dependency",
        &kernels(&server, cache.path(), "lock", dir.path(), &t),
    );
    assert!(!dir.path().join("kernels.lock").exists());
    // Before 0.17 dependencies are not followed.
    assert_ok(&kernels(
        &server,
        cache.path(),
        "lock",
        dir.path(),
        &["--target-runtime", "0.16.2"],
    ));

    // The stray `build/torch-ext` source directory has no metadata.json.
    let dir = project_with(
        "[tool.kernels.dependencies]\n\"kernels-community/relu\" = { revision = \"8c883dab2ee1e812d6bf996ab30cb43e0dcf63ed\" }\n",
    );
    assert_fails(
        "missing_metadata",
        &kernels(&server, cache.path(), "lock", dir.path(), &t),
    );

    let dir = project_with("[tool.kernels.dependencies]\n");
    assert_fails(
        "no_kernels_to_lock",
        &kernels(&server, cache.path(), "lock", dir.path(), &t),
    );
    assert!(!dir.path().join("kernels.lock").exists());

    let dir = project_with("[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=0.1\"\n");
    assert_fails(
        "specifier_under_0_17",
        &kernels(&server, cache.path(), "lock", dir.path(), &t),
    );
}

#[test]
fn untrusted_publishers_need_an_explicit_trust() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let t = ["--target-runtime", "0.17.2"];
    let deps = "[tool.kernels.dependencies]\n\"untrusted-publisher/identity\" = 1\n";
    let dir = project_with(deps);
    // Names the `--trust` flag that allows it.
    assert_fails(
        "untrusted_publisher",
        &kernels(&server, cache.path(), "lock", dir.path(), &t),
    );
    assert_ok(&kernels(
        &server,
        cache.path(),
        "lock",
        dir.path(),
        &[
            "--target-runtime",
            "0.17.2",
            "--trust",
            "untrusted-publisher/identity",
        ],
    ));
    let dir = project_with(&format!(
        "[tool.kernels]\ntrust = [\"untrusted-publisher/identity\"]\n\n{deps}"
    ));
    assert_ok(&kernels(&server, cache.path(), "lock", dir.path(), &t));
    // Runtimes before 0.17 do not check trust when locking.
    let dir = project_with(deps);
    assert_ok(&kernels(
        &server,
        cache.path(),
        "lock",
        dir.path(),
        &["--target-runtime", "0.16.2"],
    ));
}

#[test]
fn model_only_repositories_are_named_and_fall_back_on_request() {
    let server = Server::bundled();
    let cache = tempfile::tempdir().unwrap();
    let dir = project_with("[tool.kernels.dependencies]\n\"kernels-test/model-only\" = 1\n");
    for runtime in ["0.17.2", "0.16.2"] {
        // Names the model repository and `--allow-model-repos`.
        assert_fails(
            &format!("model_only_repository_{}", runtime.replace('.', "_")),
            &kernels(
                &server,
                cache.path(),
                "lock",
                dir.path(),
                &["--target-runtime", runtime],
            ),
        );
    }
    let output = kernels(
        &server,
        cache.path(),
        "lock",
        dir.path(),
        &["--target-runtime", "0.17.2", "--allow-model-repos"],
    );
    assert_ok(&output);
    // "locked from the model API".
    snapshot!("model_repo_fallback_lock", output);
    assert_eq!(lock_format(dir.path()), LockFormat::KernelLocks);
    // A runtime that uses model repositories needs no fallback.
    assert_ok(&kernels(
        &server,
        cache.path(),
        "lock",
        dir.path(),
        &["--target-runtime", "0.13.0"],
    ));
}

#[test]
fn download_warns_when_the_named_runtime_cannot_read_the_lock() {
    let world = common::TestContext::world();
    world.lock_b(&[("acme/gelu", common::GELU_SHA)]);
    let run = |runtime: &str| {
        common::kernels(&world.server.endpoint, &world.cache)
            .args(["download", "--all-variants", "--target-runtime", runtime])
            .arg(&world.project)
            .output()
            .unwrap()
    };
    // A KernelLocks lock for a runtime that reads variant-hash locks only.
    let out = run("0.16.2");
    common::assert_ok(&out);
    // "which kernels 0.16.2 cannot read", naming `kernels lock --target-runtime 0.16.2`.
    snapshot!("download_runtime_cannot_read_lock", out);
    // The runtime the lock was written for: no warning.
    let out = run("0.17.2");
    common::assert_ok(&out);
    snapshot!("download_runtime_reads_lock", out);
}
