//! Integration tests for `kernels to-wheel`: wheels for every kind of build
//! variant from a snapshot made here, checked by reading them back, by
//! rebuilding, by pip and `importlib.metadata`, by check-wheel-contents and
//! twine, and against the reference wheel builder of `kernels` 0.11.3.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use kernels_test_support::snapshot::{SnapshotText, sorted_kernel_lines};
use kernels_test_support::{NO_HUB, Server, kernels, pyref_python, python, snapshot};

const REPO: &str = "kernels-community/activation";
/// An endpoint nothing listens on: to-wheel must not need the network here.
const NO_ENDPOINT: &str = NO_HUB;

fn write(path: &Path, content: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, content).unwrap();
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A flat build: the module is the variant directory itself, plus the
/// compatibility package `activation/` and `metadata.json`.
fn flat_variant(build: &Path, variant: &str, library: &str) {
    let dir = build.join(variant);
    write(
        &dir.join("__init__.py"),
        &format!("VARIANT = {variant:?}\n"),
    );
    write(&dir.join("_ops.py"), "import torch\nops = torch.ops\n");
    write(&dir.join(library), &format!("binary for {variant}\n"));
    write(
        &dir.join("metadata.json"),
        "{\n  \"version\": 1,\n  \"license\": \"Apache-2.0\",\n  \"upstream\": \"https://github.com/example/activation.git\",\n  \"python-depends\": []\n}\n",
    );
    write(&dir.join("activation/__init__.py"), "from .. import *\n");
    write(&dir.join("__pycache__/_ops.cpython-311.pyc"), "bytecode");
}

/// A nested build: the package is `build/<variant>/activation/`.
fn nested_variant(build: &Path, variant: &str, library: Option<&str>) {
    let pkg = build.join(variant).join("activation");
    write(
        &pkg.join("__init__.py"),
        &format!("VARIANT = {variant:?}\n"),
    );
    write(
        &pkg.join("layers/__init__.py"),
        "class SiluAndMul:\n    pass\n",
    );
    write(&pkg.join("stale.pyc"), "bytecode");
    write(
        &pkg.join("__pycache__/__init__.cpython-311.pyc"),
        "bytecode",
    );
    if let Some(library) = library {
        let so = pkg.join(library);
        write(&so, &format!("binary for {variant}\n"));
        #[cfg(unix)]
        make_executable(&so);
    }
}

/// `snap/build/` with one variant of every kind, plus the stray `torch-ext`.
fn snapshot(root: &Path) -> PathBuf {
    let snap = root.join("snap");
    let build = snap.join("build");
    nested_variant(
        &build,
        "torch27-cxx11-cu126-x86_64-linux",
        Some("_activation_0a1b2c3.abi3.so"),
    );
    flat_variant(
        &build,
        "torch210-cxx11-rocm71-x86_64-linux",
        "_activation_rocm.abi3.so",
    );
    flat_variant(
        &build,
        "torch210-metal-aarch64-darwin",
        "_activation_metal.abi3.so",
    );
    flat_variant(
        &build,
        "torch29-cu130-x86_64-windows",
        "_activation_win.pyd",
    );
    flat_variant(
        &build,
        "torch-stable-abi29-cu126-x86_64-linux",
        "_activation_stable.abi3.so",
    );
    flat_variant(&build, "torch-cuda", "layers.py");
    nested_variant(&build, "torch-universal", None);
    write(&build.join("torch-ext/README.md"), "not a variant\n");
    write(&build.join("stray-file.txt"), "ignored\n");
    snap
}

/// Expected wheels: variant → (file name, METADATA version, Requires-Dist).
fn expected() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
)> {
    vec![
        (
            "torch-cuda",
            "activation-0.0.3+cuda-py3-none-any.whl",
            "0.0.3+cuda",
            Some("torch"),
        ),
        (
            "torch-stable-abi29-cu126-x86_64-linux",
            "activation-0.0.3+torchstableabi29cu126-cp39-abi3-manylinux_2_28_x86_64.whl",
            "0.0.3+torchstableabi29cu126",
            Some("torch>=2.9"),
        ),
        (
            "torch-universal",
            "activation-0.0.3-py3-none-any.whl",
            "0.0.3",
            None,
        ),
        (
            "torch210-cxx11-rocm71-x86_64-linux",
            "activation-0.0.3+torch210rocm71cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
            "0.0.3+torch210rocm71cxx11",
            Some("torch==2.10.*"),
        ),
        (
            "torch210-metal-aarch64-darwin",
            "activation-0.0.3+torch210metal-cp39-abi3-macosx_11_0_arm64.whl",
            "0.0.3+torch210metal",
            Some("torch==2.10.*"),
        ),
        (
            "torch27-cxx11-cu126-x86_64-linux",
            "activation-0.0.3+torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
            "0.0.3+torch27cu126cxx11",
            Some("torch==2.7.*"),
        ),
        (
            "torch29-cu130-x86_64-windows",
            "activation-0.0.3+torch29cu130-cp39-abi3-win_amd64.whl",
            "0.0.3+torch29cu130",
            Some("torch==2.9.*"),
        ),
    ]
}

fn to_wheel(cache: &Path) -> Command {
    let mut cmd = kernels(NO_ENDPOINT, cache);
    cmd.env_remove("SOURCE_DATE_EPOCH").arg("to-wheel");
    cmd
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run command");
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Builds every wheel of `snap` into `out` and returns the printed paths.
fn build_all(tmp: &Path, snap: &Path, out: &Path) -> Vec<PathBuf> {
    let output = run_ok(
        to_wheel(&tmp.join("cache"))
            .args([REPO, "0.0.3", "--from-dir"])
            .arg(snap)
            .arg("--out-dir")
            .arg(out),
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// Every entry of a wheel: name → (unix mode, content).
fn read_wheel(path: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(path).unwrap()).unwrap();
    let mut entries = BTreeMap::new();
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let name = file.name().unwrap().into_owned();
        assert_eq!(file.compression(), zip::CompressionMethod::Deflated);
        let time = file.last_modified().unwrap();
        assert_eq!(
            (
                time.year(),
                time.month(),
                time.day(),
                time.hour(),
                time.minute()
            ),
            (1980, 1, 1, 0, 0),
            "{} in {}",
            name,
            path.display()
        );
        let mut content = Vec::new();
        file.read_to_end(&mut content).unwrap();
        entries.insert(name, (file.unix_mode().unwrap() & 0o777, content));
    }
    entries
}

/// Whether the archive entry `name` lies in the wheel's `*.dist-info/` folder.
fn in_dist_info(name: &str) -> bool {
    name.split_once('/')
        .is_some_and(|(top, _)| top.ends_with(".dist-info"))
}

fn names_in_order(path: &Path) -> Vec<String> {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| archive.by_index(i).unwrap().name().unwrap().into_owned())
        .collect()
}

