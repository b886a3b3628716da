//! `bench/* --help` answers at once: every benchmark script prints its usage and
//! exits 0 before building or installing anything. The scripts run with a `PATH`
//! that holds no `cargo`, so a script that still builds first fails here.

use std::path::Path;
use std::process::Command;

#[test]
fn every_bench_script_prints_help_before_building() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench");
    let mut scripts: Vec<_> = fs_err::read_dir(&bench)
        .expect("bench/ is readable")
        .map(|entry| entry.expect("a bench/ entry").path())
        .filter(|path| path.is_file() && path.extension().is_none())
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    scripts.sort();
    let names: Vec<String> = scripts
        .iter()
        .filter_map(|path| path.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    // Every benchmark that issue 26 asks to answer `--help` at once.
    for expected in [
        "download",
        "hash",
        "kernel-scale",
        "lock",
        "scaling",
        "serve",
        "startup",
        "wheel",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "bench/{expected} is missing: {names:?}"
        );
    }
    for script in scripts {
        for flag in ["--help", "-h"] {
            let output = Command::new("bash")
                .arg(&script)
                .arg(flag)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", std::env::temp_dir())
                .output()
                .expect("bash runs");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{} {flag} exited {:?}\nstdout:\n{stdout}\nstderr:\n{}",
                script.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            // Stays a substring check: the usage text of Python scripts under bench/.
            assert!(
                stdout.to_lowercase().contains("usage") || stdout.contains("bench/"),
                "{} {flag} printed no usage:\n{stdout}",
                script.display()
            );
        }
    }
}
