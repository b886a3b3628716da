//! Both variant grammars (issue 40): a kernel publishing names of the 0.19
//! grammar, or both grammars, downloads the variant the pinned reference
//! picks for the same stub torch (0.19.1 for a 0.19 project, 0.18.3 / 0.17.2
//! for older ones); ROCm 7.3 takes `rocm72` from 0.18 on; a malformed name is
//! skipped with one line; the 0.19 lock closure follows an `sdk` variant's
//! `kernel-depends`.

use std::path::Path;
use std::process::{Command, Output};

use kernels_test_support::world::*;
use kernels_test_support::{self as common, TestContext};

const NEW_SHA: &str = "4444444444444444444444444444444444444444";

fn arch() -> &'static str {
    std::env::consts::ARCH
}

/// A repo (`acme/grammar`) whose `build/` has exactly `names`, each with a
/// small package.
fn files(names: &[String]) -> Vec<MirrorFile> {
    names
        .iter()
        .map(|name| MirrorFile {
            path: format!("build/{name}/grammar/__init__.py"),
            content: format!("# {name}\n").into_bytes(),
        })
        .collect()
}

fn world(names: &[String]) -> TestContext {
    let files = files(names);
    let world =
        TestContext::world_with(|mirror| write_repo(mirror, "acme/grammar", NEW_SHA, &files));
    world.lock_b(&[("acme/grammar", NEW_SHA)]);
    world
}

fn stub() -> String {
    common::repo_root()
        .join("tests/python/stub_torch")
        .to_str()
        .unwrap()
        .to_owned()
}