fn sha256_file(path: &Path) -> String {
    hex::encode(Sha256::digest(fs_err::read(path).unwrap()))
}

#[test]
fn builds_a_wheel_for_every_variant_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path());
    let out = tmp.path().join("dist");
    let output = run_ok(
        to_wheel(&tmp.path().join("cache"))
            .args([REPO, "0.0.3", "--from-dir"])
            .arg(&snap)
            .arg("--out-dir")
            .arg(&out),
    );
    snapshot!(
        "every_variant_kind_stderr",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Vec<PathBuf> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    let expected = expected();
    assert_eq!(
        printed,
        expected
            .iter()
            .map(|(_, file, _, _)| out.join(file))
            .collect::<Vec<_>>()
    );

    for (variant, file, version, requirement) in expected {
        let path = out.join(file);
        let entries = read_wheel(&path);
        let dist_info = format!("activation-{version}.dist-info");

        // Generated files come last, RECORD at the very end; package files are sorted.
        let order = names_in_order(&path);
        let package: Vec<&String> = order.iter().filter(|n| !in_dist_info(n)).collect();
        let mut sorted = package.clone();
        sorted.sort();
        assert_eq!(package, sorted, "{file}");
        assert_eq!(order.last().unwrap(), &format!("{dist_info}/RECORD"));

        let text = |name: &str| {
            String::from_utf8(entries[&format!("{dist_info}/{name}")].1.clone()).unwrap()
        };
        let metadata = text("METADATA");
        assert!(metadata.starts_with(&format!(
            "Metadata-Version: 2.1\nName: activation\nVersion: {version}\nSummary: "
        )));
        let fields = headers(metadata.as_bytes());
        let all = |fields: &[(String, String)], key: &str| {
            fields
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(all(&fields, "Requires-Python"), [">=3.9"], "{metadata}");
        assert_eq!(
            all(&fields, "Requires-Dist"),
            requirement.into_iter().collect::<Vec<_>>(),
            "{metadata}"
        );
        let wheel = text("WHEEL");
        let wheel_fields = headers(wheel.as_bytes());
        let tag = file
            .trim_end_matches(".whl")
            .splitn(3, '-')
            .nth(2)
            .unwrap()
            .to_owned();
        assert_eq!(all(&wheel_fields, "Tag"), [tag.as_str()], "{wheel}");
        assert_eq!(
            all(&wheel_fields, "Root-Is-Purelib"),
            [tag.ends_with("-none-any").to_string()],
            "{wheel}"
        );

        // RECORD lists every other entry with its urlsafe sha256 and size.
        let record = text("RECORD");
        let mut lines: Vec<&str> = record.lines().collect();
        assert_eq!(lines.pop(), Some(format!("{dist_info}/RECORD,,").as_str()));
        let listed: BTreeSet<&str> = lines
            .iter()
            .map(|line| line.split(',').next().unwrap())
            .collect();
        let stored: BTreeSet<&str> = entries
            .keys()
            .map(String::as_str)
            .filter(|n| !n.ends_with("/RECORD"))
            .collect();
        assert_eq!(listed, stored, "{file}");
        for line in lines {
            let [name, hash, size] = line.split(',').collect::<Vec<_>>()[..] else {
                panic!("bad RECORD line {line:?}");
            };
            let content = &entries[name].1;
            assert_eq!(
                hash,
                format!("sha256={}", URL_SAFE_NO_PAD.encode(Sha256::digest(content)))
            );
            assert_eq!(size, content.len().to_string());
        }

        // No bytecode; the package lives under `activation/`.
        assert!(
            entries
                .keys()
                .all(|n| !n.ends_with(".pyc") && !n.split('/').any(|part| part == "__pycache__")),
            "{file}: {:?}",
            entries.keys()
        );
        assert!(entries.contains_key("activation/__init__.py"), "{file}");
        let flat = !variant.starts_with("torch27") && variant != "torch-universal";
        if flat {
            // Flat builds pack the whole variant directory under the package.
            assert!(entries.contains_key("activation/metadata.json"));
            assert!(entries.contains_key("activation/activation/__init__.py"));
            assert_eq!(all(&fields, "License"), ["Apache-2.0"], "{metadata}");
            assert_eq!(
                all(&fields, "Project-URL"),
                ["Upstream, https://github.com/example/activation.git"],
                "{metadata}"
            );
        } else {
            assert!(entries.contains_key("activation/layers/__init__.py"));
            assert_eq!(all(&fields, "License"), Vec::<String>::new(), "{metadata}");
        }
        if variant == "torch27-cxx11-cu126-x86_64-linux" {
            // File modes are kept.
            assert_eq!(entries["activation/_activation_0a1b2c3.abi3.so"].0, 0o755);
            assert_eq!(entries["activation/__init__.py"].0, 0o644);
        }
    }
}

#[test]
fn rebuilds_are_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path());
    let first = build_all(tmp.path(), &snap, &tmp.path().join("a"));
    // Touch every file: mtimes must not leak into the wheels.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for entry in walkdir::WalkDir::new(&snap) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let content = fs_err::read(entry.path()).unwrap();
            fs_err::write(entry.path(), content).unwrap();
        }
    }
    let second = build_all(tmp.path(), &snap, &tmp.path().join("b"));
    assert_eq!(first.len(), 7);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.file_name(), b.file_name());
        assert_eq!(sha256_file(a), sha256_file(b), "{}", a.display());
    }

    // SOURCE_DATE_EPOCH sets the entry timestamps (2024-02-29T12:34:56Z).
    let out = tmp.path().join("dated");
    run_ok(
        to_wheel(&tmp.path().join("cache"))
            .env("SOURCE_DATE_EPOCH", "1709210096")
            .args([REPO, "0.0.3", "--variant", "torch-universal", "--from-dir"])
            .arg(&snap)
            .arg("--out-dir")
            .arg(&out),
    );
    let dated = out.join("activation-0.0.3-py3-none-any.whl");
    let mut archive = zip::ZipArchive::new(fs_err::File::open(&dated).unwrap()).unwrap();
    let time = archive.by_index(0).unwrap().last_modified().unwrap();
    assert_eq!(
        (
            time.year(),
            time.month(),
            time.day(),
            time.hour(),
            time.minute(),
            time.second()
        ),
        (2024, 2, 29, 12, 34, 56)
    );
}

