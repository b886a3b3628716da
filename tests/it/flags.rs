//! Flags where they mean something: `--cache-dir` (with `KERNELS_CACHE` as its
//! environment default), the environment section of `kernels --help`, and no
//! lock or cache flag on `serve` and `completions`.

use kernels_test_support::{self as common, snapshot};

use crate::terminal::tgi;

fn help(args: &[&str]) -> String {
    let out = common::kernels_scrubbed().args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The long flags a help text describes, in order, one a line.
fn flags_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().map(str::trim_start) {
        if !line.starts_with('-') {
            continue;
        }
        let spec = line.split("  ").next().unwrap_or_default();
        for word in spec.split([' ', ',']).filter(|w| w.starts_with("--")) {
            out.push_str(word);
            out.push('\n');
        }
    }
    out
}

/// The block of a help text that describes `flag`: its line and the lines up
/// to the next blank one.
fn flag_block<'a>(text: &'a str, flag: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with(flag))
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn cache_dir_puts_the_files_there_and_shows_its_variable() {
    let p = tgi();
    let elsewhere = p.cache.with_file_name("elsewhere");
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(["download", ".", "--all-variants", "--cache-dir"])
        .arg(&elsewhere)
        .current_dir(&p.project)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The TGI manifest has specifier strings: its lock is for 0.13.0, which
    // reads `models--` folders.
    assert!(
        elsewhere.join("models--kernels-community--rotary").is_dir(),
        "{err}"
    );
    assert!(!p.cache.join("models--kernels-community--rotary").exists());
    // The summary line says where the files went ("into [TMP]/elsewhere"); the
    // per-kernel lines above it come in completion order, so they are left out.
    snapshot!("cache_dir_download", err.lines().last().unwrap_or_default());
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

    // `--cache-dir` names its variable, `[env: KERNELS_CACHE=]`.
    snapshot!(
        "download_help_cache_dir",
        flag_block(&help(&["download", "--help"]), "--cache-dir").join("\n")
    );

    // `kernels cache` and `kernels env` take it too, before or after the
    // subcommand of `cache`.
    for args in [
        &["cache", "ls", "--cache-dir"][..],
        &["cache", "--cache-dir"][..],
    ] {
        let mut cmd = common::kernels(&p.server.endpoint, &p.cache);
        cmd.args(args).arg(&elsewhere);
        if args.len() == 2 {
            cmd.arg("ls");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Both spellings list the same cache ("kernels-community/rotary (model)").
        snapshot!("cache_dir_cache_ls", out);
    }
    // The stub torch and platform, so that the output does not depend on the host.
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(["env", "--cache-dir"])
        .arg(&elsewhere)
        .env(
            "PYTHONPATH",
            common::repo_root().join("tests/python/stub_torch"),
        )
        .env("STUB_PLATFORM_SYSTEM", "Linux")
        .env("STUB_PLATFORM_MACHINE", "x86_64")
        .output()
        .unwrap();
    // "[TMP]/elsewhere  (from --cache-dir)".
    snapshot!("cache_dir_env", out);
}

#[test]
fn overrides_have_their_own_help_section_and_metal_means_macos() {
    let text = help(&["download", "--help"]);
    let (before, section) = text
        .split_once("Environment overrides:")
        .expect("an Environment overrides section");
    // The section holds the overrides (`--torch-version`, …) and nothing after
    // them; `--offline`, `--dry-run`, `--format`, `--cache-dir` and
    // `--locked` come before it.
    snapshot!("download_help_overrides_flags", flags_of(section));
    snapshot!("download_help_other_flags", flags_of(before));
    let env = |args: &[&str]| {
        common::kernels_scrubbed()
            .args(["env", "--torch-version", "2.9"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = env(&["--metal"]);
    // "aarch64-darwin  (from --metal)" and the variant torch29-metal-aarch64-darwin.
    snapshot!("env_metal", out);
    let out = env(&["--metal", "--os", "linux", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // "Metal builds are for macOS".
    snapshot!(
        "env_metal_on_linux_torch_error",
        doc["torch_error"].as_str().unwrap()
    );
}

#[test]
fn help_lists_the_environment_and_global_flags_only_where_they_apply() {
    // HF_ENDPOINT, HF_TOKEN, KERNELS_CACHE, HF_HUB_OFFLINE, ….
    let top = help(&["--help"]);
    let (_, variables) = top
        .split_once("Environment variables:")
        .expect("an Environment variables section");
    snapshot!("help_environment_variables", variables);
    // No `--locked`, `--frozen`, `--cache-dir` or `--no-progress` on `serve`
    // and `completions`; the first three on each command that reads a lock.
    for sub in [
        "serve",
        "completions",
        "download",
        "lock",
        "verify",
        "to-wheel",
    ] {
        snapshot!(format!("flags_{sub}"), flags_of(&help(&[sub, "--help"])));
    }
}
