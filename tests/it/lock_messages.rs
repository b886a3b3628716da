//! One cause, one message, for `kernels lock` (and `lock --check`, `add`): an
//! unreachable Hub, offline mode or a rejected token over the six kernels of
//! the text-generation-inference project is one error naming the kernels, and
//! the lock is left as it was. Token advice never tells to set a token that
//! was sent.

use std::path::Path;

use serde_json::Value;

use kernels_test_support::{self as common, Server};

use crate::terminal::{Project, project};

const DEAD: &str = "http://127.0.0.1:9";

/// `kernels ARGS` in the project against `endpoint`, with two retries.
fn run(p: &Project, endpoint: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = common::kernels(endpoint, &p.cache);
    cmd.args(args)
        .current_dir(&p.project)
        .env("KERNELS_MAX_RETRIES", "2");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many diagnostics `err` holds (each has one `×` line).
fn errors(err: &str) -> usize {
    err.lines()
        .filter(|l| l.trim_start().starts_with('×'))
        .count()
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

fn fault(p: &Project, rule: Value) {
    common::add_fault(&p.server.endpoint, rule);
}

#[test]
fn an_unreachable_hub_is_one_lock_error_after_visible_retries() {
    let p = project();
    let lock = p.project.join("kernels.lock");
    let manifest = p.project.join("pyproject.toml");
    let (before, manifest_before) = (read(&lock), read(&manifest));
    for args in [&["lock"][..], &["lock", "--check"], &["lock", "--upgrade"]] {
        let (code, _, err) = run(&p, DEAD, args, &[]);
        assert_eq!(code, 1, "{args:?}: {err}");
        let retries: Vec<&str> = err.lines().filter(|l| l.contains("retrying in")).collect();
        assert_eq!(
            retries.len(),
            2,
            "{args:?}: one line per retry round:\n{err}"
        );
        assert_eq!(errors(&err), 1, "{args:?}:\n{err}");
        assert_eq!(err.matches("cannot reach").count(), 1, "{args:?}:\n{err}");
        assert!(
            err.contains(&format!("cannot reach the Hub at {DEAD} (")),
            "{args:?}: the endpoint is named:\n{err}"
        );
        assert!(
            err.contains(
                "kernels-community/paged-attention, kernels-community/moe, kernels-community/punica-sgmv and 3 more"
            ),
            "{args:?}: at most three kernels named:\n{err}"
        );
        assert!(err.contains("check HF_ENDPOINT"), "{args:?}:\n{err}");
        assert!(!err.contains("tcp connect error"), "no cause chain:\n{err}");
        assert!(err.lines().count() < 15, "{args:?}:\n{err}");
        assert_eq!(read(&lock), before, "{args:?}: the lock changed");
    }

    // Without a lock: nothing is written either.
    fs_err::remove_file(&lock).unwrap();
    let (code, _, err) = run(&p, DEAD, &["lock"], &[]);
    assert_eq!((code, errors(&err)), (1, 1), "{err}");
    assert!(!lock.exists(), "a lock was written");
    fs_err::write(&lock, &before).unwrap();

    // `kernels add` locks too: one error, both files put back.
    let (code, _, err) = run(&p, DEAD, &["add", "kernels-community/relu", "1"], &[]);
    assert_eq!((code, errors(&err)), (1, 1), "{err}");
    assert!(err.contains("cannot reach the Hub at"), "{err}");
    assert!(err.contains("and 4 more"), "{err}");
    assert!(err.lines().count() < 15, "{err}");
    assert_eq!(read(&manifest), manifest_before);
    assert_eq!(read(&lock), before);

    // One request (`add` without a requirement, `versions`): one line too.
    for args in [
        &["add", "kernels-community/relu"][..],
        &["versions", "kernels-community/relu"],
    ] {
        let (code, _, err) = run(&p, DEAD, args, &[]);
        assert_eq!((code, errors(&err)), (1, 1), "{args:?}: {err}");
        assert!(
            err.contains(&format!("cannot reach the Hub at {DEAD} (")),
            "{args:?}: {err}"
        );
        assert_eq!(
            err.lines().filter(|l| l.contains("retrying in")).count(),
            2,
            "{args:?}: {err}"
        );
        assert!(!err.contains("tcp connect error"), "{args:?}: {err}");
    }
    assert_eq!(read(&manifest), manifest_before);

    // `kernels outdated` reads every kernel's refs: one error (exit 1), and no
    // claim that the kernels are up to date.
    let (code, _, err) = run(&p, DEAD, &["outdated"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("up to date"), "{err}");
    assert_eq!(err.matches("cannot reach").count(), 1, "{err}");
    assert!(
        err.contains(&format!("cannot reach the Hub at {DEAD} (")),
        "{err}"
    );
    assert!(err.contains("and 3 more"), "{err}");
    assert!(!err.contains("up to date"), "{err}");
    // The two retry lines and one error.
    assert!(err.lines().count() < 10, "{err}");

    // `--format json`: one document on stdout with the failure typed.
    for (args, command, schema) in [
        (&["lock", "--format", "json"][..], "lock", 2),
        (&["lock", "--check", "--format", "json"], "lock --check", 1),
    ] {
        let (code, out, err) = run(&p, DEAD, args, &[]);
        assert_eq!(code, 1, "{err}");
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(doc["command"], command, "{doc:#}");
        assert_eq!(doc["schema"], schema, "{doc:#}");
        assert_eq!(
            doc["error"]["code"], "kernels::lock::unreachable",
            "{doc:#}"
        );
        assert!(doc["error"]["message"].as_str().unwrap().contains(DEAD));
        let failed = doc["failed"].as_array().unwrap();
        assert_eq!(failed.len(), 6, "{doc:#}");
        assert_eq!(failed[0]["repo_id"], "kernels-community/paged-attention");
        assert_eq!(failed[0]["code"], "kernels::hub::transport");
        assert_eq!(errors(&err), 1, "{err}");
    }
    assert_eq!(read(&lock), before);
}

#[test]
fn offline_lock_is_one_error() {
    let p = project();
    let lock = p.project.join("kernels.lock");
    let before = read(&lock);
    for env in [("HF_HUB_OFFLINE", "1"), ("KERNELS_OFFLINE", "1")] {
        let (code, _, err) = run(&p, &p.server.endpoint, &["lock"], &[env]);
        assert_eq!(code, 1, "{err}");
        assert_eq!(errors(&err), 1, "{env:?}:\n{err}");
        assert!(err.contains("offline mode is enabled"), "{err}");
        assert!(err.contains("and 3 more"), "{err}");
        assert!(err.contains("kernels lock --check --offline"), "{err}");
        assert!(err.lines().count() < 10, "{err}");
    }
    let (code, out, _) = run(
        &p,
        &p.server.endpoint,
        &["lock", "--offline", "--format", "json"],
        &[],
    );
    assert_eq!(code, 1);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["error"]["code"], "kernels::lock::offline", "{doc:#}");
    assert_eq!(doc["failed"][0]["code"], "kernels::hub::offline", "{doc:#}");
    assert_eq!(read(&lock), before);
}

#[test]
fn a_rejected_token_is_one_error_that_names_where_it_came_from() {
    let p = project();
    let lock = p.project.join("kernels.lock");
    let before = read(&lock);
    // The Hub refuses every request: 401 without an error code.
    fault(
        &p,
        serde_json::json!({"listener": "hub", "status": 401, "count": 1000}),
    );
    let (code, _, err) = run(
        &p,
        &p.server.endpoint,
        &["lock", "-U"],
        &[("HF_TOKEN", "hf_wrong")],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(errors(&err), 1, "{err}");
    assert_eq!(err.matches("authentication failed").count(), 1, "{err}");
    assert!(
        err.contains(
            "could not resolve kernels-community/paged-attention, kernels-community/moe, kernels-community/punica-sgmv and 3 more; kernels.lock was not changed"
        ),
        "{err}"
    );
    assert!(
        err.contains("the token from HF_TOKEN was sent and rejected"),
        "{err}"
    );
    assert!(!err.contains("set HF_TOKEN"), "{err}");
    assert!(
        !err.contains("hf_wrong"),
        "the token is never printed:\n{err}"
    );
    assert!(err.lines().count() < 10, "{err}");
    assert_eq!(read(&lock), before);
}

/// The bundled mirror with `kernels-community/moe` private to `hf_good`.
fn private_moe_mirror(root: &Path) -> std::path::PathBuf {
    let mirror = root.join("mirror");
    for entry in walkdir::WalkDir::new(common::mirror_dir()) {
        let entry = entry.unwrap();
        let target = mirror.join(entry.path().strip_prefix(common::mirror_dir()).unwrap());
        if entry.file_type().is_dir() {
            fs_err::create_dir_all(&target).unwrap();
        } else {
            fs_err::copy(entry.path(), &target).unwrap();
        }
    }
    let toml = mirror.join("repos/kernels/kernels-community/moe/repo.toml");
    let text = read(&toml);
    // The keys go before the first table.
    let (head, tables) = text.split_at(text.find("\n[").unwrap());
    fs_err::write(
        &toml,
        format!("{head}\nprivate = true\nallowed_tokens = [\"hf_good\"]\n{tables}"),
    )
    .unwrap();
    mirror
}

#[test]
fn a_token_that_was_sent_is_never_told_to_be_set() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&private_moe_mirror(tmp.path()));
    let dir = tmp.path().join("project");
    fs_err::create_dir(&dir).unwrap();
    fs_err::copy(
        common::repo_root().join("fixtures/projects/tgi-server-db931fcf/pyproject.toml"),
        dir.join("pyproject.toml"),
    )
    .unwrap();
    let cache = tmp.path().join("cache");
    let kernels = |args: &[&str], token: Option<&str>| {
        let mut cmd = common::kernels(&server.endpoint, &cache);
        cmd.args(args).current_dir(&dir);
        if let Some(token) = token {
            cmd.env("HF_TOKEN", token);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let coherent = |what: &str, err: &str| {
        assert!(
            err.contains("the token from HF_TOKEN was sent"),
            "{what}: the help names the token's source:\n{err}"
        );
        assert!(
            !err.contains("set HF_TOKEN"),
            "{what}: no advice to set the token that was sent:\n{err}"
        );
        assert!(!err.contains("note: a token is set"), "{what}:\n{err}");
        assert!(err.contains("hf auth whoami"), "{what}:\n{err}");
        assert!(
            !err.contains("hf_wrong"),
            "{what}: the token is printed:\n{err}"
        );
    };

    // Anonymous: the advice is to set a token.
    let (code, err) = kernels(&["lock"], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("set HF_TOKEN to a token with read access"),
        "{err}"
    );
    assert!(!dir.join("kernels.lock").exists());

    let (code, err) = kernels(&["lock"], Some("hf_wrong"));
    assert_eq!(code, 1, "{err}");
    assert_eq!(errors(&err), 1, "{err}");
    assert!(err.contains("kernels-community/moe"), "{err}");
    coherent("lock", &err);
    assert!(!dir.join("kernels.lock").exists());

    let (code, err) = kernels(&["versions", "kernels-community/moe"], Some("hf_wrong"));
    assert_eq!(code, 1, "{err}");
    coherent("versions", &err);

    let (code, err) = kernels(&["lock"], Some("hf_good"));
    assert_eq!(code, 0, "{err}");
    let (code, err) = kernels(&["outdated"], Some("hf_wrong"));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("cannot read the refs of kernels-community/moe"),
        "{err}"
    );
    assert!(
        err.contains("could not check 1 of 6 locked kernels (the causes are above); the other 5 are up to date"),
        "{err}"
    );
    let (code, err) = kernels(&["lock", "--check"], Some("hf_good"));
    assert_eq!(code, 0, "{err}");
    let lock = read(&dir.join("kernels.lock"));

    let (code, err) = kernels(&["download", "--all-variants"], Some("hf_wrong"));
    assert_eq!(code, 1, "{err}");
    coherent("download", &err);

    let (code, err) = kernels(
        &["add", "kernels-community/moe", ">=0.1.2"],
        Some("hf_wrong"),
    );
    assert_eq!(code, 1, "{err}");
    coherent("add", &err);
    assert_eq!(read(&dir.join("kernels.lock")), lock);
}