/// Runs a Python program with `python`, returning stdout.
fn python_ok(python: &Path, args: &[&str]) -> String {
    let output = run_ok(
        Command::new(python)
            .args(args)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_NO_INDEX", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    String::from_utf8(output.stdout).unwrap()
}

const REPORT_METADATA: &str = "import importlib.metadata as m, json, sys\n\
    paths = sys.argv[1:] or None\n\
    d = next(iter(m.distributions(name='activation', path=paths) if paths else [m.distribution('activation')]))\n\
    print(json.dumps({'name': d.metadata['Name'], 'version': d.version, 'files': sorted(str(f) for f in d.files)}))";

fn assert_reported(report: &str, version: &str, wheel: &Path) {
    let report: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert_eq!(report["name"], "activation");
    assert_eq!(report["version"], version);
    let files: BTreeSet<String> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    let mut stored: BTreeSet<String> = read_wheel(wheel).into_keys().collect();
    // pip adds its own bookkeeping files to the installed dist-info.
    let dist_info = format!("activation-{version}.dist-info");
    for extra in ["INSTALLER", "REQUESTED", "direct_url.json"] {
        stored.insert(format!("{dist_info}/{extra}"));
    }
    let missing: Vec<&String> = files.difference(&stored).collect();
    assert!(missing.is_empty(), "unexpected installed files {missing:?}");
    let packed: BTreeSet<String> = read_wheel(wheel).into_keys().collect();
    let not_installed: Vec<&String> = packed.difference(&files).collect();
    assert!(
        not_installed.is_empty(),
        "{not_installed:?} not installed from {}",
        wheel.display()
    );
}

#[test]
fn pip_installs_the_wheels_and_tools_accept_them() {
    let tools = pyref_python("wheel-tools");
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path());
    let wheels = build_all(tmp.path(), &snap, &tmp.path().join("dist"));

    let host_tag = format!("manylinux_2_28_{}", std::env::consts::ARCH);
    for ((_, file, version, _), wheel) in expected().into_iter().zip(&wheels) {
        assert_eq!(wheel.file_name().unwrap(), file);
        let native = file.ends_with("-py3-none-any.whl")
            || (cfg!(target_os = "linux") && file.ends_with(&format!("-{host_tag}.whl")));
        let report = if native {
            // A fresh virtual environment per wheel.
            let venv = tmp.path().join(format!("venv-{version}"));
            python_ok(
                &tools,
                &["-m", "venv", "--without-pip", venv.to_str().unwrap()],
            );
            let venv_python = venv.join("bin/python");
            python_ok(
                &tools,
                &[
                    "-m",
                    "pip",
                    "--python",
                    venv_python.to_str().unwrap(),
                    "install",
                    "--no-deps",
                    "--no-compile",
                    wheel.to_str().unwrap(),
                ],
            );
            python_ok(&venv_python, &["-c", REPORT_METADATA])
        } else {
            // Other platforms: let pip check the tags against the target
            // platform and unpack into a directory.
            let platform = file
                .trim_end_matches(".whl")
                .rsplit('-')
                .next()
                .unwrap()
                .to_owned();
            let target = tmp.path().join(format!("target-{version}"));
            python_ok(
                &tools,
                &[
                    "-m",
                    "pip",
                    "install",
                    "--no-deps",
                    "--no-compile",
                    "--only-binary=:all:",
                    "--platform",
                    &platform,
                    "--python-version",
                    "3.9",
                    "--implementation",
                    "cp",
                    "--abi",
                    "abi3",
                    "--target",
                    target.to_str().unwrap(),
                    wheel.to_str().unwrap(),
                ],
            );
            python_ok(&tools, &["-c", REPORT_METADATA, target.to_str().unwrap()])
        };
        assert_reported(&report, version, wheel);
    }

    // check-wheel-contents and twine check read every wheel.
    let wheel_args: Vec<&str> = wheels.iter().map(|w| w.to_str().unwrap()).collect();
    let mut args = vec!["-m", "check_wheel_contents"];
    args.extend(&wheel_args);
    let report = python_ok(&tools, &args);
    assert_eq!(report.matches(": OK").count(), 7, "{report}");
    let mut args = vec!["-m", "twine", "check", "--strict"];
    args.extend(&wheel_args);
    let report = python_ok(&tools, &args);
    assert_eq!(report.matches("PASSED").count(), 7, "{report}");
}

/// The package files of a wheel's RECORD: path → `sha256=…,size`.
fn package_record(path: &Path) -> BTreeMap<String, String> {
    let entries = read_wheel(path);
    let (_, (_, record)) = entries
        .iter()
        .find(|(name, _)| name.ends_with(".dist-info/RECORD"))
        .unwrap();
    String::from_utf8(record.clone())
        .unwrap()
        .lines()
        .filter(|line| !in_dist_info(line))
        .map(|line| {
            let (name, rest) = line.split_once(',').unwrap();
            (name.to_owned(), rest.to_owned())
        })
        .collect()
}