/// What the pinned reference `env_name` loads among `names` for the stub
/// torch `torch_env` (its own parser: names it cannot parse are dropped), or
/// `None` when it finds no variant.
fn reference_pick(env_name: &str, names: &[String], torch_env: &[(&str, &str)]) -> Option<String> {
    let module = if env_name == "kernels-0.19.1" {
        "kernels._internals.variants"
    } else {
        "kernels.variants"
    };
    let script = format!(
        "import sys\n\
         from {module} import parse_variant, resolve_variants\n\
         vs = []\n\
         for n in sys.argv[1:]:\n\
         \x20   try:\n\
         \x20       vs.append(parse_variant(n))\n\
         \x20   except ValueError:\n\
         \x20       pass\n\
         best = resolve_variants(vs)[0]\n\
         print(best[0].variant_str if best else '')\n"
    );
    let mut py = Command::new(common::pyref_python(env_name));
    py.env("PYTHONPATH", stub())
        .arg("-c")
        .arg(script)
        .args(names);
    for (k, v) in torch_env {
        py.env(k, v);
    }
    let out = py.output().unwrap();
    assert!(
        out.status.success(),
        "{env_name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pick = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (!pick.is_empty()).then_some(pick)
}

/// `kernels download --target-runtime <runtime>` with the stub torch.
fn download(world: &TestContext, runtime: &str, torch_env: &[(&str, &str)]) -> Output {
    let _ = fs_err::remove_dir_all(&world.cache);
    let stub = stub();
    let mut env: Vec<(&str, &str)> = vec![("PYTHONPATH", &stub)];
    env.extend_from_slice(torch_env);
    world.download_with(&["--target-runtime", runtime], &env)
}

/// The variants `download` placed in the cache.
fn downloaded(world: &TestContext) -> Vec<String> {
    let repo_dir = world.repo_dir("kernel", "acme/grammar");
    let mut names: Vec<String> = snapshot_paths(&repo_dir, NEW_SHA)
        .iter()
        .map(|p| p.split('/').nth(1).unwrap().to_owned())
        .collect();
    names.dedup();
    names
}

/// Our pick and each pinned reference's agree for every runtime in `runtimes`.
fn assert_picks_agree(names: &[String], torch_env: &[(&str, &str)], runtimes: &[(&str, &str)]) {
    let world = world(names);
    for (runtime, reference) in runtimes {
        let expected = reference_pick(reference, names, torch_env);
        let out = download(&world, runtime, torch_env);
        match &expected {
            Some(pick) => {
                assert_ok(&out);
                assert_eq!(downloaded(&world), std::slice::from_ref(pick), "{runtime}");
            }
            None => {
                assert_eq!(out.status.code(), Some(1), "{runtime}: {}", stderr(&out));
                // Substring: only the code matters; the message lists each runtime's own variants.
                assert!(stderr(&out).contains("no_compatible"), "{}", stderr(&out));
            }
        }
    }
}

#[test]
fn only_new_names_download_what_0_19_1_loads() {
    let a = arch();
    let names: Vec<String> = vec![
        format!("torch-2.7-cxx11-cuda-12.6-cpython-3.9-abi3-{a}-linux"),
        format!("torch-2.7-cuda-12.4-cpython-3.10-abi3-{a}-linux"),
        format!("torch-2.7-cuda-12.4-cpython-3.99-abi3-{a}-linux"),
        format!("torch-stable-abi-2.6-cuda-12.8-cpython-3.9-abi3-{a}-linux"),
        format!("tvm-ffi-0.1-cuda-12.6-cpython-3.9-abi3-{a}-linux"),
        "sdk".to_owned(),
        "sdk-cuda".to_owned(),
        "mlx-metal".to_owned(),
    ];
    let torch = [("STUB_TORCH_VERSION", "2.7.0"), ("STUB_TORCH_CUDA", "12.6")];
    assert!(reference_pick("kernels-0.19.1", &names, &torch).is_some());
    assert!(reference_pick("kernels-0.17.2", &names, &torch).is_none());
    assert_picks_agree(
        &names,
        &torch,
        &[("0.19.1", "kernels-0.19.1"), ("0.17.2", "kernels-0.17.2")],
    );
}

#[test]
fn both_grammars_download_what_each_release_loads() {
    let a = arch();
    let names: Vec<String> = vec![
        format!("torch27-cxx11-cu126-{a}-linux"),
        format!("torch27-cxx11-cu124-{a}-linux"),
        "torch-cuda".to_owned(),
        "torch-universal".to_owned(),
        format!("torch-stable-abi-2.7-cuda-12.6-cpython-3.9-abi3-{a}-linux"),
        format!("torch-2.7-cxx11-cuda-12.6-cpython-3.10-abi3-{a}-linux"),
        "sdk-cuda".to_owned(),
    ];
    let torch = [("STUB_TORCH_VERSION", "2.7.0"), ("STUB_TORCH_CUDA", "12.6")];
    assert_eq!(
        reference_pick("kernels-0.19.1", &names, &torch).as_deref(),
        Some(names[4].as_str())
    );
    assert_picks_agree(
        &names,
        &torch,
        &[
            ("0.19.1", "kernels-0.19.1"),
            ("0.18.3", "kernels-0.18.3"),
            ("0.17.2", "kernels-0.17.2"),
        ],
    );
}

#[test]
fn rocm_7_3_takes_rocm72_from_0_18_on() {
    let a = arch();
    let names: Vec<String> = vec![
        format!("torch27-cxx11-rocm71-{a}-linux"),
        format!("torch27-cxx11-rocm72-{a}-linux"),
        format!("torch27-cxx11-rocm74-{a}-linux"),
        format!("torch27-cxx11-rocm714-{a}-linux"),
    ];
    // `torch.version.rocm` (read from 0.18 on) says 7.3, `hip` another version.
    let torch = [
        ("STUB_TORCH_VERSION", "2.7.0"),
        ("STUB_TORCH_HIP", "6.5.1-abc"),
        ("STUB_TORCH_ROCM", "7.3.0"),
    ];
    assert_eq!(
        reference_pick("kernels-0.19.1", &names, &torch).as_deref(),
        Some(names[1].as_str())
    );
    assert_picks_agree(
        &names,
        &torch,
        &[
            ("0.19.1", "kernels-0.19.1"),
            ("0.18.3", "kernels-0.18.3"),
            ("0.17.2", "kernels-0.17.2"),
        ],
    );
    // `rocm714` is ROCm 7.14 for 0.19 (71.4 before).
    let torch = [
        ("STUB_TORCH_VERSION", "2.7.0"),
        ("STUB_TORCH_HIP", "7.14.0"),
        ("STUB_TORCH_ROCM", "7.14.0"),
    ];
    assert_eq!(
        reference_pick("kernels-0.19.1", &names, &torch).as_deref(),
        Some(names[3].as_str())
    );
    assert_picks_agree(
        &names,
        &torch,
        &[("0.19.1", "kernels-0.19.1"), ("0.18.3", "kernels-0.18.3")],
    );
}

#[test]
fn a_malformed_name_is_skipped_with_one_line() {
    let a = arch();
    let names: Vec<String> = vec![
        format!("torch-2.7-cuda-12.6-cpython-3.9-abi4-{a}-linux"),
        format!("torch-2.7-cuda-12.6-cpython-3.9-abi3-{a}-linux"),
        "csrc".to_owned(),
    ];
    let world = world(&names);
    let torch = [("STUB_TORCH_VERSION", "2.7.0"), ("STUB_TORCH_CUDA", "12.6")];
    let out = download(&world, "0.19.1", &torch);
    assert_ok(&out);
    assert_eq!(downloaded(&world), [names[1].clone()]);
    let err = stderr(&out);
    // Substring: the one line about `abi4` among the download's other status lines.
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("abi4")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    // Substring: the skip line names the scratch mirror's commit and path.
    assert!(
        lines[0].contains("unknown Python ABI `abi4` (expected abi3 or abi3t)"),
        "{err}"
    );
    assert_eq!(err.matches("build/csrc").count(), 1, "{err}");
}

/// A `kernel-depends` declared only in the `sdk` variant of `acme/uses-sdk`.
fn write_sdk_kernels(mirror: &Path) {
    let metadata = |name: &str, depends: &str| {
        format!(
            "{{\"name\": \"{name}\", \"id\": \"_{id}_cpu_0000000\", \"version\": 1, \
             \"license\": \"apache-2.0\", \
             \"python-depends\": [], \"backend\": {{\"type\": \"cpu\"}}, \
             \"kernel-depends\": [{depends}]}}\n",
            id = name.replace('-', "_")
        )
    };
    let repo = |repo: &str, sha: &str, files: &[(&str, String)]| {
        let dir = mirror.join("repos/kernels").join(repo);
        for (path, content) in files {
            let path = dir.join("commits/c1/tree").join(path);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, content).unwrap();
        }
        fs_err::write(
            dir.join("commits/c1/commit.toml"),
            format!("sha = \"{sha}\"\ntitle = \"Build\"\n"),
        )
        .unwrap();
        fs_err::write(
            dir.join("repo.toml"),
            "commits = [\"c1\"]\n\n[branches]\nmain = \"c1\"\nv1 = \"c1\"\n",
        )
        .unwrap();
    };
    repo(
        "kernels-test/uses-sdk",
        "5555555555555555555555555555555555555555",
        &[
            ("build/torch-cpu/metadata.json", metadata("uses-sdk", "")),
            ("build/torch-cpu/uses_sdk/__init__.py", "x = 1\n".to_owned()),
            (
                "build/sdk/metadata.json",
                metadata(
                    "uses-sdk",
                    "{\"repo-id\": \"kernels-test/sdk-dep\", \"version\": 1}",
                ),
            ),
            ("build/sdk/uses_sdk/__init__.py", "x = 1\n".to_owned()),
        ],
    );
    repo(
        "kernels-test/sdk-dep",
        "6666666666666666666666666666666666666666",
        &[
            ("build/torch-cpu/metadata.json", metadata("sdk-dep", "")),
            ("build/torch-cpu/sdk_dep/__init__.py", "y = 1\n".to_owned()),
        ],
    );
    fs_err::create_dir_all(mirror.join("orgs")).unwrap();
    fs_err::write(
        mirror.join("orgs/kernels-test.toml"),
        "fullname = \"Kernels Test\"\ntrusted_kernel_publisher = true\n",
    )
    .unwrap();
}

