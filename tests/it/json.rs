//! `--format json` of every command that reports data: one document on stdout
//! with `schema` and `command`, typed fields (no prose arrays), as
//! `docs/json-output.md` describes.

use serde_json::Value;

use kernels_test_support::{self as common, TestContext};

use crate::terminal::tgi;

fn json(p: &TestContext, args: &[&str]) -> (i32, Value) {
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(args)
        .args(["--format", "json"])
        .current_dir(&p.project)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|err| {
        panic!(
            "{args:?}: {err}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // Status lines are for people; with JSON, stderr has warnings and errors only.
    let err = String::from_utf8_lossy(&out.stderr);
    for status in [
        "Environment:",
        "Downloaded ",
        "Cached ",
        "Verified ",
        "Locked ",
        "Target runtime:",
    ] {
        assert!(
            !err.lines().any(|l| l.starts_with(status)),
            "{args:?}: a `{status}` line with --format json:\n{err}"
        );
    }
    (out.status.code().unwrap_or(-1), doc)
}

#[test]
fn every_reporting_command_prints_one_typed_document() {
    let p = tgi();
    let env = [
        "--torch-version",
        "2.7",
        "--cuda-version",
        "12.6",
        "--os",
        "linux",
        "--arch",
        "x86_64",
    ];
    let (code, doc) = json(&p, &[&["download", ".", "--explain"][..], &env].concat());
    assert_eq!(
        (code, doc["command"].as_str()),
        (0, Some("download --explain"))
    );
    let (code, doc) = json(&p, &[&["download", ".", "--dry-run"][..], &env].concat());
    assert_eq!(
        (code, doc["command"].as_str()),
        (0, Some("download --dry-run"))
    );
    let (code, doc) = json(&p, &["download", ".", "--all-variants", "--dry-run"]);
    assert_eq!(
        (code, doc["schema"].as_u64(), doc["command"].as_str()),
        (0, Some(2), Some("download --dry-run"))
    );

    let (code, doc) = json(&p, &["verify", ".", "--all-variants"]);
    assert_eq!(
        (code, doc["command"].as_str(), doc["ok"].as_bool()),
        (1, Some("verify"), Some(false))
    );
    let problem = &doc["kernels"][0]["problems"][0];
    assert_eq!(problem["problem"], "not_cached", "{doc:#}");
    assert!(problem["message"].is_string());

    let (code, doc) = json(&p, &["download", ".", "--all-variants"]);
    assert_eq!(
        (code, doc["schema"].as_u64(), doc["command"].as_str()),
        (0, Some(1), Some("download"))
    );
    assert_eq!(doc["kernels"].as_array().unwrap().len(), 6);
    assert!(doc["kernels"][0]["fetched_bytes"].as_u64().unwrap() > 0);
    assert_eq!(doc["failed"], Value::Array(vec![]));

    let (code, doc) = json(&p, &["verify", ".", "--all-variants"]);
    assert_eq!((code, doc["ok"].as_bool()), (0, Some(true)), "{doc:#}");
    assert!(doc["kernels"][0]["files"].as_u64().unwrap() > 0);

    let (code, doc) = json(&p, &["lock", "."]);
    assert_eq!((code, doc["command"].as_str()), (0, Some("lock")));

    let (code, doc) = json(
        &p,
        &["env", "--torch-version", "2.7", "--cuda-version", "12.6"],
    );
    assert_eq!((code, doc["command"].as_str()), (0, Some("env")));

    // A failure is an object with the diagnostic code, not a sentence.
    let (code, doc) = json(
        &p,
        &["download", ".", "--variant", "torch-nothing", "--dry-run"],
    );
    assert_eq!(code, 1);
    let failed = &doc["failed"][0];
    assert_eq!(failed["code"], "kernels::variant::not_found", "{doc:#}");
    assert!(
        failed["repo_id"]
            .as_str()
            .unwrap()
            .starts_with("kernels-community/")
    );
    assert_eq!(failed["commit"].as_str().unwrap().len(), 40);
}

/// A failure before any kernel (torch cannot be asked, the Hub cannot be
/// reached) still prints one document, with the failure as a typed `error`.
#[test]
fn an_early_failure_is_still_one_typed_document() {
    let p = tgi();
    // No `--variant`: the variant is chosen for torch, which the scrubbed
    // environment cannot run.
    for (args, command) in [
        (&["verify", "."][..], "verify"),
        (&["download", "."], "download"),
    ] {
        let (code, doc) = json(&p, args);
        assert_eq!(code, 1, "{doc:#}");
        assert_eq!(doc["command"], command, "{doc:#}");
        assert!(
            doc["error"]["code"]
                .as_str()
                .is_some_and(|c| c.starts_with("kernels::variant::")),
            "{doc:#}"
        );
        // Stays a substring check: the message names this machine's Python.
        assert!(doc["error"]["message"].as_str().unwrap().contains("torch"));
        assert_eq!(doc["kernels"], Value::Array(vec![]), "{doc:#}");
    }
    let (code, doc) = json(&p, &["verify", ".", "--all-variants"]);
    assert_eq!(code, 1);
    assert_eq!(doc["error"], Value::Null, "{doc:#}");

    // A stale lock under `--locked` stops both before any kernel.
    let manifest = p.project.join("pyproject.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(
        &manifest,
        text.replace(
            "[tool.kernels.dependencies]\n",
            "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n",
        ),
    )
    .unwrap();
    for (args, command) in [
        (
            &["download", ".", "--all-variants", "--locked"][..],
            "download",
        ),
        (&["verify", ".", "--all-variants", "--locked"], "verify"),
    ] {
        let (code, doc) = json(&p, args);
        assert_eq!(code, 1, "{doc:#}");
        assert_eq!(doc["command"], command, "{doc:#}");
        assert_eq!(doc["error"]["code"], "kernels::lock::locked", "{doc:#}");
    }
    fs_err::write(&manifest, text).unwrap();

    // `lock`: the failure typed, per kernel too; the lock stays as it was.
    let before = fs_err::read(p.project.join("kernels.lock")).unwrap();
    let out = common::kernels("http://127.0.0.1:9", &p.cache)
        .args(["lock", "--format", "json"])
        .env("KERNELS_MAX_RETRIES", "0")
        .current_dir(&p.project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (doc["schema"].as_u64(), doc["command"].as_str()),
        (Some(2), Some("lock"))
    );
    assert_eq!(doc["written"], false);
    assert_eq!(
        doc["error"]["code"], "kernels::lock::unreachable",
        "{doc:#}"
    );
    assert_eq!(doc["failed"].as_array().unwrap().len(), 6, "{doc:#}");
    assert_eq!(
        fs_err::read(p.project.join("kernels.lock")).unwrap(),
        before
    );

    // The Hub unreachable: `kernels versions` too prints its document.
    let out = common::kernels("http://127.0.0.1:9", &p.cache)
        .args(["versions", "kernels-community/relu", "--format", "json"])
        .env("KERNELS_MAX_RETRIES", "0")
        .current_dir(&p.project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["command"], "versions", "{doc:#}");
    assert_eq!(doc["error"]["code"], "kernels::hub::unreachable", "{doc:#}");
}
