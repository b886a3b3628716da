//! One cause, one message: a `--variant` typo or an unreachable Hub over a
//! project of six kernels is reported once, briefly, with the fix.

use kernels_test_support as common;

use crate::terminal::project;

fn run(p: &crate::terminal::Project, endpoint: &str, args: &[&str]) -> (i32, String) {
    let out = common::kernels(endpoint, &p.cache)
        .args(args)
        .current_dir(&p.project)
        .env("KERNELS_MAX_RETRIES", "2")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_variant_typo_is_one_short_message_with_the_closest_name() {
    let p = project();
    let (code, err) = run(
        &p,
        &p.server.endpoint,
        &[
            "download",
            ".",
            "--variant",
            "torch27-cxx11-cu128-x86_64-linx",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.lines().count() < 15,
        "{} lines:\n{err}",
        err.lines().count()
    );
    assert!(
        err.contains("did you mean `torch27-cxx11-cu128-x86_64-linux`?")
            && err
                .lines()
                .any(|l| l.trim() == "--variant torch27-cxx11-cu128-x86_64-linux"),
        "{err}"
    );
    // The closest name comes first in the capped list.
    assert!(
        err.contains("available: torch27-cxx11-cu128-x86_64-linux, ") && err.contains("more"),
        "{err}"
    );
    assert_eq!(err.matches("has none of the requested").count(), 1, "{err}");
}

#[test]
fn an_unreachable_hub_is_one_error_after_visible_retries_with_an_offline_hint() {
    let p = project();
    let (code, err) = run(&p, &p.server.endpoint, &["download", ".", "--all-variants"]);
    assert_eq!(code, 0, "{err}");

    // A complete cache costs no request at all (a warm no-op): `--refresh`
    // asks the Hub anyway, which is unreachable.
    let dead = "http://127.0.0.1:9";
    let (code, err) = run(&p, dead, &["download", ".", "--all-variants"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = run(&p, dead, &["download", ".", "--all-variants", "--refresh"]);
    assert_eq!(code, 1, "{err}");
    let retries: Vec<&str> = err.lines().filter(|l| l.contains("retrying in")).collect();
    assert_eq!(retries.len(), 2, "one line per retry round:\n{err}");
    assert!(
        retries[0].starts_with(&format!("warning: {dead}: ")) && retries[0].ends_with("(1/2)"),
        "{err}"
    );
    assert_eq!(err.matches("cannot reach").count(), 1, "{err}");
    assert!(
        err.contains(&format!("cannot reach the Hub at {dead} (")) && err.contains(" and 3 more"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.trim() == "kernels download . --offline --all-variants"),
        "the offline command on its own line:\n{err}"
    );
    assert!(err.lines().count() < 12, "{err}");

    // With a cold cache there is nothing to use offline: no such hint.
    fs_err::remove_dir_all(&p.cache).unwrap();
    let (code, err) = run(&p, dead, &["download", ".", "--all-variants"]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("--offline"), "{err}");
    assert!(err.contains("check HF_ENDPOINT"), "{err}");

    // The dry run, the variant explanation and `kernels env` say it the same
    // way, once.
    let overrides = ["--torch-version", "2.7", "--cuda-version", "12.6"];
    for args in [
        &["download", ".", "--explain"][..],
        &["download", ".", "--dry-run"][..],
        &["env"][..],
    ] {
        let (_, err) = run(&p, dead, &[args, &overrides].concat());
        assert_eq!(
            err.matches("cannot reach the Hub at").count(),
            1,
            "{args:?}: {err}"
        );
        assert!(!err.contains("tcp connect error"), "{args:?}: {err}");
    }
}
