//! The cache outside a developer's laptop (issue 12): read-only caches, no
//! flock, no symlinks, dereferenced copies, long names, planted links, a small
//! disk, refs, and `kernels cache`. Each test runs the real binary against
//! `kernels serve`; the read-only and small-disk cases use a private mount
//! namespace (`unshare -m`, available to root here) with a read-only bind
//! mount or a tiny tmpfs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernels_test_support as common;
use kernels_test_support::{
    GELU_SHA, MirrorFile, RELU_SHA, TestContext, assert_ok, gelu_files, relu_files, snapshot,
    stderr,
};

fn repo_dir(world: &TestContext, repo: &str) -> PathBuf {
    world
        .cache
        .join(format!("kernels--{}", repo.replace('/', "--")))
}

/// Every path below `dir` with its kind, not following links; the stored
/// interpreter probes (`.locks/kernels-probes/`, keyed by each run's
/// environment) are left out.
fn listing(dir: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| !e.path().ends_with(".locks/kernels-probes"))
        .flatten()
        .map(|e| {
            let kind = if e.path_is_symlink() {
                "l"
            } else if e.file_type().is_dir() {
                "d"
            } else {
                "f"
            };
            format!("{kind} {}", e.path().display())
        })
        .collect()
}

fn kernels_cmd(world: &TestContext, args: &[&str]) -> Command {
    let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
    cmd.args(args);
    cmd
}

/// Runs `kernels ARGS` in a mount namespace where `world.cache` is a
/// read-only bind mount of itself.
fn read_only(world: &TestContext, args: &[&str]) -> Output {
    let inner = kernels_cmd(world, args);
    let mut cmd = Command::new("unshare");
    cmd.args([
        "-m",
        "sh",
        "-c",
        r#"mount --bind -o ro "$0" "$0" && exec "$@""#,
    ])
    .arg(&world.cache)
    .arg(inner.get_program())
    .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.output().unwrap()
}

#[test]
fn complete_read_only_cache_downloads_and_verifies_creating_nothing() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants"]));
    // Remove the lock files: a root-owned layer has none we could open.
    fs_err::remove_dir_all(world.cache.join(".locks")).unwrap();
    let before = listing(&world.cache);
    let p = world.project.display().to_string();
    for args in [
        vec!["download", &p, "--all-variants"],
        vec!["download", &p, "--all-variants", "--offline"],
        vec!["verify", &p, "--all-variants"],
    ] {
        let out = read_only(&world, &args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(before, listing(&world.cache), "something was created");

    // Incomplete: one error naming the directory and what is missing.
    let repo = repo_dir(&world, "acme/gelu");
    let victim = walkdir::WalkDir::new(repo.join("snapshots"))
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .find(|e| e.path_is_symlink())
        .unwrap()
        .into_path();
    fs_err::remove_file(&victim).unwrap();
    let out = read_only(&world, &["download", &p, "--all-variants"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // "is not writable", the cache folder and the missing file.
    snapshot!("read_only_incomplete", out);
}

#[test]
fn without_flock_one_warning_and_atomic_writes() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let out = world.download_with(
        &["--all-variants"],
        &[("KERNELS_TEST_ASSUME_NO_FLOCK", "1")],
    );
    assert_ok(&out);
    // One "file locking is not supported" warning.
    snapshot!("without_flock_download", out);
    let blobs = repo_dir(&world, "acme/gelu").join("blobs");
    for entry in fs_err::read_dir(&blobs).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".incomplete"), "partial file left: {name}");
    }
    assert_ok(
        &kernels_cmd(
            &world,
            &[
                "verify",
                &world.project.display().to_string(),
                "--all-variants",
            ],
        )
        .output()
        .unwrap(),
    );
}

#[test]
fn without_symlinks_files_are_copies_like_huggingface_hub() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    let out = world.download_with(&["--all-variants"], &[("HF_HUB_DISABLE_SYMLINKS", "1")]);
    // Asked for explicitly: no warning (huggingface_hub warns only when a probe fails).
    assert_ok(&out);
    let snap = repo_dir(&world, "acme/relu")
        .join("snapshots")
        .join(RELU_SHA);
    let files: Vec<_> = walkdir::WalkDir::new(&snap)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .collect();
    assert!(!files.is_empty());
    assert!(files.iter().all(|e| !e.path_is_symlink()), "links created");
    // New blobs were moved into the snapshot, as huggingface_hub does.
    let blobs = repo_dir(&world, "acme/relu").join("blobs");
    assert_eq!(fs_err::read_dir(&blobs).map(|d| d.count()).unwrap_or(0), 0);
    let out = kernels_cmd(
        &world,
        &[
            "verify",
            &world.project.display().to_string(),
            "--all-variants",
        ],
    )
    .output()
    .unwrap();
    assert_ok(&out);
    snapshot!("without_links_verify", out);
    // A second online run repairs nothing: copies stay copies.
    let before = listing(&world.cache);
    assert_ok(&world.download(&["--all-variants"]));
    assert_eq!(before, listing(&world.cache));
}