/// `Key: Value` header lines of a `WHEEL` or `METADATA` text, in order (the
/// description body after the first blank line is left out).
fn headers(text: &[u8]) -> Vec<(String, String)> {
    String::from_utf8(text.to_vec())
        .unwrap()
        .lines()
        .take_while(|line| !line.is_empty())
        .map(|line| {
            let (key, value) = line.split_once(": ").unwrap();
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

fn header<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// PEP 503 normalization of a project name.
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.to_ascii_lowercase().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The name our wheel has where the reference 0.11.3 wrote `theirs`, after
/// the documented fixes: ROCm local versions without the `cu` prefix, and
/// pure wheels tagged `py3` instead of `py<XY>`.
fn fixed_name(theirs: &str) -> String {
    let mut name = theirs.replace("curocm", "rocm");
    if let Some(stem) = name.strip_suffix("-none-any.whl") {
        let (head, _python) = stem.rsplit_once('-').unwrap();
        name = format!("{head}-py3-none-any.whl");
    }
    name
}

/// Builds every wheel of `repo` `version` with the reference 0.11.3 CLI and
/// with ours, both downloading from `server`, and checks that they agree
/// apart from the fixes listed in docs/to-wheel.md. Returns the reference's
/// wheel file names.
fn compare_with_reference(server: &Server, repo: &str, version: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    fs_err::create_dir_all(&theirs).unwrap();
    run_ok(
        python(
            "kernels-0.11.3",
            &server.endpoint,
            &tmp.path().join("ref-cache"),
        )
        .args([
            "-c",
            "from kernels.cli import main; main()",
            "to-wheel",
            repo,
            version,
        ])
        .env("SOURCE_DATE_EPOCH", "315532800")
        .current_dir(&theirs),
    );
    let ours = tmp.path().join("ours");
    run_ok(
        kernels(&server.endpoint, &tmp.path().join("cache"))
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["to-wheel", repo, version, "--out-dir"])
            .arg(&ours),
    );
    let list = |dir: &Path| -> BTreeSet<String> {
        fs_err::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let their_names = list(&theirs);
    assert!(!their_names.is_empty());
    assert_eq!(
        list(&ours),
        their_names.iter().map(|n| fixed_name(n)).collect(),
        "the same wheels, named as documented"
    );

    for their_name in &their_names {
        let our_name = fixed_name(their_name);
        let (mine, ref_entries) = (
            read_wheel(&ours.join(&our_name)),
            read_wheel(&theirs.join(their_name)),
        );
        // Package files: same names, contents and modes; RECORD lines agree.
        let package = |entries: &BTreeMap<String, (u32, Vec<u8>)>| {
            entries
                .iter()
                .filter(|(name, _)| !in_dist_info(name))
                .map(|(name, entry)| (name.clone(), entry.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(package(&mine), package(&ref_entries), "{our_name}");
        assert_eq!(
            package_record(&ours.join(&our_name)),
            package_record(&theirs.join(their_name)),
            "{our_name}"
        );

        // The same dist-info directory and files.
        let dist_info = |entries: &BTreeMap<String, (u32, Vec<u8>)>| {
            entries
                .keys()
                .filter(|name| in_dist_info(name))
                .cloned()
                .collect::<BTreeSet<_>>()
        };
        let expected_dist_info: BTreeSet<String> = dist_info(&ref_entries)
            .iter()
            .map(|n| n.replace("curocm", "rocm"))
            .collect();
        assert_eq!(dist_info(&mine), expected_dist_info, "{our_name}");
        let generated = |entries: &BTreeMap<String, (u32, Vec<u8>)>, file: &str| {
            let (_, (_, text)) = entries
                .iter()
                .find(|(name, _)| name.ends_with(&format!(".dist-info/{file}")))
                .unwrap();
            headers(text)
        };

        // WHEEL: equal but for the generator and the fixed tag.
        let (wheel, ref_wheel) = (generated(&mine, "WHEEL"), generated(&ref_entries, "WHEEL"));
        let keys =
            |fields: &[(String, String)]| fields.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&wheel), keys(&ref_wheel), "{our_name}");
        for (key, value) in &ref_wheel {
            let expected = match key.as_str() {
                "Generator" => {
                    assert_eq!(value, "kernels (0.11.3)");
                    format!("kernels ({})", env!("CARGO_PKG_VERSION"))
                }
                "Tag" => {
                    let tag = fixed_name(&format!("x-1-{value}.whl"));
                    tag["x-1-".len()..tag.len() - ".whl".len()].to_owned()
                }
                _ => value.clone(),
            };
            assert_eq!(
                header(&wheel, key),
                Some(expected.as_str()),
                "{our_name} {key}"
            );
        }

        // METADATA: every reference field, with the documented fixes; ours
        // adds only license, project URLs and the description type.
        let (meta, ref_meta) = (
            generated(&mine, "METADATA"),
            generated(&ref_entries, "METADATA"),
        );
        let our_version = our_name.split('-').nth(1).unwrap();
        for (key, value) in &ref_meta {
            let ours_value = header(&meta, key);
            match key.as_str() {
                "Name" => assert_eq!(normalized(ours_value.unwrap()), normalized(value)),
                // Ours carries the local part, as the file name does.
                "Version" => {
                    assert_eq!(ours_value, Some(our_version));
                    assert!(our_version.starts_with(value.as_str()));
                }
                "Summary" => assert!(ours_value.is_some_and(|s| !s.is_empty())),
                "Requires-Dist" if their_name.ends_with("-none-any.whl") => {
                    // Universal: the reference pins nothing useful (`torch`); ours has none.
                    assert_eq!(value, "torch");
                    assert_eq!(ours_value, None, "{our_name}");
                }
                "Requires-Dist" if value == "torch==21.0.*" => {
                    // torch210 is torch 2.10, not 21.0.
                    assert_eq!(ours_value, Some("torch==2.10.*"), "{our_name}");
                }
                _ => assert_eq!(ours_value, Some(value.as_str()), "{our_name} {key}"),
            }
        }
        for (key, _) in &meta {
            assert!(
                header(&ref_meta, key).is_some()
                    || matches!(
                        key.as_str(),
                        "License" | "Project-URL" | "Description-Content-Type"
                    ),
                "{our_name}: unexpected field {key}"
            );
        }
    }
    their_names.into_iter().collect()
}

#[test]
fn matches_the_reference_to_wheel_on_the_bundled_mirror() {
    let server = Server::bundled();
    // All 16 variants of this release are Linux CUDA builds the reference handles.
    let names = compare_with_reference(&server, REPO, "0.0.3");
    assert_eq!(names.len(), 16, "{names:?}");
}

#[test]
fn differs_from_the_reference_only_by_the_documented_fixes() {
    // Five-part Linux variants the reference accepts but labels wrongly, in
    // flat and nested layouts, plus a universal build.
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp
        .path()
        .join("mirror/repos/kernels/kernels-community/activation/commits/c1/tree");
    let build = tree.join("build");
    flat_variant(
        &build,
        "torch210-cxx11-cu128-x86_64-linux",
        "_activation_cu.abi3.so",
    );
    flat_variant(
        &build,
        "torch27-cxx11-rocm63-x86_64-linux",
        "_activation_rocm.abi3.so",
    );
    nested_variant(&build, "torch-universal", None);
    // The reference keeps non-`.pyc` files of `__pycache__`; a Hub repository has none.
    for entry in walkdir::WalkDir::new(&build).contents_first(true) {
        let entry = entry.unwrap();
        if entry.file_name() == "__pycache__"
            || entry.file_name().to_string_lossy().ends_with(".pyc")
        {
            if entry.file_type().is_dir() {
                fs_err::remove_dir_all(entry.path()).unwrap();
            } else {
                fs_err::remove_file(entry.path()).unwrap();
            }
        }
    }
    write(
        &tmp.path()
            .join("mirror/repos/kernels/kernels-community/activation/repo.toml"),
        "also_serve_as = [\"model\"]\ncommits = [\"c1\"]\nlfs = [\"*.so\"]\n\n[branches]\nmain = \"c1\"\n\n[tags]\n\"v0.0.4\" = \"c1\"\n",
    );
    let server = Server::start(&tmp.path().join("mirror"));
    let names = compare_with_reference(&server, REPO, "0.0.4");
    assert_eq!(
        names,
        [
            "activation-0.0.4+torch210cu128cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
            "activation-0.0.4+torch27curocm63cxx11-cp39-abi3-manylinux_2_28_x86_64.whl",
            "activation-0.0.4-py39-none-any.whl",
        ]
    );
}

#[test]
fn reads_a_hub_cache_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let repo = cache.join("kernels--kernels-community--activation");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    write(&repo.join("blobs").join(blob), "VARIANT = 'cached'\n");
    write(&repo.join("refs/v0.0.3"), commit);
    let pkg = repo
        .join("snapshots")
        .join(commit)
        .join("build/torch-universal/activation");
    fs_err::create_dir_all(&pkg).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        format!("../../../../../blobs/{blob}"),
        pkg.join("__init__.py"),
    )
    .unwrap();

    // Offline: by tag `v<version>` through refs/, and by commit.
    for extra in [&[][..], &["--revision", commit][..]] {
        let out = tmp.path().join("dist");
        let output = run_ok(
            to_wheel(&cache)
                .env("HF_HUB_OFFLINE", "1")
                .args([REPO, "0.0.3"])
                .args(extra)
                .arg("--out-dir")
                .arg(&out),
        );
        let path = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
        assert_eq!(path, out.join("activation-0.0.3-py3-none-any.whl"));
        let entries = read_wheel(&path);
        assert_eq!(entries["activation/__init__.py"].1, b"VARIANT = 'cached'\n");
    }

    // Unreachable Hub: a tag that cannot be resolved falls back to the
    // cached snapshot, with a warning.
    let output = run_ok(
        to_wheel(&cache)
            .args([REPO, "0.0.3", "--out-dir"])
            .arg(tmp.path().join("fallback")),
    );
    snapshot!("cached_snapshot_fallback", output);

    // A revision that is not cached: offline, a user error naming the way out;
    // online, the download error.
    let output = to_wheel(&cache)
        .env("HF_HUB_OFFLINE", "1")
        .args([REPO, "9.9.9", "--out-dir"])
        .arg(tmp.path().join("none"))
        .output()
        .unwrap();
    snapshot!("uncached_revision_offline", output);
    let output = to_wheel(&cache)
        .args([REPO, "9.9.9", "--out-dir"])
        .arg(tmp.path().join("none"))
        .output()
        .unwrap();
    snapshot!("uncached_revision_unreachable", output);
    assert!(!tmp.path().join("none").exists());
}

/// Copies `from` into `to`, following nothing (plain files and directories).
fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            fs_err::create_dir_all(&dest).unwrap();
        } else {
            fs_err::copy(entry.path(), &dest).unwrap();
        }
    }
}