#[test]
fn the_0_19_lock_follows_kernel_depends_of_sdk_variants() {
    let pyproject = "[project]\nname = \"app\"\nversion = \"0.1.0\"\n\n[tool.kernels.dependencies]\n\"kernels-test/uses-sdk\" = 1\n";
    for (runtime, reference, entries) in [
        ("0.19.1", "kernels-0.19.1", 2),
        ("0.18.3", "kernels-0.18.3", 1),
    ] {
        let world =
            TestContext::with_generated_mirror(write_sdk_kernels, &[]).with_pyproject(pyproject);
        world.run_ok(&["lock", "--target-runtime", runtime]);
        let ours = world.lockfile();
        let locked: serde_json::Value = serde_json::from_str(&ours).unwrap();
        assert_eq!(
            locked.as_array().unwrap().len(),
            entries,
            "{runtime}: {ours}"
        );

        // The reference's own lock of the same project, byte for byte.
        fs_err::remove_file(world.project.join("kernels.lock")).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let script = common::pyref_root().join(reference).join("bin/kernels");
        let out = common::python(reference, world.endpoint(), cache.path())
            .arg(&script)
            .arg("lock")
            .arg(&world.project)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{reference}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(world.lockfile(), ours, "{runtime}");
    }
}

#[test]
fn env_prefers_the_dotted_name_for_a_0_19_target() {
    let world = TestContext::world()
        .with_stub_torch()
        .with_env("STUB_TORCH_CUDA", "12.6");
    let preferred = |runtime: &str| {
        let out = world.run(&["env", "--target-runtime", runtime]);
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let row = text
            .lines()
            // Substring: the row's first field is padded by the table's widest name.
            .find(|l| l.contains("Preferred"))
            .map(str::to_owned);
        row.unwrap_or_else(|| panic!("no Preferred row:\n{text}"))
    };
    let a = arch();
    let row = preferred("0.19.1");
    let dotted = row
        .find("torch-2.7-cxx11-cuda-12.6-cpython-3.")
        .expect(&row);
    let legacy = row
        .find(&format!("torch27-cxx11-cu126-{a}-linux"))
        .expect(&row);
    assert!(dotted < legacy, "{row}");
    // Substring: the order of two names in a row whose arch part is the host's.
    assert!(
        row.contains("-abi3-") && row.ends_with("torch-cuda, torch-universal"),
        "{row}"
    );
    let row = preferred("0.18.3");
    // A negative check: no name of the dotted grammar in a 0.18 row.
    assert!(!row.contains("cpython"), "{row}");
    // Substring: the row's tail, after the host-dependent arch names.
    assert!(
        row.contains(&format!("torch27-cxx11-cu126-{a}-linux, torch-cuda")),
        "{row}"
    );
}