#[test]
fn dereferenced_copies_are_accepted_and_left_alone() {
    for tool in ["cp", "tar"] {
        let world = TestContext::world();
        world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
        assert_ok(&world.download(&["--all-variants"]));
        let copy = world.tmp.path().join(format!("copy-{tool}"));
        let status = if tool == "cp" {
            Command::new("cp")
                .arg("-rL")
                .arg(&world.cache)
                .arg(&copy)
                .status()
        } else {
            fs_err::create_dir_all(&copy).unwrap();
            Command::new("sh")
                .arg("-c")
                .arg(r#"tar -C "$0" -hcf - . | tar -C "$1" -xf -"#)
                .arg(&world.cache)
                .arg(&copy)
                .status()
        };
        assert!(status.unwrap().success());
        let run = |args: &[&str]| {
            let mut cmd = common::kernels(&world.server.endpoint, &copy);
            cmd.args(args).output().unwrap()
        };
        let p = world.project.display().to_string();
        let out = run(&["verify", &p, "--all-variants"]);
        assert_ok(&out);
        snapshot!(format!("dereferenced_{tool}_verify"), out);
        assert_ok(&run(&["download", &p, "--all-variants", "--offline"]));
        let before = listing(&copy);
        assert_ok(&run(&["download", &p, "--all-variants"]));
        assert_eq!(
            before,
            listing(&copy),
            "{tool}: an online run changed the copy"
        );
    }
}

#[test]
fn a_250_byte_file_name_downloads() {
    let long = format!("build/torch-universal/relu/{}.py", "n".repeat(247));
    let files = vec![
        MirrorFile {
            path: "build/torch-universal/relu/__init__.py".into(),
            content: b"x = 1\n".to_vec(),
        },
        MirrorFile {
            path: long.clone(),
            content: b"y = 2\n".to_vec(),
        },
    ];
    let files2 = files.clone();
    let world = TestContext::world_with(move |mirror| {
        kernels_test_support::write_repo(
            mirror,
            "acme/long",
            "3333333333333333333333333333333333333333",
            &files2,
        )
    });
    world.lock_a(&[(
        "acme/long",
        "3333333333333333333333333333333333333333",
        &files,
    )]);
    assert_ok(&world.download(&["--all-variants"]));
    let pointer = repo_dir(&world, "acme/long")
        .join("snapshots/3333333333333333333333333333333333333333")
        .join(&long);
    assert_eq!(fs_err::read(&pointer).unwrap(), b"y = 2\n");
}

#[test]
fn planted_symlinks_are_never_followed() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let sandbox = world.tmp.path().join("outside");
    fs_err::create_dir_all(&sandbox).unwrap();
    fs_err::write(sandbox.join("victim"), b"keep me").unwrap();
    let repo = repo_dir(&world, "acme/gelu");
    let so = gelu_files().into_iter().find(|f| f.lfs()).unwrap();
    let p = world.project.display().to_string();

    // 1. blobs/<sha>.incomplete -> an outside file.
    fs_err::create_dir_all(repo.join("blobs")).unwrap();
    std::os::unix::fs::symlink(
        sandbox.join("victim"),
        repo.join("blobs").join(format!("{}.incomplete", so.etag())),
    )
    .unwrap();
    let before = listing(&sandbox);
    assert_ok(&world.download(&["--all-variants"]));
    assert_eq!(before, listing(&sandbox));
    assert_eq!(fs_err::read(sandbox.join("victim")).unwrap(), b"keep me");
    let blob = repo.join("blobs").join(so.etag());
    assert!(!fs_err::symlink_metadata(&blob).unwrap().is_symlink());

    // 2. A blob replaced by a link to an outside copy: verify rejects it.
    fs_err::write(sandbox.join("copy"), &so.content).unwrap();
    fs_err::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(sandbox.join("copy"), &blob).unwrap();
    let out = kernels_cmd(&world, &["verify", &p, "--all-variants"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    snapshot!("planted_blob_link_verify", out);
    // and download replaces the link, not its target.
    assert_ok(&world.download(&["--all-variants"]));
    assert!(!fs_err::symlink_metadata(&blob).unwrap().is_symlink());
    assert_eq!(fs_err::read(sandbox.join("copy")).unwrap(), so.content);

    // 3. Symlinked directories (blobs/, .locks/<folder>, snapshots/<c>/build).
    for (label, dir) in [
        ("blobs", repo.join("blobs")),
        (
            "locks",
            world.cache.join(".locks").join("kernels--acme--gelu"),
        ),
        ("build", repo.join("snapshots").join(GELU_SHA).join("build")),
    ] {
        fs_err::remove_dir_all(&dir).unwrap();
        let target = sandbox.join("planted");
        fs_err::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(&target, &dir).unwrap();
        let before = listing(&sandbox);
        let out = world.download(&["--all-variants"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: {}",
            dir.display(),
            stderr(&out)
        );
        // "outside the cache", naming the link.
        snapshot!(format!("planted_dir_{label}_download"), out);
        assert_eq!(
            before,
            listing(&sandbox),
            "{}: wrote outside the cache",
            dir.display()
        );
        fs_err::remove_file(&dir).unwrap();
        fs_err::remove_dir_all(&target).unwrap();
    }
}

#[test]
fn unlocked_variant_in_the_snapshot_is_an_error() {
    let world = TestContext::world();
    let relu = relu_files();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu)]);
    assert_ok(&world.download(&["--all-variants"]));
    let planted = repo_dir(&world, "acme/relu")
        .join("snapshots")
        .join(RELU_SHA)
        .join("build/torch-planted");
    fs_err::create_dir_all(&planted).unwrap();
    fs_err::write(planted.join("__init__.py"), b"evil\n").unwrap();
    let p = world.project.display().to_string();
    // Both name the planted `torch-planted` folder.
    for (args, name) in [
        (
            vec!["verify", &p, "--all-variants"],
            "planted_variant_verify",
        ),
        (
            vec!["download", &p, "--all-variants", "--offline"],
            "planted_variant_download",
        ),
    ] {
        let out = kernels_cmd(&world, &args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        snapshot!(name, out);
    }
}

#[test]
fn refs_let_the_runtime_resolve_the_version_offline() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants"]));
    let r = repo_dir(&world, "acme/gelu").join("refs/v1");
    assert_eq!(fs_err::read(&r).unwrap(), GELU_SHA.as_bytes());
}