#[test]
fn downloads_the_variants_from_the_hub() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path());
    let mirror = tmp.path().join("mirror");
    let repo = mirror.join("repos/kernels/kernels-community/activation");
    copy_tree(&snap, &repo.join("commits/c1/tree"));
    write(
        &repo.join("repo.toml"),
        "commits = [\"c1\"]\nlfs = [\"*.so\", \"*.pyd\"]\n\n[branches]\nmain = \"c1\"\n\n[tags]\n\"v0.0.3\" = \"c1\"\n",
    );
    let server = Server::start(&mirror);
    let cache = tmp.path().join("cache");

    let out = tmp.path().join("hub");
    let output = run_ok(
        kernels(&server.endpoint, &cache)
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["to-wheel", REPO, "0.0.3", "--out-dir"])
            .arg(&out),
    );
    let from_hub: Vec<PathBuf> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect();
    // Same wheels, same contents as from the local snapshot (the Hub does not
    // carry file modes, so whole-file bytes may differ for executables).
    let local = build_all(tmp.path(), &snap, &tmp.path().join("local"));
    assert_eq!(from_hub.len(), 7);
    for (hub, local) in from_hub.iter().zip(&local) {
        assert_eq!(hub.file_name(), local.file_name());
        let strip = |entries: BTreeMap<String, (u32, Vec<u8>)>| {
            entries
                .into_iter()
                .map(|(name, (_, content))| (name, content))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(strip(read_wheel(hub)), strip(read_wheel(local)));
    }
    // The tag got its ref file, and the snapshot is in the cache.
    let commit =
        fs_err::read_to_string(cache.join("kernels--kernels-community--activation/refs/v0.0.3"))
            .unwrap();
    assert_eq!(commit.len(), 40);

    // `--variant` downloads only what is needed; then offline works from the cache.
    let cache2 = tmp.path().join("cache2");
    let variant = "torch27-cxx11-cu126-x86_64-linux";
    run_ok(
        kernels(&server.endpoint, &cache2)
            .args(["to-wheel", REPO, "0.0.3", "--variant", variant, "--out-dir"])
            .arg(tmp.path().join("one")),
    );
    let build = cache2
        .join("kernels--kernels-community--activation/snapshots")
        .join(&commit)
        .join("build");
    let fetched: Vec<String> = fs_err::read_dir(&build)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(fetched, [variant]);
    let output = run_ok(
        kernels(&server.endpoint, &cache2)
            .env("HF_HUB_OFFLINE", "1")
            .args(["to-wheel", REPO, "0.0.3", "--variant", variant, "--out-dir"])
            .arg(tmp.path().join("offline")),
    );
    assert_eq!(
        String::from_utf8(output.stdout).unwrap().trim(),
        tmp.path()
            .join("offline/activation-0.0.3+torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl")
            .to_str()
            .unwrap()
    );
}

