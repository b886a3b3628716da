//! One cause, one message, for `kernels lock` (and `lock --check`, `add`): an
//! unreachable Hub, offline mode or a rejected token over the six kernels of
//! the text-generation-inference project is one error naming the kernels, and
//! the lock is left as it was. Token advice never tells to set a token that
//! was sent.

use std::path::Path;
use std::process::Output;

use kernels_test_support::snapshot::{SnapshotText, sorted_kernel_lines};
use kernels_test_support::{self as common, Server, TestContext, snapshot};

use crate::terminal::tgi;

/// `kernels ARGS` in the project against an endpoint nothing listens on, with
/// two retries.
fn unreachable(context: &TestContext, args: &[&str]) -> Output {
    context
        .kernels_without_hub()
        .args(args)
        .env("KERNELS_MAX_RETRIES", "2")
        .output()
        .unwrap()
}

/// Standard error of `out`.
fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

#[test]
fn an_unreachable_hub_is_one_lock_error_after_visible_retries() {
    // `versions` asks the project's Python for torch: the stub answers.
    let p = tgi().with_stub_torch();
    let lock = p.project.join("kernels.lock");
    let manifest = p.project.join("pyproject.toml");
    let (before, manifest_before) = (read(&lock), read(&manifest));
    // One line per retry round, one error naming the endpoint and at most three
    // kernels, no cause chain.
    for (args, name) in [
        (&["lock"][..], "unreachable_lock"),
        (&["lock", "--check"], "unreachable_lock_check"),
        (&["lock", "--upgrade"], "unreachable_lock_upgrade"),
    ] {
        snapshot!(name, unreachable(&p, args));
        assert_eq!(read(&lock), before, "{args:?}: the lock changed");
    }

    // Without a lock: nothing is written either.
    fs_err::remove_file(&lock).unwrap();
    snapshot!("unreachable_lock_without_lock", unreachable(&p, &["lock"]));
    assert!(!lock.exists(), "a lock was written");
    fs_err::write(&lock, &before).unwrap();

    // `kernels add` locks too: one error, both files put back.
    snapshot!(
        "unreachable_add",
        unreachable(&p, &["add", "kernels-community/relu", "1"])
    );
    assert_eq!(read(&manifest), manifest_before);
    assert_eq!(read(&lock), before);

    // One request (`add` without a requirement, `versions`): one line too.
    for (args, name) in [
        (
            &["add", "kernels-community/relu"][..],
            "unreachable_add_latest",
        ),
        (
            &["versions", "kernels-community/relu"],
            "unreachable_versions",
        ),
    ] {
        snapshot!(name, unreachable(&p, args));
    }
    assert_eq!(read(&manifest), manifest_before);

    // `kernels outdated` reads every kernel's refs: one error (exit 1), and no
    // claim that the kernels are up to date.
    snapshot!("unreachable_outdated", unreachable(&p, &["outdated"]));

    // `--format json`: one document on stdout with the failure typed.
    for (args, name) in [
        (&["lock", "--format", "json"][..], "unreachable_lock_json"),
        (
            &["lock", "--check", "--format", "json"],
            "unreachable_lock_check_json",
        ),
    ] {
        snapshot!(name, unreachable(&p, args));
    }
    assert_eq!(read(&lock), before);
}

#[test]
fn offline_lock_is_one_error() {
    let p = tgi();
    let lock = p.project.join("kernels.lock");
    let before = read(&lock);
    for env in ["HF_HUB_OFFLINE", "KERNELS_OFFLINE"] {
        let out = p.kernels().arg("lock").env(env, "1").output().unwrap();
        snapshot!(format!("offline_lock_{env}"), out);
    }
    snapshot!(
        "offline_lock_json",
        p.run(&["lock", "--offline", "--format", "json"])
    );
    assert_eq!(read(&lock), before);
}

#[test]
fn a_rejected_token_is_one_error_that_names_where_it_came_from() {
    let p = tgi();
    let lock = p.project.join("kernels.lock");
    let before = read(&lock);
    // The Hub refuses every request: 401 without an error code.
    common::add_fault(
        p.endpoint(),
        serde_json::json!({"listener": "hub", "status": 401, "count": 1000}),
    );
    let out = p
        .kernels()
        .args(["lock", "-U"])
        .env("HF_TOKEN", "hf_wrong")
        .env("KERNELS_MAX_RETRIES", "2")
        .output()
        .unwrap();
    // Stays a substring check: a secret must appear nowhere in the output.
    assert!(
        !stderr(&out).contains("hf_wrong"),
        "the token is never printed:\n{}",
        stderr(&out)
    );
    snapshot!("rejected_token", out);
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
    let p = TestContext::with_server(Server::start(&private_moe_mirror(tmp.path())))
        .with_fixture_project("tgi-server-db931fcf")
        .with_stub_torch();
    let kernels = |args: &[&str], token: Option<&str>| {
        let mut cmd = p.kernels();
        cmd.args(args);
        if let Some(token) = token {
            cmd.env("HF_TOKEN", token);
        }
        let out = cmd.output().unwrap();
        // Stays a substring check: a secret must appear nowhere in the output.
        assert!(
            !stderr(&out).contains("hf_wrong"),
            "{args:?}: the token is printed:\n{}",
            stderr(&out)
        );
        out
    };
    let lock = p.project.join("kernels.lock");

    // Anonymous: the advice is to set a token.
    snapshot!("private_anonymous_lock", kernels(&["lock"], None));
    assert!(!lock.exists());

    // A token was sent: the help names its source, never tells to set it.
    snapshot!(
        "private_wrong_token_lock",
        kernels(&["lock"], Some("hf_wrong"))
    );
    assert!(!lock.exists());
    snapshot!(
        "private_wrong_token_versions",
        kernels(&["versions", "kernels-community/moe"], Some("hf_wrong"))
    );

    assert!(kernels(&["lock"], Some("hf_good")).status.success());
    snapshot!(
        "private_wrong_token_outdated",
        kernels(&["outdated"], Some("hf_wrong"))
    );
    assert!(
        kernels(&["lock", "--check"], Some("hf_good"))
            .status
            .success()
    );
    let locked = read(&lock);

    snapshot!(
        "private_wrong_token_download",
        // Kernels are reported as they finish.
        sorted_kernel_lines(
            &kernels(&["download", "--all-variants"], Some("hf_wrong")).snapshot_text()
        )
    );
    snapshot!(
        "private_wrong_token_add",
        kernels(
            &["add", "kernels-community/moe", ">=0.1.2"],
            Some("hf_wrong")
        )
    );
    assert_eq!(read(&lock), locked);
}
