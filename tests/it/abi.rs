//! Issue 43: the ABI of a variant's compiled files checked at download for
//! the declared image (`--manylinux`, `[tool.kernels] manylinux`), with a
//! real shared object built here by the system C compiler.

use std::path::Path;
use std::process::{Command, Output};

use kernels_test_support::TestContext;
use kernels_test_support::world::{MirrorFile, arch_variant, assert_ok, stderr, write_repo};

/// Commit of every kernel of these tests.
const SHA: &str = "4343434343434343434343434343434343434343";

/// What the fixtures build.
mod fixture {
    use super::*;

    /// The bytes of `name.so`, built from the C `source` in `dir` by the
    /// system C compiler (`cc -shared -fPIC`).
    pub fn compile(dir: &Path, name: &str, source: &str) -> Vec<u8> {
        let c = dir.join(format!("{name}.c"));
        fs_err::write(&c, source).unwrap();
        let out = dir.join(format!("{name}.so"));
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&c)
            .status()
            .expect("the system C compiler `cc` runs");
        assert!(status.success(), "cc failed on {name}.c");
        fs_err::read(out).unwrap()
    }

    /// A shared object that needs `pthread_create@GLIBC_2.34`: the version
    /// glibc 2.34 and newer (this machine's, see `ldd --version`) give that
    /// symbol, so linking against it records the need.
    pub fn needs_glibc_2_34(dir: &Path) -> Vec<u8> {
        let bytes = compile(
            dir,
            "needs",
            "#include <pthread.h>\nvoid *needs(void) { return (void *)&pthread_create; }\n",
        );
        assert!(
            bytes.windows(10).any(|w| w == b"GLIBC_2.34"),
            "this machine's glibc is older than 2.34: the object records no GLIBC_2.34 need"
        );
        bytes
    }

    /// A shared object that needs nothing newer than the oldest manylinux.
    pub fn plain_so(dir: &Path) -> Vec<u8> {
        compile(dir, "plain", "int plain(void) { return 1; }\n")
    }

    /// The files of one variant directory: `abi/__init__.py` importing
    /// `_ops`, and `so` as `abi/<so_name>`.
    pub fn variant(variant: &str, so_name: &str, so: Vec<u8>) -> Vec<MirrorFile> {
        vec![
            MirrorFile {
                path: format!("build/{variant}/abi/__init__.py"),
                content: b"from . import _ops\n".to_vec(),
            },
            MirrorFile {
                path: format!("build/{variant}/abi/{so_name}"),
                content: so,
            },
        ]
    }

    /// The files of a kernel whose one variant, `torch-cpu`, holds `so` as
    /// `_ops.so`.
    pub fn kernel(so: Vec<u8>) -> Vec<MirrorFile> {
        variant("torch-cpu", "_ops.so", so)
    }

    /// The world with `files` published as `repo` at [`SHA`], and locked.
    pub fn locked_world(repo: &str, files: &[MirrorFile]) -> TestContext {
        let world = TestContext::world_with(|mirror| write_repo(mirror, repo, SHA, files));
        world.lock_a(&[(repo, SHA, files)]);
        world
    }

    /// The stderr of `out`, which must have failed.
    pub fn failed(out: &Output) -> String {
        assert!(!out.status.success(), "{}", stderr(out));
        stderr(out)
    }

    /// The stdout of `out`, then its stderr.
    pub fn text(out: &Output) -> String {
        format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
    }

    /// `kernels ARGS` in `world`'s project where the project's Python does
    /// not exist (a build stage without Python).
    pub fn without_python(world: &TestContext, args: &[&str]) -> Output {
        world
            .kernels()
            .args(args)
            .env("HF_TOKEN", "t")
            .env("VIRTUAL_ENV", world.project.join("no-venv"))
            .output()
            .unwrap()
    }
}

use fixture::{failed, kernel, needs_glibc_2_34, text};

/// `so` with its ELF machine set to the other one of x86-64 and AArch64.
fn other_arch(mut so: Vec<u8>) -> (Vec<u8>, &'static str) {
    // e_machine: 2 bytes at offset 18 (little-endian on both).
    let (machine, name) = if std::env::consts::ARCH == "aarch64" {
        (62u16, "x86_64")
    } else {
        (183u16, "aarch64")
    };
    so[18..20].copy_from_slice(&machine.to_le_bytes());
    (so, name)
}