#[test]
fn refuses_bad_variants_and_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let snap = snapshot(tmp.path());
    let out = tmp.path().join("dist");
    let fail = |args: &[&str]| {
        to_wheel(&tmp.path().join("cache"))
            .args([REPO, "0.0.3", "--from-dir"])
            .arg(&snap)
            .arg("--out-dir")
            .arg(&out)
            .args(args)
            .output()
            .unwrap()
    };

    snapshot!(
        "refuses_torch_ext",
        fail(&["--variant", "torch-cuda", "--variant", "torch-ext"])
    );
    snapshot!(
        "refuses_missing_variant",
        fail(&["--variant", "torch99-cxx11-cu126-x86_64-linux"])
    );
    // Nothing is written when planning fails.
    assert!(!out.exists());

    // A symlink out of the snapshot is refused.
    #[cfg(unix)]
    {
        let secret = tmp.path().join("secret.txt");
        write(&secret, "secret\n");
        std::os::unix::fs::symlink(&secret, snap.join("build/torch-cuda/leak.txt")).unwrap();
        snapshot!("refuses_symlink_out_of_the_snapshot", fail(&[]));
        fs_err::remove_file(snap.join("build/torch-cuda/leak.txt")).unwrap();
    }

    // A variant without its package.
    fs_err::create_dir_all(snap.join("build/torch-rocm/other")).unwrap();
    snapshot!(
        "refuses_variant_without_package",
        fail(&["--variant", "torch-rocm"])
    );

    // A version with a local part: the local part is derived per variant.
    let output = to_wheel(&tmp.path().join("cache"))
        .args([REPO, "0.0.3+mine", "--from-dir"])
        .arg(&snap)
        .output()
        .unwrap();
    snapshot!("refuses_local_version", output);
}