/// Runs `sh -c SCRIPT` in a mount namespace where `world.cache` is a tmpfs of `size`.
fn on_small_tmpfs(world: &TestContext, size: &str, args: &[&str]) -> Output {
    let inner = kernels_cmd(world, args);
    fs_err::create_dir_all(&world.cache).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", r#"mount -t tmpfs -o size="$1" tmpfs "$0" && shift && "$@"; rc=$?; find "$0" -name '*.incomplete' | sed 's/^/LEFT /'; exit $rc"#])
        .arg(&world.cache)
        .arg(size)
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.output().unwrap()
}

#[test]
fn small_disk_fails_early_with_both_figures_and_prune_cleans_up() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let out = on_small_tmpfs(
        &world,
        "8k",
        &[
            "download",
            &world.project.display().to_string(),
            "--all-variants",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // "not enough disk space" with both figures; no `LEFT` partial file on stdout.
    snapshot!("small_disk", out);

    // Leftovers from an earlier full disk: prune removes them.
    let blobs = repo_dir(&world, "acme/gelu").join("blobs");
    fs_err::create_dir_all(&blobs).unwrap();
    let so = gelu_files().into_iter().find(|f| f.lfs()).unwrap();
    fs_err::write(blobs.join(format!("{}.incomplete", so.etag())), b"\x7fEL").unwrap();
    let out = kernels_cmd(&world, &["cache", "prune"]).output().unwrap();
    assert_ok(&out);
    assert!(!blobs.join(format!("{}.incomplete", so.etag())).exists());
}

#[test]
fn disk_filling_mid_download_is_one_error_with_figures_and_resumes() {
    let world = TestContext::world();
    world.lock_b(&[("acme/relu", RELU_SHA)]);
    // Every CDN answer (the `.so` blobs) waits 2 s; another process fills
    // the 1 MiB cache disk in the meantime, after the free-space check passed.
    world.fault(serde_json::json!({"listener": "cdn", "latency_ms": 2000, "count": 3}));
    let download = kernels_cmd(
        &world,
        &[
            "download",
            &world.project.display().to_string(),
            "--all-variants",
        ],
    );
    fs_err::create_dir_all(&world.cache).unwrap();
    let script = r#"
        cache="$1"; shift
        mount -t tmpfs -o size=1m tmpfs "$cache" || exit 90
        "$@" & pid=$!
        # Fill the disk once a blob is being written (its `.incomplete` file
        # exists while the CDN answer waits).
        i=0
        until find "$cache" -name '*.incomplete' | grep -q .; do
            i=$((i + 1)); [ "$i" -gt 400 ] && break; sleep 0.025
        done
        dd if=/dev/zero of="$cache/filler" bs=4k 2>/dev/null
        wait $pid; echo "first=$?"
        echo "=== second" >&2
        find "$cache" -path '*/snapshots/*' -type l | while read -r link; do
            [ -e "$link" ] || echo "DANGLING $link"
        done
        rm "$cache/filler"
        "$@"; echo "second=$?"
        echo "=== verify" >&2
        "$1" verify "$3" --all-variants >/dev/null; echo "verify=$?"
    "#;
    let mut cmd = Command::new("unshare");
    cmd.args(["-m", "sh", "-c", script, "sh"])
        .arg(&world.cache)
        .arg(download.get_program())
        .args(download.get_args());
    for (k, v) in download.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = stderr(&out);
    // When the disk fills depends on the timing of this script, and with it
    // which blob hits it and the figures: the error's parts are checked
    // exactly, not snapshotted. Then, with space again, the next run
    // completes and the cache verifies; in between no snapshot entry points
    // at a partial or missing blob (no `DANGLING` line).
    assert_eq!(stdout, "first=1\nsecond=0\nverify=0\n", "{err}");
    let first = err.split("=== second").next().unwrap();
    // One error, with the figures.
    assert_eq!(
        first.matches("kernels::download::disk_full").count(),
        1,
        "{first}"
    );
    let message = first
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("× the disk holding "))
        .unwrap_or_else(|| panic!("no disk-full message:\n{first}"));
    let (folder, figures) = message.split_once(" is full: ").unwrap();
    assert!(
        folder.ends_with("/cache/kernels--acme--relu/blobs"),
        "{message}"
    );
    let (needed, rest) = figures
        .split_once(" more byte(s) needed for this file, ")
        .unwrap_or_else(|| panic!("{message}"));
    let (available, rest) = rest.split_once(" available ").unwrap();
    assert!(
        needed.parse::<u64>().is_ok() && available.parse::<u64>().is_ok(),
        "{message}"
    );
    assert_eq!(rest, "(while downloading acme/relu@1111111)", "{message}");
}