/// The world with `acme/glibc` (a `.so` needing GLIBC_2.34) and
/// `acme/garbage` (a `.so` that is no shared object), locked as `repo`;
/// with the files of `repo`.
fn world(repo: &str) -> (TestContext, Vec<MirrorFile>) {
    let scratch = tempfile::tempdir().unwrap();
    let glibc = kernel(needs_glibc_2_34(scratch.path()));
    let garbage = kernel(b"not a shared object\n".to_vec());
    let world = TestContext::world_with(|mirror| {
        write_repo(mirror, "acme/glibc", SHA, &glibc);
        write_repo(mirror, "acme/garbage", SHA, &garbage);
    });
    let files = if repo == "acme/glibc" { glibc } else { garbage };
    world.lock_a(&[(repo, SHA, &files)]);
    (world, files)
}

#[test]
fn a_so_needing_glibc_2_34_is_refused_on_manylinux_2_28_and_placed_on_2_39() {
    let (world, files) = world("acme/glibc");
    let err = failed(&world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_28"]));
    for needle in [
        "abi/_ops.so",
        "GLIBC_2.34",
        "manylinux_2_28",
        "manylinux_2_34 or newer would",
        "abi:",
    ] {
        assert!(err.contains(needle), "`{needle}` missing from:\n{err}");
    }
    // The refused variant left nothing: no link, no blob of the `.so`.
    let repo_dir = world.repo_dir("kernel", "acme/glibc");
    let linked = repo_dir.join("snapshots").join(SHA).join(&files[1].path);
    assert!(!linked.exists() && linked.symlink_metadata().is_err());
    let so_blob = files[1].etag();
    assert!(!repo_dir.join("blobs").join(&so_blob).exists());

    let ok = world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_39"]);
    assert_ok(&ok);
    assert!(
        stderr(&ok).contains("ABI of compiled files: checked for manylinux_2_39"),
        "{}",
        stderr(&ok)
    );
    assert!(repo_dir.join("blobs").join(&so_blob).exists());

    // Complete in the cache, the kernel is still checked against this run's image.
    let warm =
        failed(&world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_28"]));
    assert!(warm.contains("GLIBC_2.34"), "{warm}");
}

#[test]
fn the_manylinux_of_pyproject_is_the_image_without_the_flag() {
    let (world, _) = world("acme/glibc");
    world.write(
        "pyproject.toml",
        "[tool.kernels]\nmanylinux = \"manylinux_2_28\"\n\n[tool.kernels.dependencies]\n\"acme/glibc\" = 1\n",
    );
    let err = failed(&world.download(&["--variant", "torch-cpu"]));
    assert!(err.contains("GLIBC_2.34"), "{err}");
    // The flag names the image instead.
    assert_ok(&world.download(&["--variant", "torch-cpu", "--manylinux", "2.39"]));
    // `verify` checks the cached files against the declared image.
    let verify = world.verify(&["--variant", "torch-cpu"]);
    failed(&verify);
    let all = text(&verify);
    assert!(
        all.contains("abi: `abi/_ops.so` needs `pthread_create@GLIBC_2.34`"),
        "{all}"
    );
}

#[test]
fn a_so_that_is_no_shared_object_is_one_line_naming_it() {
    let (world, _) = world("acme/garbage");
    let err = failed(&world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_28"]));
    assert!(
        err.contains("`abi/_ops.so` is not an ELF or Mach-O shared object"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // Without an image, nothing is checked and the variant is placed.
    assert_ok(&world.download(&["--variant", "torch-cpu"]));
}

#[test]
fn a_bad_manylinux_flag_names_the_forms_it_takes() {
    let (world, _) = world("acme/glibc");
    let err = failed(&world.download(&["--variant", "torch-cpu", "--manylinux", "musllinux_1_2"]));
    assert!(err.contains("manylinux_2_28"), "{err}");
}

#[test]
fn check_static_gives_the_same_verdict_without_python_or_torch() {
    let (world, _) = world("acme/glibc");
    assert_ok(&world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_39"]));
    // A build stage without Python: the interpreter named does not exist.
    let check = |manylinux: &str| {
        fixture::without_python(&world, &["check", "--static", "--manylinux", manylinux])
    };
    let refused = check("manylinux_2_28");
    failed(&refused);
    let out = String::from_utf8_lossy(&refused.stdout);
    assert!(
        out.contains("acme/glibc@4343434 torch-cpu: abi: `abi/_ops.so` needs `pthread_create@GLIBC_2.34`, which manylinux_2_28 does not provide (manylinux_2_34 or newer would)"),
        "{out}\n{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("1 variant refused"),
        "{}",
        stderr(&refused)
    );
    let fits = check("manylinux_2_39");
    assert_ok(&fits);
    assert!(
        String::from_utf8_lossy(&fits.stdout)
            .contains("acme/glibc@4343434 torch-cpu: fits (2 files)"),
        "{}",
        String::from_utf8_lossy(&fits.stdout)
    );
}

#[test]
fn an_elf_of_another_architecture_is_one_line_naming_both() {
    let scratch = tempfile::tempdir().unwrap();
    let (so, arch) = other_arch(needs_glibc_2_34(scratch.path()));
    let variant = arch_variant();
    let world = fixture::locked_world("acme/arm", &fixture::variant(&variant, "_ops.so", so));
    let err = failed(&world.download(&["--variant", &variant, "--manylinux", "manylinux_2_39"]));
    let expected = format!(
        "`abi/_ops.so` is built for {arch}, not {} as its variant says",
        std::env::consts::ARCH
    );
    assert!(err.contains(&expected), "{err}");
}

#[test]
fn a_file_claiming_abi3_that_uses_other_python_symbols_is_a_warning() {
    let scratch = tempfile::tempdir().unwrap();
    let so = fixture::compile(
        scratch.path(),
        "ops",
        "extern void *_PyUnicode_AsString(void *);\nvoid *make(void *t) { return _PyUnicode_AsString(t); }\n",
    );
    let world = fixture::locked_world(
        "acme/py",
        &fixture::variant("torch-cpu", "_ops.abi3.so", so),
    );
    let out = world.download(&["--variant", "torch-cpu", "--manylinux", "manylinux_2_28"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains(
            "`build/torch-cpu/abi/_ops.abi3.so` claims Python abi3 but uses `_PyUnicode_AsString` (not in the limited API)"
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn manylinux_host_reads_this_machines_glibc_without_python() {
    let (world, _) = world("acme/glibc");
    // This machine's glibc gives `GLIBC_2.34` (the object was linked here),
    // so the host image loads it.
    let out = fixture::without_python(
        &world,
        &["download", "--variant", "torch-cpu", "--manylinux", "host"],
    );
    assert_ok(&out);
    assert!(
        stderr(&out).contains("ABI of compiled files: checked for manylinux_2_"),
        "{}",
        stderr(&out)
    );
}

/// A project (target runtime 0.17.2, `tool` lines in `[tool.kernels]`)
/// locking `acme/two`: the host's arch variant, ranked first for the stub
/// torch with CUDA 12.6, holds a `.so` needing `GLIBC_2.34`; `torch-cuda`
/// one that needs nothing newer than the oldest manylinux. Returns the
/// world, the arch variant and the files.
fn two_variants(tool: &str) -> (TestContext, String, Vec<MirrorFile>) {
    let scratch = tempfile::tempdir().unwrap();
    let arch = arch_variant();
    let metadata = |variant: &str| MirrorFile {
        path: format!("build/{variant}/metadata.json"),
        content: br#"{"name": "abi", "version": 1, "python-depends": []}"#.to_vec(),
    };
    let files = [
        vec![metadata(&arch), metadata("torch-cuda")],
        fixture::variant(&arch, "_ops.so", needs_glibc_2_34(scratch.path())),
        fixture::variant("torch-cuda", "_ops.so", fixture::plain_so(scratch.path())),
    ]
    .concat();
    // The stub torch with CUDA 12.6 ranks the host's arch variant first.
    let world = TestContext::world_with(|mirror| {
        write_repo(mirror, "acme/two", SHA, &files);
        fs_err::write(
            mirror.join("repos/kernels/acme/two/repo.toml"),
            "commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
        )
        .unwrap();
    })
    .with_stub_torch()
    .with_env("STUB_TORCH_CUDA", "12.6");
    // A runtime with a resolver loads one variant, the best that it finds.
    world.write(
        "pyproject.toml",
        &format!("[tool.kernels]\ntarget-runtime = \"0.17.2\"\ntrust = [\"acme/two\"]\n{tool}\n[tool.kernels.dependencies]\n\"acme/two\" = 1\n"),
    );
    world.run_ok(&["lock"]);
    (world, arch, files)
}

#[test]
fn the_environments_choice_falls_back_past_a_variant_its_image_cannot_load() {
    let (world, arch, files) = two_variants("");
    let repo_dir = world.repo_dir("kernel", "acme/two");
    let variants = || -> Vec<String> {
        let build = repo_dir.join("snapshots").join(SHA).join("build");
        let mut names: Vec<String> = fs_err::read_dir(build)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };

    let out = world.download(&["--manylinux", "manylinux_2_28"]);
    assert_ok(&out);
    let err = stderr(&out);
    let skipped = format!(
        "note: acme/two@4343434: skipped variant {arch} (the target runtime would refuse to load it: abi: `abi/_ops.so` needs `pthread_create@GLIBC_2.34`, which manylinux_2_28 does not provide (manylinux_2_34 or newer would))"
    );
    assert!(err.contains(&skipped), "`{skipped}` missing from:\n{err}");
    assert_eq!(variants(), ["torch-cuda"]);
    // The refused `.so` left no blob behind.
    assert!(!repo_dir.join("blobs").join(files[3].etag()).exists());

    // Again: the same choice and the same note.
    let again = world.download(&["--manylinux", "manylinux_2_28"]);
    assert_ok(&again);
    assert!(stderr(&again).contains(&skipped), "{}", stderr(&again));
    assert_eq!(variants(), ["torch-cuda"]);

    // An image that loads it takes the best variant.
    let newer = world.download(&["--manylinux", "manylinux_2_39"]);
    assert_ok(&newer);
    assert!(
        !stderr(&newer).contains("skipped variant"),
        "{}",
        stderr(&newer)
    );
    assert!(variants().contains(&arch), "{:?}", variants());

    // Now cached, the best variant is still refused for the older image: the
    // choice falls back again, and the cached directory that the runtime
    // would take first is named.
    let warm = world.download(&["--manylinux", "manylinux_2_28"]);
    assert_ok(&warm);
    let err = stderr(&warm);
    assert!(err.contains(&skipped), "{err}");
    assert!(
        err.contains(&format!("build/{arch} is in the cached snapshot")),
        "{err}"
    );
}

#[test]
fn env_and_explain_give_the_abi_verdict_from_the_cache() {
    let (world, arch, _) = two_variants("manylinux = \"manylinux_2_28\"\n");
    // Nothing but metadata.json is cached: not checked, nothing fetched.
    let before = text(&world.download(&["--explain"]));
    assert!(
        before.contains(&format!(
            "{arch} (chosen): fits; ABI for manylinux_2_28: not checked (compiled files not in the cache)"
        )),
        "{before}"
    );
    let repo_dir = world.repo_dir("kernel", "acme/two");
    let so = repo_dir
        .join("snapshots")
        .join(SHA)
        .join(format!("build/{arch}/abi/_ops.so"));
    assert!(!so.exists(), "--explain fetched a compiled file");

    // Placed for an image that loads every variant: the best one is cached,
    // and the declared image refuses it, as `download` would.
    assert_ok(&world.download(&["--manylinux", "manylinux_2_39"]));
    let after = text(&world.download(&["--explain"]));
    assert!(
        after.contains("acme/two@4343434: torch-cuda\n")
            && after.contains(&format!(
                "- {arch}: ranks first, but the target runtime would refuse it"
            )),
        "{after}"
    );
    let env = text(&world.kernels().arg("env").output().unwrap());
    assert!(
        env.contains("ABI of compiled files: checked for manylinux_2_28 (from the cache)")
            && env.contains("acme/two@4343434: torch-cuda\n"),
        "{env}"
    );
    let json = world.download(&["--explain", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let fit = &doc["kernels"][0]["fit"];
    let refused = fit
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["variant"] == arch.as_str())
        .unwrap();
    assert_eq!(refused["fits"], false);
    assert_eq!(refused["abi"]["checked"], true);
    assert_eq!(refused["refusals"][0]["rule"], "abi");
    assert!(
        refused["refusals"][0]["message"]
            .as_str()
            .unwrap()
            .contains("`abi/_ops.so` needs `pthread_create@GLIBC_2.34`, which manylinux_2_28"),
        "{refused}"
    );
}

#[test]
fn variants_and_info_give_the_abi_verdict_from_the_cache() {
    let (world, arch, files) = two_variants("manylinux = \"manylinux_2_28\"\n");
    let run = |args: &[&str]| {
        let out = world.kernels().args(args).output().unwrap();
        assert_ok(&out);
        out
    };
    let stdout = |out: &Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let not_checked = "ABI: not checked for manylinux_2_28 (compiled files not in the cache)";
    let refused = "ABI: refused for manylinux_2_28: `abi/_ops.so` needs `pthread_create@GLIBC_2.34`, which manylinux_2_28 does not provide (manylinux_2_34 or newer would)";

    // Nothing but metadata.json is cached: not checked, and nothing fetched.
    let before = run(&["variants", "acme/two"]);
    let text = stdout(&before);
    assert!(
        text.contains(&format!("{arch} compatible, preferred ✅; {not_checked}")),
        "{text}"
    );
    assert!(
        stderr(&before)
            .contains("ABI of compiled files: checked for manylinux_2_28 (from the cache)"),
        "{}",
        stderr(&before)
    );
    let snapshot = world
        .repo_dir("kernel", "acme/two")
        .join("snapshots")
        .join(SHA);
    assert!(
        !snapshot.join(&files[3].path).exists(),
        "variants fetched a compiled file"
    );
    let info = stdout(&run(&["info", "acme/two"]));
    assert!(
        info.contains(&format!("Variant: {arch}\n{not_checked}\n")),
        "{info}"
    );

    // The best variant placed (for an image that loads it): judged from the cache.
    assert_ok(&world.download(&["--manylinux", "manylinux_2_39"]));
    for selector in [&[][..], &["--revision", "main"]] {
        let text = stdout(&run(&[&["variants", "acme/two"], selector].concat()));
        assert!(
            text.contains(&format!("{arch} compatible, preferred ✅; {refused}"))
                && text.contains(&format!("torch-cuda compatible ✅; {not_checked}")),
            "{selector:?}: {text}"
        );
    }
    let flag = stdout(&run(&[
        "variants",
        "acme/two",
        "--manylinux",
        "manylinux_2_39",
    ]));
    assert!(
        flag.contains(&format!(
            "{arch} compatible, preferred ✅; ABI: fits manylinux_2_39"
        )),
        "{flag}"
    );
    let info = stdout(&run(&["info", "acme/two"]));
    assert!(
        info.contains(&format!("Variant: {arch}\n{refused}\n")),
        "{info}"
    );

    // JSON: the verdict only under our `environments`, for compatible variants.
    let doc: serde_json::Value =
        serde_json::from_slice(&run(&["variants", "acme/two", "--json"]).stdout).unwrap();
    let revision = &doc["revisions"][0];
    assert!(
        revision["variants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.get("abi").is_none()),
        "{revision}"
    );
    let verdicts = revision["environments"][0]["variants"].as_array().unwrap();
    let abi_of = |name: &str| &verdicts.iter().find(|v| v["variant"] == name).unwrap()["abi"];
    let best = abi_of(&arch);
    assert_eq!(best["images"], serde_json::json!(["manylinux_2_28"]));
    assert_eq!(
        (&best["checked"], &best["fits"]),
        (&true.into(), &false.into())
    );
    assert!(
        best["refusals"][0].as_str().unwrap().contains("GLIBC_2.34"),
        "{best}"
    );
    let other = abi_of("torch-cuda");
    assert_eq!(
        (&other["checked"], &other["fits"]),
        (&false.into(), &serde_json::Value::Null)
    );
    let info: serde_json::Value =
        serde_json::from_slice(&run(&["info", "acme/two", "--json"]).stdout).unwrap();
    assert_eq!(info["variant_abi"]["fits"], false, "{info}");

    // A local kernel repository is judged from its own files.
    let local = world.project.join("local-two");
    for file in &files {
        let path = local.join(&file.path);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, &file.content).unwrap();
    }
    let text = stdout(&run(&["info", local.to_str().unwrap()]));
    assert!(
        text.contains(&format!("Variant: {arch}\n{refused}\n")),
        "{text}"
    );
}

#[test]
fn variants_gives_each_declared_target_the_abi_verdict() {
    let target = format!(
        "[[tool.kernels.targets]]\ntorch = \"2.7\"\nbackend = \"cuda-12.6\"\nos = \"linux\"\narch = \"{}\"\nmanylinux = \"manylinux_2_28\"\n",
        std::env::consts::ARCH
    );
    let (world, arch, _) = two_variants(&target);
    assert_ok(&world.download(&["--manylinux", "manylinux_2_39"]));
    let out = world
        .kernels()
        .args(["variants", "acme/two", "--json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let environment = &doc["revisions"][0]["environments"][0];
    assert_eq!(environment["source"], "target 1", "{doc}");
    let best = environment["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["variant"] == arch.as_str())
        .unwrap();
    assert_eq!(best["abi"]["images"], serde_json::json!(["manylinux_2_28"]));
    assert_eq!(best["abi"]["fits"], false, "{best}");
}