/// File names of the wheels a run printed, in order.
fn printed_names(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            Path::new(line)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn locked_builds_every_kernel_of_a_variant_hash_lock() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let project = tmp.path().join("project");
    write(
        &project.join("pyproject.toml"),
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.3,<0.0.4\"\n\"kernels-community/triton-scaled-mm\" = \">=0.0.2\"\n",
    );
    run_ok(kernels(&server.endpoint, &cache).arg("lock").arg(&project));

    // The lock has no versions: they come from the release tags at the commits.
    let out = tmp.path().join("online");
    let output = run_ok(
        kernels(&server.endpoint, &cache)
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["to-wheel", "--locked"])
            .arg(&project)
            .arg("--out-dir")
            .arg(&out),
    );
    // The whole transcript: the wheels printed (stdout) and the versions taken
    // from the Hub tags (stderr, "from Hub tag `v0.0.3`").
    // Kernels are reported as they finish.
    snapshot!(
        "locked_variant_hash_lock",
        sorted_kernel_lines(&output.snapshot_text())
    );
    // The snapshot's stdout lists the 17 wheels by name.
    let names = printed_names(&output);
    assert_eq!(names.len(), 17, "{names:?}");

    // Offline, from the cache alone (the tag was recorded in refs/): the
    // same wheels, byte for byte.
    let offline = tmp.path().join("offline");
    let output = run_ok(
        kernels(NO_ENDPOINT, &cache)
            .env_remove("SOURCE_DATE_EPOCH")
            .env("HF_HUB_OFFLINE", "1")
            .current_dir(&project)
            .args(["to-wheel", "--locked", "--out-dir"])
            .arg(&offline),
    );
    assert_eq!(printed_names(&output), names);
    for name in &names {
        assert_eq!(
            sha256_file(&out.join(name)),
            sha256_file(&offline.join(name)),
            "{name}"
        );
    }

    // No lock: a user error naming the fix.
    let output = kernels(NO_ENDPOINT, &cache)
        .args(["to-wheel", "--frozen"])
        .arg(tmp.path())
        .output()
        .unwrap();
    snapshot!("frozen_without_lock", output);
    // A stale lock is refused under `--locked` (the manifest gained a kernel).
    fs_err::write(
        project.join("pyproject.toml"),
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.3,<0.0.4\"\n\"kernels-community/triton-scaled-mm\" = \">=0.0.2\"\n\"kernels-community/rotary\" = \">=0.0.1\"\n",
    )
    .unwrap();
    let output = kernels(&server.endpoint, &cache)
        .args(["to-wheel", "--locked"])
        .arg(&project)
        .arg("--out-dir")
        .arg(tmp.path().join("stale"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(!tmp.path().join("stale").exists());
    // `--locked` replaces the repository arguments.
    let output = kernels(NO_ENDPOINT, &cache)
        .args(["to-wheel", REPO, "0.0.3", "--locked"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "clap usage error");
}

#[test]
fn locked_builds_every_kernel_of_a_kernel_locks_file() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let project = tmp.path().join("project");
    write(
        &project.join("kernels.lock"),
        r#"[
  {"dependency": {"repo-id": "kernels-community/einops", "version": 1}, "lock": {"commit": "0bd00775195dda6f84c16c31f6d94564232d08b3"}},
  {"dependency": {"repo-id": "kernels-community/relu", "revision": "8c883dab2ee1e812d6bf996ab30cb43e0dcf63ed"}, "lock": {"commit": "8c883dab2ee1e812d6bf996ab30cb43e0dcf63ed"}},
  {"dependency": {"repo-id": "kernels-test/versions", "revision": "v0.1.1"}, "lock": {"commit": "dc142fd6c9920c993d32be6358b78957c58681c3"}}
]"#,
    );
    let out = tmp.path().join("dist");
    let output = run_ok(
        kernels(&server.endpoint, &cache)
            .env_remove("SOURCE_DATE_EPOCH")
            .args(["to-wheel", "--frozen"])
            .arg(&project)
            .arg("--out-dir")
            .arg(&out),
    );
    // The whole transcript, with "skipping `torch-ext` of
    // kernels-community/relu@8c883da" on stderr.
    // Kernels are reported as they finish.
    snapshot!(
        "locked_kernel_locks_file",
        sorted_kernel_lines(&output.snapshot_text())
    );
    // The snapshot's stdout names every wheel: einops `1+cuda` (version 1
    // from the lock), relu `0+g8c883da.…` (no tag at a bare commit), versions
    // `0.1.1` (the release tag named by the revision).
    let names = printed_names(&output);
    assert_eq!(
        names.iter().filter(|n| n.starts_with("relu-")).count(),
        25,
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| n.starts_with("einops-")).count(), 5);
    assert_eq!(names.len(), 31);
    // The variants came from the cache the download engine filled.
    assert!(
        cache
            .join("kernels--kernels-community--relu/snapshots/8c883dab2ee1e812d6bf996ab30cb43e0dcf63ed/build/torch210-metal-aarch64-darwin")
            .is_dir()
    );
}

/// A minimal pure-Python distribution `name==version` as a wheel in `dir`,
/// importable as `module`.
fn stub_wheel(dir: &Path, name: &str, version: &str, module: &str) {
    use std::io::Write;
    let escaped = name.replace('-', "_");
    let dist_info = format!("{escaped}-{version}.dist-info");
    let files = [
        (
            format!("{module}/__init__.py"),
            format!("__version__ = {version:?}\n"),
        ),
        (
            format!("{dist_info}/METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"),
        ),
        (
            format!("{dist_info}/WHEEL"),
            "Wheel-Version: 1.0\nGenerator: stub\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .to_owned(),
        ),
    ];
    fs_err::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{escaped}-{version}-py3-none-any.whl"));
    let mut zip = zip::ZipWriter::new(fs_err::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default();
    let mut record = String::new();
    for (file, content) in &files {
        zip.start_file(file.as_str(), options).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
        let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(content.as_bytes()));
        record.push_str(&format!("{file},sha256={digest},{}\n", content.len()));
    }
    record.push_str(&format!("{dist_info}/RECORD,,\n"));
    zip.start_file(format!("{dist_info}/RECORD"), options)
        .unwrap();
    zip.write_all(record.as_bytes()).unwrap();
    zip.finish().unwrap();
}

/// A kernel whose `metadata.json` declares Python dependencies: a noarch
/// CUDA variant and a universal one, as current kernel builders write them.
fn python_dep_snapshot(root: &Path) -> PathBuf {
    let snap = root.join("python-dep");
    let build = snap.join("build");
    write(
        &build.join("torch-cuda/__init__.py"),
        "import einops\nimport tvm_ffi\nimport nvidia_cutlass_dsl\n",
    );
    write(
        &build.join("torch-cuda/metadata.json"),
        r#"{
  "name": "python-dep",
  "id": "_python_dep_cuda_0a1b2c3",
  "version": 1,
  "license": "Apache-2.0",
  "python-depends": ["einops", "tvm-ffi", "nvidia-cutlass-dsl"],
  "backend": {"type": "cuda"},
  "build-host": "ci-runner-7"
}
"#,
    );
    write(
        &build.join("torch-universal/python_dep/__init__.py"),
        "import einops\n",
    );
    write(
        &build.join("torch-universal/metadata.json"),
        r#"{"version": 1, "python-depends": ["einops"], "python-depends-backends": {"cuda": ["nvidia-cutlass-dsl"]}, "build-host": "ci-runner-7"}"#,
    );
    snap
}