/// A `PYTHONPATH` entry in `dir` without torch where MLX reports Metal: the
/// stub platform (`sitecustomize.py` of the stub torch, copied) and a
/// stand-in `mlx` package whose `mlx.core.metal.is_available()` is true.
fn stub_mlx_only(dir: &Path) -> String {
    fs_err::copy(
        common::repo_root().join("tests/python/stub_torch/sitecustomize.py"),
        dir.join("sitecustomize.py"),
    )
    .unwrap();
    fs_err::create_dir_all(dir.join("mlx")).unwrap();
    fs_err::write(dir.join("mlx/__init__.py"), "").unwrap();
    fs_err::write(
        dir.join("mlx/core.py"),
        "class metal:\n    @staticmethod\n    def is_available():\n        return True\n",
    )
    .unwrap();
    dir.to_str().unwrap().to_owned()
}

/// What 0.19.1 picks among `names` without torch, with `python_path` (from
/// [`stub_mlx_only`]) and the stub `platform` variables `stub_platform` set
/// only after `kernels` is imported (its HTTP stack loads macOS libraries
/// when `platform.system()` says Darwin at import).
fn mlx_reference_pick(
    python_path: &str,
    stub_platform: &[(&str, &str)],
    names: &[String],
) -> String {
    let script = "import os, sys\n\
         from kernels._internals.variants import parse_variant, resolve_variants\n\
         for pair in os.environ['PLATFORM'].split(';'):\n\
         \x20   key, _, value = pair.partition('=')\n\
         \x20   os.environ[key] = value\n\
         import sitecustomize\n\
         sitecustomize.apply()\n\
         best = resolve_variants([parse_variant(n) for n in sys.argv[1:]])[0]\n\
         print(best[0].variant_str if best else '')\n";
    let platform: Vec<String> = stub_platform
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let out = Command::new(common::pyref_python("kernels-0.19.1"))
        .env("PYTHONPATH", python_path)
        .env("PLATFORM", platform.join(";"))
        .arg("-c")
        .arg(script)
        .args(names)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// An interpreter without torch, with MLX on a Mac (macOS 26): 0.19.1 loads
/// `mlx-metal` (Metal detected through MLX), and so does our download for
/// the 0.19 profile; 0.18 needs torch, and so does ours.
#[test]
fn mlx_only_metal_downloads_what_0_19_1_loads() {
    let names: Vec<String> = [
        "torch-2.9-metal-cpython-3.9-abi3-aarch64-darwin",
        "torch-stable-abi-2.9-metal-cpython-3.9-abi3-aarch64-darwin",
        "torch29-metal-aarch64-darwin",
        "mlx-metal",
        "torch-cpu",
        "torch-universal",
    ]
    .map(str::to_owned)
    .to_vec();
    let world = world(&names);
    let python_path = tempfile::tempdir().unwrap();
    let python_path = stub_mlx_only(python_path.path());
    let env = [
        ("PYTHONPATH", python_path.as_str()),
        ("STUB_PLATFORM_SYSTEM", "Darwin"),
        ("STUB_PLATFORM_MACHINE", "arm64"),
        ("STUB_PLATFORM_MAC_VER", "26.1"),
    ];
    assert_eq!(
        mlx_reference_pick(&python_path, &env[1..], &names),
        "mlx-metal"
    );
    let out = world.download_with(&["--target-runtime", "0.19.1"], &env);
    assert_ok(&out);
    assert_eq!(downloaded(&world), ["mlx-metal"]);
    assert!(stderr(&out).contains("no torch (MLX)"), "{}", stderr(&out));
    let _ = fs_err::remove_dir_all(&world.cache);
    let old = world.download_with(&["--target-runtime", "0.18.3"], &env);
    assert_eq!(old.status.code(), Some(1), "{}", stderr(&old));
    assert!(stderr(&old).contains("torch"), "{}", stderr(&old));
}

/// Reference 0.19.1's `kernels variants ARGS --json` against `world` in the
/// MLX-only interpreter of [`mlx_reference_pick`] (the stub `platform` set
/// after `kernels` is imported).
fn mlx_reference_variants(
    world: &TestContext,
    python_path: &str,
    stub_platform: &[(&str, &str)],
    args: &[&str],
) -> serde_json::Value {
    let script = "import os, sys\n\
         from kernels._internals.cli import main\n\
         for pair in os.environ['PLATFORM'].split(';'):\n\
         \x20   key, _, value = pair.partition('=')\n\
         \x20   os.environ[key] = value\n\
         import sitecustomize\n\
         sitecustomize.apply()\n\
         sys.argv = ['kernels', *sys.argv[1:]]\n\
         sys.exit(main())\n";
    let platform: Vec<String> = stub_platform
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let out = common::python(
        "kernels-0.19.1",
        world.endpoint(),
        &world.tmp.path().join("python-cache"),
    )
    .env("PYTHONPATH", python_path)
    .env("PLATFORM", platform.join(";"))
    .current_dir(&world.project)
    .arg("-c")
    .arg(script)
    .arg("variants")
    .args(args)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `(variant, compatible, preferred)` of the first revision of a `kernels
/// variants --json` document.
fn variant_verdicts(doc: &serde_json::Value) -> Vec<(String, bool, bool)> {
    let mut verdicts: Vec<(String, bool, bool)> = doc["revisions"][0]["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["variant"].as_str().unwrap().to_owned(),
                v["compatible"].as_bool().unwrap(),
                v["preferred"].as_bool().unwrap(),
            )
        })
        .collect();
    verdicts.sort();
    verdicts
}