#[test]
fn cache_dir_and_ls() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    assert_ok(&world.download(&["--all-variants"]));
    let out = kernels_cmd(&world, &["cache", "dir"]).output().unwrap();
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        world.cache.display().to_string()
    );
    snapshot!("cache_dir", out);
    let out = kernels_cmd(&world, &["cache", "ls", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["repos"][0]["repo_id"], "acme/gelu");
    assert_eq!(doc["repos"][0]["revisions"][0]["commit"], GELU_SHA);
    assert_eq!(doc["repos"][0]["revisions"][0]["refs"][0], "v1");
}

#[test]
fn the_cache_is_tagged_as_huggingface_hub_tags_it_and_cache_commands_ignore_the_tag() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let tag = world.cache.join("CACHEDIR.TAG");
    assert!(!tag.exists());
    assert_ok(&world.download(&["--all-variants"]));
    let ours = fs_err::read(&tag).unwrap();

    // huggingface_hub 2.4 writes the same bytes when it stores a file.
    let theirs = tempfile::tempdir().unwrap();
    let script = "import sys\nfrom huggingface_hub import hf_hub_download\n\
                  hf_hub_download(sys.argv[1], sys.argv[2], repo_type='kernel', revision=sys.argv[3])";
    let out = common::python("hub-2.4.0", &world.server.endpoint, theirs.path())
        .args(["-c", script, "acme/gelu", &gelu_files()[0].path, GELU_SHA])
        .output()
        .unwrap();
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&ours),
        fs_err::read_to_string(theirs.path().join("CACHEDIR.TAG")).unwrap()
    );

    // `cache ls` and `cache prune` see one repository and leave the tag alone.
    let out = kernels_cmd(&world, &["cache", "ls", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let repos: Vec<&str> = doc["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["folder"].as_str().unwrap())
        .collect();
    assert_eq!(repos, ["kernels--acme--gelu"]);
    let out = kernels_cmd(&world, &["cache", "prune"]).output().unwrap();
    snapshot!("prune_tagged_cache", out);
    assert_eq!(fs_err::read(&tag).unwrap(), ours);

    // A tag someone else wrote is kept as it is.
    fs_err::write(
        &tag,
        "Signature: 8a477f597d28d172789f06886806bc55\n# another tool\n",
    )
    .unwrap();
    fs_err::remove_dir_all(repo_dir(&world, "acme/gelu")).unwrap();
    assert_ok(&world.download(&["--all-variants"]));
    assert_eq!(
        fs_err::read_to_string(&tag).unwrap(),
        "Signature: 8a477f597d28d172789f06886806bc55\n# another tool\n"
    );

    // A complete read-only cache without a tag: the command succeeds and
    // writes nothing (as huggingface_hub, which ignores the failed write).
    fs_err::remove_file(&tag).unwrap();
    fs_err::remove_dir_all(world.cache.join(".locks")).unwrap();
    let p = world.project.display().to_string();
    let out = read_only(&world, &["download", &p, "--all-variants"]);
    assert_ok(&out);
    assert!(!tag.exists());
}

/// Names from the cache are shown as server text is (issue 24): a folder,
/// ref or snapshot name with an ANSI sequence or a bidirectional override is
/// printed escaped by `kernels cache ls` and `kernels cache prune`.
#[test]
fn cache_names_with_control_characters_are_escaped() {
    let world = TestContext::new();
    let repo = world.cache.join("kernels--acme--ev\u{1b}[2Jil");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    fs_err::create_dir_all(repo.join("snapshots").join(commit)).unwrap();
    fs_err::create_dir_all(repo.join("snapshots/\u{202e}lmth.exe")).unwrap();
    fs_err::create_dir_all(repo.join("refs")).unwrap();
    fs_err::write(repo.join("refs/v\u{202e}1"), commit).unwrap();
    let ls = world.run(&["cache", "ls"]);
    let prune = world.run(&["cache", "prune", "--dry-run"]);
    snapshot!(
        "cache_names_escaped",
        format!(
            "{}\n--- prune\n{}",
            common::snapshot::SnapshotText::snapshot_text(&ls),
            common::snapshot::SnapshotText::snapshot_text(&prune)
        )
    );
}

/// Names planted in a cached snapshot reach no terminal raw (issue 24): a
/// variant folder and a file name with an ANSI sequence or a bidirectional
/// override are shown escaped by `verify`, offline `download` (whose error
/// lists them) and `info` of the snapshot directory.
#[test]
fn planted_snapshot_names_are_escaped_everywhere() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    assert_ok(&world.download(&["--all-variants"]));
    let snap = repo_dir(&world, "acme/relu")
        .join("snapshots")
        .join(RELU_SHA);
    let planted = snap.join("build/torch-ev\u{1b}[2Jil");
    fs_err::create_dir_all(&planted).unwrap();
    fs_err::write(planted.join("a\u{202e}yp.py"), b"evil\n").unwrap();
    let p = world.project.display().to_string();
    let s = snap.display().to_string();
    // Each names the planted directory escaped (`ev\u{1b}[2Jil`), with no raw
    // control character.
    for (name, args) in [
        (
            "control_characters_verify",
            vec!["verify", &p, "--all-variants"],
        ),
        (
            "control_characters_download_offline",
            vec!["download", &p, "--all-variants", "--offline"],
        ),
        ("control_characters_info", vec!["info", &s]),
    ] {
        snapshot!(name, kernels_cmd(&world, &args).output().unwrap());
    }
}

/// `symlink()` refused with `EPERM` (issue 24: Windows without developer
/// mode, some network file systems), injected through the cache's test seam:
/// the download falls back to copies with one warning, as on a file system
/// without links, instead of failing.
#[test]
fn symlinks_refused_with_eperm_fall_back_to_copies() {
    let world = TestContext::world();
    world.lock_a(&[("acme/relu", RELU_SHA, &relu_files())]);
    let out = world.download_with(&["--all-variants"], &[("KERNELS_TEST_SYMLINK_ERRNO", "1")]);
    snapshot!(
        "symlink_eperm_download",
        out,
        // Which file fails first depends on the order the downloads end.
        &[(
            r"failed to create symlink \S+\.tmp",
            "failed to create symlink [SNAPSHOT]/.kernels-[PID]-[RANDOM].tmp"
        )]
    );
    let snap = repo_dir(&world, "acme/relu")
        .join("snapshots")
        .join(RELU_SHA);
    let files: Vec<_> = walkdir::WalkDir::new(&snap)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .collect();
    assert!(!files.is_empty());
    assert!(files.iter().all(|e| !e.path_is_symlink()), "links created");
    let verify = kernels_cmd(
        &world,
        &[
            "verify",
            &world.project.display().to_string(),
            "--all-variants",
        ],
    )
    .output()
    .unwrap();
    assert_ok(&verify);
}
