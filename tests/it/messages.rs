//! One cause, one message: a `--variant` typo or an unreachable Hub over a
//! project of six kernels is reported once, briefly, with the fix (snapshots).

use std::process::Output;

use kernels_test_support::{TestContext, snapshot};

use crate::terminal::tgi;

/// `kernels ARGS` against an endpoint nothing listens on.
fn unreachable(p: &TestContext, args: &[&str]) -> Output {
    p.kernels_without_hub().args(args).output().unwrap()
}

#[test]
fn a_variant_typo_is_one_short_message_with_the_closest_name() {
    let p = tgi().with_env("KERNELS_MAX_RETRIES", "2");
    // The closest name comes first in the capped list, and as the fix.
    snapshot!(
        "variant_typo",
        p.run(&[
            "download",
            ".",
            "--variant",
            "torch27-cxx11-cu128-x86_64-linx",
        ],)
    );
}

#[test]
fn an_unreachable_hub_is_one_error_after_visible_retries_with_an_offline_hint() {
    let p = tgi().with_env("KERNELS_MAX_RETRIES", "2");
    let out = p.run(&["download", ".", "--all-variants"]);
    assert!(out.status.success(), "{out:?}");

    // A complete cache costs no request at all (a warm no-op): `--refresh`
    // asks the Hub anyway, which is unreachable.
    let out = unreachable(&p, &["download", ".", "--all-variants"]);
    assert!(out.status.success(), "{out:?}");
    // One line per retry round, one error, the offline command on its own line.
    snapshot!(
        "unreachable_refresh_warm_cache",
        unreachable(&p, &["download", ".", "--all-variants", "--refresh"])
    );

    // With a cold cache there is nothing to use offline: no such hint.
    fs_err::remove_dir_all(&p.cache).unwrap();
    snapshot!(
        "unreachable_cold_cache",
        unreachable(&p, &["download", ".", "--all-variants"])
    );

    // The dry run, the variant explanation and `kernels env` say it the same
    // way, once.
    let overrides = ["--torch-version", "2.7", "--cuda-version", "12.6"];
    for (args, name) in [
        (&["download", ".", "--explain"][..], "unreachable_explain"),
        (&["download", ".", "--dry-run"][..], "unreachable_dry_run"),
        (&["env"][..], "unreachable_env"),
    ] {
        snapshot!(name, unreachable(&p, &[args, &overrides].concat()));
    }
}
