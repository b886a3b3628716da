//! Environment variables read as huggingface_hub reads them: `~` and `$VAR`
//! expanded, the old `HF_KERNELS_CACHE` honoured with a note.

use std::path::Path;
use std::process::Output;

use kernels_test_support as common;
use kernels_test_support::{GELU_SHA, TestContext, assert_ok, snapshot};

fn download(world: &TestContext, home: &Path, env: &[(&str, &str)]) -> Output {
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
    cmd.env_remove("HF_HUB_CACHE")
        .env_remove("HF_HOME")
        .env("HOME", home)
        .arg("download")
        .arg(&world.project)
        .args(["--variant", "torch-cuda"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn hf_home_with_a_tilde_is_under_the_home_directory() {
    let world = TestContext::world();
    let home = world.tmp.path().join("home");
    fs_err::create_dir_all(&home).unwrap();
    let out = download(&world, &home, &[("HF_HOME", "~/hf")]);
    assert_ok(&out);
    assert!(home.join("hf/hub/kernels--acme--gelu").is_dir());
    assert!(!world.project.join("~").exists() && !Path::new("~").exists());
}

#[test]
fn hf_kernels_cache_is_honoured_with_a_note() {
    let world = TestContext::world();
    let home = world.tmp.path().join("home");
    fs_err::create_dir_all(&home).unwrap();
    let out = download(&world, &home, &[("HF_KERNELS_CACHE", "$HOME/old-cache")]);
    assert_ok(&out);
    assert!(home.join("old-cache/kernels--acme--gelu").is_dir());
    // One note: "HF_KERNELS_CACHE is deprecated", use KERNELS_CACHE instead.
    snapshot!("hf_kernels_cache_download", out);
    // `--quiet` silences it.
    for (quiet, name) in [
        (&["-q"][..], "hf_kernels_cache_dir_quiet"),
        (&[][..], "hf_kernels_cache_dir"),
    ] {
        let out = common::kernels(&world.server.endpoint, &world.cache)
            .env("HF_KERNELS_CACHE", home.join("old-cache"))
            .args(quiet)
            .args(["cache", "dir"])
            .output()
            .unwrap();
        assert_ok(&out);
        snapshot!(name, out);
    }
}
