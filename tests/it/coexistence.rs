//! Our wheel and the Python `kernels` runtime in one environment, with real
//! pip (issue 45, item 2): installed in either order, then either
//! uninstalled. pip gives `bin/kernels` to the package installed last and
//! deletes it with either package (it removes the paths its RECORD lists),
//! while `bin/kernels-cli`, which only our wheel installs, survives every case
//! but the removal of our own package. README.md (Usage) says so, and
//! docs/docker.md uses `kernels-cli`.
//!
//! Our wheel is laid out as maturin's `bindings = "bin"` lays it out (both
//! binaries in `kernels_cli-<version>.data/scripts/`, pyproject.toml builds
//! them with the `cli-alias` feature); each script here is a two-line
//! launcher of the binary under test rather than a 100 MB copy of it. The
//! runtime is the published kernels 0.19.1 wheel (`scripts/pyref-setup` puts
//! it in `$KERNELS_PYREF/wheels/`).

use std::path::{Path, PathBuf};
use std::process::Command;

use kernels_test_support as common;

/// Which program answers a command of the environment, by its `--version`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Owner {
    /// This tool: `kernels <version> (Rust lockfile tool)`.
    Ours,
    /// The Python runtime's console script.
    Runtime,
    /// No such file.
    Absent,
}

/// Writes our wheel into `dir` and returns its path.
fn our_wheel(dir: &Path) -> PathBuf {
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("kernels_cli-{version}");
    let path = dir.join(format!("{name}-py3-none-any.whl"));
    let launcher = format!(
        "#!/bin/sh\nexec '{}' \"$@\"\n",
        common::kernels_bin().display()
    );
    let script = r#"
import base64, hashlib, sys, zipfile
path, name, version, launcher = sys.argv[1:]
files = {
    f"{name}.data/scripts/kernels": launcher.encode(),
    f"{name}.data/scripts/kernels-cli": launcher.encode(),
    f"{name}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: kernels-cli\nVersion: {version}\n".encode(),
    f"{name}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(path, "w") as wheel:
    for file, data in files.items():
        info = zipfile.ZipInfo(file)
        info.external_attr = 0o100755 << 16
        wheel.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{file},sha256={digest},{len(data)}")
    record.append(f"{name}.dist-info/RECORD,,")
    wheel.writestr(f"{name}.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let status = Command::new(common::pyref_python("kernels-0.19.1"))
        .args(["-c", script])
        .arg(&path)
        .args([name.as_str(), version, launcher.as_str()])
        .status()
        .unwrap();
    assert!(status.success());
    path
}

/// The published runtime wheel.
fn runtime_wheel() -> PathBuf {
    let dir = common::pyref_root().join("wheels");
    let found = fs_err::read_dir(&dir)
        .ok()
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("kernels-0.19.1-"))
        });
    found.unwrap_or_else(|| {
        panic!(
            "no kernels 0.19.1 wheel in {}: run `bash scripts/pyref-setup`",
            dir.display()
        )
    })
}

fn pip(venv: &Path, args: &[&str]) {
    let out = Command::new(venv.join("bin/pip"))
        .args(["--disable-pip-version-check", "--no-input"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn owner(venv: &Path, command: &str) -> Owner {
    let path = venv.join("bin").join(command);
    if !path.exists() {
        return Owner::Absent;
    }
    let out = Command::new(&path).arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && text.contains("(Rust lockfile tool)") {
        Owner::Ours
    } else {
        Owner::Runtime
    }
}

#[test]
fn either_order_either_uninstall_keeps_kernels_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = our_wheel(tmp.path());
    let runtime = runtime_wheel();
    let (o, r, a) = (Owner::Ours, Owner::Runtime, Owner::Absent);
    // (install order, package uninstalled, owner of `kernels` and of
    // `kernels-cli` after installing, then after uninstalling)
    let cases = [
        ("ours then runtime", "kernels", (r, o), (a, o)),
        ("ours then runtime", "kernels-cli", (r, o), (a, a)),
        ("runtime then ours", "kernels", (o, o), (a, o)),
        ("runtime then ours", "kernels-cli", (o, o), (a, a)),
    ];
    let mut seen = Vec::new();
    for (i, (order, removed, _, _)) in cases.iter().enumerate() {
        let venv = tmp.path().join(format!("venv{i}"));
        let status = Command::new(common::pyref_python("kernels-0.19.1"))
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .unwrap();
        assert!(status.success());
        let wheels = if order.starts_with("ours") {
            [&ours, &runtime]
        } else {
            [&runtime, &ours]
        };
        for wheel in wheels {
            pip(
                &venv,
                &[
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--no-index",
                    &wheel.display().to_string(),
                ],
            );
        }
        let installed = (owner(&venv, "kernels"), owner(&venv, "kernels-cli"));
        pip(&venv, &["uninstall", "--quiet", "--yes", removed]);
        let after = (owner(&venv, "kernels"), owner(&venv, "kernels-cli"));
        seen.push((*order, *removed, installed, after));
    }
    let expected: Vec<_> = cases
        .iter()
        .map(|(order, removed, installed, after)| (*order, *removed, *installed, *after))
        .collect();
    assert_eq!(seen, expected);
}