#[test]
fn wheels_require_the_kernels_python_dependencies_and_pip_resolves_them() {
    let tools = pyref_python("wheel-tools");
    let tmp = tempfile::tempdir().unwrap();
    let snap = python_dep_snapshot(tmp.path());
    let dist = tmp.path().join("dist");
    let output = run_ok(
        to_wheel(&tmp.path().join("cache"))
            .args(["kernels-test/python-dep", "1", "--from-dir"])
            .arg(&snap)
            .arg("--out-dir")
            .arg(&dist),
    );
    insta::assert_snapshot!(String::from_utf8_lossy(&output.stderr), @r"
    note: 2 variants: metadata.json field `build-host` is not known to this version; ignored
    note: `torch-universal`: `nvidia-cutlass-dsl` is only needed on cuda and a universal wheel cannot tell the backend; not declared, install it yourself where needed
    Built python_dep-1+cuda-py3-none-any.whl from torch-cuda
    Built python_dep-1-py3-none-any.whl from torch-universal
    ");
    let cuda = dist.join("python_dep-1+cuda-py3-none-any.whl");
    let entries = read_wheel(&cuda);
    let metadata =
        String::from_utf8(entries["python_dep-1+cuda.dist-info/METADATA"].1.clone()).unwrap();
    let requires: Vec<&str> = metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        .collect();
    assert_eq!(
        requires,
        [
            "torch",
            "einops",
            "apache-tvm-ffi",
            r#"nvidia-cutlass-dsl; sys_platform == "linux" or sys_platform == "win32""#
        ]
    );

    // Stub distributions for every dependency, in a local index.
    let index = tmp.path().join("index");
    for (name, version, module) in [
        ("torch", "2.10.0", "torch"),
        ("einops", "0.8.1", "einops"),
        ("apache-tvm-ffi", "0.1.0", "tvm_ffi"),
        ("nvidia-cutlass-dsl", "4.3.0", "nvidia_cutlass_dsl"),
    ] {
        stub_wheel(&index, name, version, module);
    }
    let install = |venv_name: &str, find_links: &Path| -> Output {
        let venv = tmp.path().join(venv_name);
        python_ok(
            &tools,
            &["-m", "venv", "--without-pip", venv.to_str().unwrap()],
        );
        Command::new(&tools)
            .args(["-m", "pip", "--python"])
            .arg(venv.join("bin/python"))
            .args(["install", "--no-index", "--no-compile", "--find-links"])
            .arg(find_links)
            .arg(&cuda)
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap()
    };
    let out = install("venv-all", &index);
    assert!(
        out.status.success(),
        "pip failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = python_ok(
        &tmp.path().join("venv-all/bin/python"),
        &[
            "-c",
            "import importlib.metadata as m\n\
             for d in ['python-dep', 'torch', 'einops', 'apache-tvm-ffi', 'nvidia-cutlass-dsl']:\n    \
             print(d, m.version(d))\n\
             import python_dep",
        ],
    );
    assert_eq!(
        report,
        "python-dep 1+cuda\ntorch 2.10.0\neinops 0.8.1\napache-tvm-ffi 0.1.0\nnvidia-cutlass-dsl 4.3.0\n"
    );

    // Without one of them, pip refuses and names it.
    fs_err::remove_file(index.join("nvidia_cutlass_dsl-4.3.0-py3-none-any.whl")).unwrap();
    let out = install("venv-missing", &index);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "pip installed without nvidia-cutlass-dsl"
    );
    // Stays a substring check: pip's own output, which varies with its version.
    assert!(
        stderr.contains("No matching distribution found for nvidia-cutlass-dsl"),
        "{stderr}"
    );
}

#[test]
fn a_missing_version_lists_the_available_ones_and_usage_is_its_own() {
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let output = kernels(&server.endpoint, &tmp.path().join("cache"))
        .args(["to-wheel", REPO, "0.0.9", "--out-dir"])
        .arg(tmp.path().join("dist"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&output.stderr), @r"
    kernels::wheel::no_such_version

      × `kernels-community/activation` has no version `v0.0.9` (no such tag or branch)
      help: available versions: 0.0.2, 0.0.3; closest: 0.0.3
    ");
    assert!(!tmp.path().join("dist").exists());

    let output = kernels(NO_ENDPOINT, &tmp.path().join("cache"))
        .args(["to-wheel", REPO])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(String::from_utf8_lossy(&output.stderr), @r"
    error: `kernels to-wheel` needs REPO_ID and VERSION, or `--locked [PROJECT_DIR]` / `--frozen [PROJECT_DIR]` to build from a project's kernels.lock

    Usage: kernels to-wheel [OPTIONS] [REPO_ID] [VERSION]

    For more information, try '--help'.
    ");
}

/// Issue 41 item 2: a zip-layout variant (`"build-layout": "zip"`, the
/// package in `<id>.zip`) becomes a wheel whose package holds the archive's
/// contents (importable without the runtime's zip loader), the variant's
/// other files beside them and not the archive; a corrupt archive is one
/// error naming it.
#[test]
fn a_zip_layout_variant_becomes_an_importable_package() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let variant = tmp.path().join("snap/build/torch-cpu");
    write(
        &variant.join("metadata.json"),
        "{\"version\": 1, \"id\": \"_activation_zip\", \"license\": \"Apache-2.0\", \"python-depends\": [], \"build-layout\": \"zip\"}\n",
    );
    let archive = variant.join("_activation_zip.zip");
    let mut zip = zip::ZipWriter::new(fs_err::File::create(&archive).unwrap());
    for (name, text) in [
        ("__init__.py", "from ._ops import ops\n"),
        ("_ops.py", "ops = 1\n"),
    ] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    let out = tmp.path().join("out");
    let wheels = build_all(tmp.path(), &tmp.path().join("snap"), &out);
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let files = read_wheel(&wheels[0]);
    let names: Vec<&String> = files.keys().filter(|n| !in_dist_info(n)).collect();
    assert_eq!(
        names,
        [
            "activation/__init__.py",
            "activation/_ops.py",
            "activation/metadata.json"
        ],
        "{names:?}"
    );
    assert_eq!(
        files["activation/__init__.py"].1,
        b"from ._ops import ops\n"
    );

    fs_err::write(&archive, b"not a zip").unwrap();
    let output = to_wheel(&tmp.path().join("cache"))
        .args([REPO, "0.0.3", "--from-dir"])
        .arg(tmp.path().join("snap"))
        .arg("--out-dir")
        .arg(tmp.path().join("out2"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let flat = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("corrupt kernel archive"), "{stderr}");
    assert!(flat.contains("_activation_zip.zip"), "{stderr}");
}
