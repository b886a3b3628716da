//! Flags where they mean something: `--cache-dir` (with `KERNELS_CACHE` as its
//! environment default), the environment section of `kernels --help`, and no
//! lock or cache flag on `serve` and `completions`.

use kernels_test_support as common;

use crate::terminal::project;

fn help(args: &[&str]) -> String {
    let out = common::kernels_scrubbed().args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn cache_dir_puts_the_files_there_and_shows_its_variable() {
    let p = project();
    let elsewhere = p.cache.with_file_name("elsewhere");
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(["download", ".", "--all-variants", "--cache-dir"])
        .arg(&elsewhere)
        .current_dir(&p.project)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        elsewhere
            .join("kernels--kernels-community--rotary")
            .is_dir(),
        "{err}"
    );
    assert!(!p.cache.join("kernels--kernels-community--rotary").exists());
    assert!(
        err.contains(&format!("into {}", elsewhere.display())),
        "{err}"
    );
    // `verify` reads the same place, here through KERNELS_CACHE.
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(["verify", ".", "--all-variants"])
        .env("KERNELS_CACHE", &elsewhere)
        .current_dir(&p.project)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert!(help(&["download", "--help"]).contains("[env: KERNELS_CACHE=]"));
}

#[test]
fn help_lists_the_environment_and_global_flags_only_where_they_apply() {
    let top = help(&["--help"]);
    assert!(top.contains("Environment variables:"), "{top}");
    for name in ["HF_ENDPOINT", "HF_TOKEN", "KERNELS_CACHE", "HF_HUB_OFFLINE"] {
        assert!(top.contains(&format!("  {name} ")), "{name}: {top}");
    }
    for sub in ["serve", "completions"] {
        let text = help(&[sub, "--help"]);
        for flag in ["--locked", "--frozen", "--cache-dir", "--no-progress"] {
            assert!(!text.contains(flag), "`kernels {sub} --help` shows {flag}");
        }
    }
    for sub in ["download", "lock", "verify", "to-wheel"] {
        let text = help(&[sub, "--help"]);
        for flag in ["--locked", "--frozen", "--cache-dir"] {
            assert!(text.contains(flag), "`kernels {sub} --help` lacks {flag}");
        }
    }
}
