//! Tokens: where they come from (HF_TOKEN, HF_TOKEN_PATH, `$HF_HOME/token`),
//! that they never cross to the CDN host, and that they never appear in output.

use std::process::Output;

use serde_json::Value;

use kernels_test_support as common;
use kernels_test_support::{GELU_SHA, TestContext, assert_ok, cdn_requests, snapshot, stderr};

/// The `Authorization` values the Hub listener received.
fn hub_auth(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter(|r| r["listener"] == "hub")
        .map(|r| {
            r["headers"]["authorization"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// `kernels download` with exactly the given token sources.
fn download(world: &TestContext, env: &[(&str, &str)], hf_home: &std::path::Path) -> Output {
    let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
    cmd.arg("download")
        .arg(&world.project)
        .args(["--variant", "torch-cuda"])
        .env("HF_HOME", hf_home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn token_sources_in_order_and_never_sent_to_the_cdn() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let home = world.cache.parent().unwrap().join("home");
    fs_err::create_dir_all(&home).unwrap();
    fs_err::write(home.join("token"), "hf_from_home_file\n").unwrap();
    let token_path = home.join("other-token");
    fs_err::write(&token_path, "  hf_from_token_path  \n").unwrap();
    let token_path = token_path.to_str().unwrap();

    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[("HF_TOKEN", "hf_from_env"), ("HF_TOKEN_PATH", token_path)],
            "hf_from_env",
        ),
        (&[("HF_TOKEN_PATH", token_path)], "hf_from_token_path"),
        (&[], "hf_from_home_file"),
    ];
    for (env, token) in cases {
        // A fresh blob each time so the CDN is asked again.
        let _ = fs_err::remove_dir_all(&world.cache);
        world.reset();
        assert_ok(&download(&world, env, &home));
        let log = world.requests();
        let auth = hub_auth(&log);
        assert!(!auth.is_empty());
        assert!(
            auth.iter().all(|a| *a == format!("Bearer {token}")),
            "{env:?}: {auth:?}"
        );
        // The CDN rejects any request with Authorization: the LFS file arrived,
        // so the header was dropped on the cross-host redirect.
        let cdn = cdn_requests(&log);
        assert_eq!(cdn.len(), 1, "{log:#?}");
        assert_eq!(cdn[0]["authorization"], false);
        assert_eq!(cdn[0]["status"], 200);
    }

    // HF_HUB_DISABLE_IMPLICIT_TOKEN ignores the file sources.
    let _ = fs_err::remove_dir_all(&world.cache);
    world.reset();
    assert_ok(&download(
        &world,
        &[("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")],
        &home,
    ));
    assert!(hub_auth(&world.requests()).iter().all(String::is_empty));
}

#[test]
fn token_never_appears_in_output() {
    const SECRET: &str = "hf_SeCrEtToKeN4242xyzzy";
    const SECRET_SHA: &str = "3333333333333333333333333333333333333333";
    // A private repo that only another token may read, next to the public ones.
    let world = TestContext::world_with(|mirror| {
        let repo = mirror.join("repos/kernels/acme/secret");
        let tree = repo.join("commits/c1/tree/build/torch-cpu");
        fs_err::create_dir_all(&tree).unwrap();
        fs_err::write(tree.join("x.py"), "x = 1\n").unwrap();
        fs_err::write(
            repo.join("commits/c1/commit.toml"),
            format!("sha = \"{SECRET_SHA}\"\n"),
        )
        .unwrap();
        fs_err::write(
            repo.join("repo.toml"),
            "commits = [\"c1\"]\nprivate = true\nallowed_tokens = [\"hf_other\"]\n\n[branches]\nmain = \"c1\"\n",
        )
        .unwrap();
    });
    let home = world.cache.parent().unwrap().join("home");
    let run = |sub: &[&str], env: &[(&str, &str)]| {
        let mut cmd = common::kernels(&world.server.endpoint, &world.cache);
        cmd.args(sub)
            .arg(&world.project)
            .env("HF_TOKEN", SECRET)
            .env("HF_HOME", &home);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let check = |out: &Output, what: &str| {
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            // Stays a substring check: a secret must appear nowhere in the output.
            assert!(
                !text.contains(SECRET) && !text.contains("SeCrEt"),
                "{what}: token in {name}:\n{text}"
            );
        }
    };

    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let out = run(&["download", "--all-variants"], &[]);
    assert_ok(&out);
    check(&out, "download");
    check(
        &run(
            &[
                "download",
                "--all-variants",
                "--dry-run",
                "--format",
                "json",
            ],
            &[],
        ),
        "dry-run",
    );
    check(&run(&["verify", "--all-variants"], &[]), "verify");
    // `-v` logs requests, retries and checks; still no token.
    fs_err::remove_dir_all(&world.cache).unwrap();
    world.fault(serde_json::json!({"listener": "hub", "status": 503, "count": 1}));
    world.fault(serde_json::json!({"listener": "cdn", "status": 503, "count": 1}));
    let out = run(&["download", "-vv", "--all-variants"], &[]);
    assert_ok(&out);
    // The debug lines carry random retry jitter and interleave with the
    // downloads: they are checked by message, the rest is a snapshot (one
    // retry warning for the Hub, one for the CDN).
    let err = stderr(&out);
    let debug: Vec<&str> = err
        .lines()
        .filter_map(|l| l.split_once(" DEBUG ").map(|(_, message)| message))
        .collect();
    // One whole line among the debug lines, whose order varies.
    assert!(
        debug.contains(&"acme/gelu@2222222: listing the files of the locked commit"),
        "{err}"
    );
    snapshot!(
        "download_vv_retries",
        out,
        &[(r"(?m)^\[TIMESTAMP\] DEBUG .*\n", "")]
    );
    check(&out, "download -vv");
    check(&run(&["verify", "-v", "--all-variants"], &[]), "verify -v");
    world.reset();

    // Failures: a repo the token cannot see, a server error, the offline hint,
    // and a token that cannot be sent as a header.
    world.lock_b(&[("acme/gelu", GELU_SHA), ("acme/secret", SECRET_SHA)]);
    let out = run(&["download", "-v", "--all-variants"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // acme/secret fails; the token is set and was sent: the help names its
    // source ("the token from HF_TOKEN was sent") and does not say to set one.
    // `-v` debug lines of the two kernels interleave in no fixed order: left out.
    snapshot!(
        "unauthorized_download",
        out,
        &[(r"(?m)^\[TIMESTAMP\] DEBUG .*\n", "")]
    );
    check(&out, "unauthorized download");
    world.fault(serde_json::json!({"listener": "hub", "status": 500, "count": 10}));
    let out = run(
        &["download", "--all-variants"],
        &[("KERNELS_MAX_RETRIES", "0")],
    );
    assert_eq!(out.status.code(), Some(1));
    check(&out, "server error");
    world.reset();
    let out = run(&["download", "--all-variants", "--offline"], &[]);
    assert_eq!(out.status.code(), Some(1));
    check(&out, "offline");
    let out = run(
        &["download", "--all-variants"],
        &[("HF_TOKEN", "hf_SeCrEt\nline")],
    );
    assert_ne!(out.status.code(), Some(0));
    check(&out, "unsendable token");
}

#[test]
fn a_download_server_refusal_is_not_blamed_on_the_token() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    // The CDN refuses the signed URL (as an expired one is refused).
    world.fault(serde_json::json!({"listener": "cdn", "status": 403, "count": 10}));
    let hf_home = world.tmp.path().join("hf-home");
    let out = download(&world, &[("HF_TOKEN", "hf_test_token")], &hf_home);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // `kernels::hub::refused`, "the token is not the cause", no advice to check
    // HF_TOKEN; one kernel, one cause: no `kernels::download::failed` summary
    // repeating it.
    snapshot!("cdn_refusal_not_the_token", out);
}

/// An `HF_ENDPOINT` with user info (issue 24): the password is never printed,
/// in `kernels env` (text and JSON), the retry warnings, the `-v` log or the
/// final error.
#[test]
fn endpoint_password_is_never_printed() {
    let context = TestContext::new()
        .with_pyproject(
            "[project]\nname = \"p\"\nversion = \"0\"\n\n[tool.kernels.dependencies]\n\"acme/gelu\" = 1\n",
        )
        .with_env("HF_ENDPOINT", "http://u:secret@127.0.0.1:1")
        .with_env("KERNELS_MAX_RETRIES", "1");
    let env = context.run(&["env"]);
    let endpoint_line = String::from_utf8_lossy(&env.stdout)
        .lines()
        .filter(|l| l.starts_with("Endpoint"))
        .collect::<Vec<_>>()
        .join("\n");
    let json: Value =
        serde_json::from_slice(&context.run(&["env", "--format", "json"]).stdout).unwrap();
    let lock = context.run(&["lock", "-v", "--target-runtime", "0.16.2", "."]);
    kernels_test_support::snapshot!(
        "endpoint_password",
        format!(
            "{endpoint_line}\njson endpoint: {}\n--- lock -v\n{}",
            json["endpoint"],
            kernels_test_support::snapshot::SnapshotText::snapshot_text(&lock)
        ),
        &[(r"\d+\.\d+ms", "[TIME]")]
    );
}

/// A password with an unencoded `/`, `#` or `?` makes `HF_ENDPOINT` an
/// invalid URL, but it is still the user's secret (issue 24): `kernels env`
/// (text and JSON) and the failing `lock` print none of it.
#[test]
fn endpoint_password_with_a_delimiter_is_never_printed() {
    let context = TestContext::new()
        .with_pyproject(
            "[project]\nname = \"p\"\nversion = \"0\"\n\n[tool.kernels.dependencies]\n\"acme/gelu\" = 1\n",
        )
        .with_env("HF_ENDPOINT", "http://u:s3/cr#e?t@127.0.0.1:1")
        .with_env("KERNELS_MAX_RETRIES", "0");
    for args in [
        &["env"][..],
        &["env", "--format", "json"],
        &["lock", "-v", "--target-runtime", "0.16.2", "."],
    ] {
        let out = context.run(args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Stays a substring check: no part of the password may appear anywhere.
        assert!(
            !text.contains("s3/"),
            "{args:?} printed the password: {text}"
        );
        assert!(
            !text.contains("cr#e"),
            "{args:?} printed the password: {text}"
        );
    }
    // Refused before any command runs, named without the password (issue 45).
    let env = context.run(&["env"]);
    snapshot!("endpoint_password_with_a_delimiter_env_refused", env);
}

/// A token with CR/LF is read as huggingface_hub 2.4 reads it (both removed);
/// any other character that cannot be sent in a header is a user error (exit 1)
/// naming where the token came from, never an internal error (issue 24).
#[test]
fn unsendable_tokens_are_a_user_error_naming_their_source() {
    let world = TestContext::world();
    world.lock_b(&[("acme/gelu", GELU_SHA)]);
    let home = world.cache.parent().unwrap().join("home");
    fs_err::create_dir_all(&home).unwrap();
    assert_ok(&download(&world, &[("HF_TOKEN", "hf_crlf\r\n")], &home));
    assert_eq!(
        hub_auth(&world.requests()).last().map(String::as_str),
        Some("Bearer hf_crlf")
    );
    let from_env = download(&world, &[("HF_TOKEN", "hf_\u{1}x")], &home);
    fs_err::write(home.join("token"), "hf_a\u{7}b\n").unwrap();
    let _ = fs_err::remove_dir_all(&world.cache);
    let from_file = download(&world, &[], &home);
    kernels_test_support::snapshot!(
        "unsendable_token",
        format!(
            "{}\n--- token file\n{}",
            stderr(&from_env),
            stderr(&from_file)
        ),
        &[(r"token file \S+/home/token", "token file [HOME]/token")]
    );
    assert_eq!(
        (from_env.status.code(), from_file.status.code()),
        (Some(1), Some(1))
    );
}