/// In the MLX-only interpreter of [`mlx_only_metal_downloads_what_0_19_1_loads`],
/// `env` (text and JSON), `variants` (against 0.19.1's own `variants --json`),
/// `info`, `describe-api` and `verify PATH` decide for the same environment as
/// `download`:
/// Metal through MLX, `mlx-metal` preferred; under 0.18 each still says
/// torch is missing.
#[test]
fn mlx_only_metal_every_command_agrees_with_0_19_1() {
    let names: Vec<String> = [
        "torch-2.9-metal-cpython-3.9-abi3-aarch64-darwin",
        "torch29-metal-aarch64-darwin",
        "mlx-metal",
        "torch-cpu",
        "torch-universal",
    ]
    .map(str::to_owned)
    .to_vec();
    let world = world(&names);
    let python_path = tempfile::tempdir().unwrap();
    let python_path = stub_mlx_only(python_path.path());
    let env = [
        ("PYTHONPATH", python_path.as_str()),
        ("STUB_PLATFORM_SYSTEM", "Darwin"),
        ("STUB_PLATFORM_MACHINE", "arm64"),
        ("STUB_PLATFORM_MAC_VER", "26.1"),
    ];
    let run = |args: &[&str]| {
        let mut cmd = world.kernels();
        cmd.args(args).envs(env);
        cmd.output().unwrap()
    };
    let json = |args: &[&str]| -> serde_json::Value {
        let out = run(args);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("kernels {args:?}: {e}: {}", stderr(&out)))
    };
    let new = ["--target-runtime", "0.19.1"];

    let doc = json(&[&["env", "--format", "json"][..], &new].concat());
    assert!(doc["torch"].is_null(), "{doc}");
    let mlx = &doc["mlx_metal"];
    assert_eq!(mlx["backend"], "metal", "{doc}");
    assert_eq!(mlx["sources"]["backend"]["kind"], "mlx", "{doc}");
    assert!(
        mlx["preference"]
            .as_array()
            .unwrap()
            .contains(&"mlx-metal".into()),
        "{doc}"
    );
    let text = String::from_utf8_lossy(&run(&[&["env"][..], &new].concat()).stdout).into_owned();
    assert!(text.contains("none (MLX on Metal)"), "{text}");
    assert!(!text.contains("not found"), "{text}");

    let args = ["acme/grammar", "--json", "--revision", "main"];
    let theirs = mlx_reference_variants(&world, &python_path, &env[1..], &args);
    let out = run(&[&["variants"][..], &args, &new].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts = variant_verdicts(&ours);
    assert_eq!(verdicts, variant_verdicts(&theirs));
    let preferred: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.2)
        .map(|v| v.0.as_str())
        .collect();
    assert_eq!(preferred, ["mlx-metal"]);

    let out = run(&[&["info", "acme/grammar", "--json"][..], &new].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["variant"], "mlx-metal", "{info}");

    // The stand-in repository has no `symbols.json`: the error names the variant.
    let api = run(&[
        &["describe-api", "acme/grammar", "--revision", "main"][..],
        &new,
    ]
    .concat());
    assert!(
        stderr(&api).contains("(variant: mlx-metal)"),
        "{}",
        stderr(&api)
    );

    let build = tempfile::tempdir().unwrap();
    for name in &names {
        let dir = build.path().join("build").join(name).join("grammar");
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("__init__.py"), format!("# {name}\n")).unwrap();
    }
    let path = build.path().to_str().unwrap();
    let text =
        String::from_utf8_lossy(&run(&[&["verify", path][..], &new].concat()).stdout).into_owned();
    let loaded: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("(loaded here)"))
        .collect();
    assert_eq!(loaded.len(), 1, "{text}");
    assert!(loaded[0].trim_start().starts_with("mlx-metal "), "{text}");

    // 0.18 selects nothing without torch, in every command.
    let old = ["--target-runtime", "0.18.3"];
    let doc = json(&[&["env", "--format", "json"][..], &old].concat());
    assert!(doc.get("mlx_metal").is_none(), "{doc}");
    assert!(doc["torch_error"].is_string(), "{doc}");
    let info = json(&[&["info", "acme/grammar", "--json"][..], &old].concat());
    assert!(info["variant"].is_null(), "{info}");
}
