//! The command-line surface: `--help` of every command, `docs/cli.md`, rendered
//! diagnostics (colour off), `lock --check`, the lock-state flags, conflicted locks
//! and `--format json`. Snapshots (the shared `snapshot!` macro of
//! `kernels-test-support`) live in `tests/it/snapshots/` (`cargo insta review`, or
//! `INSTA_UPDATE=always` to rewrite them).

use std::path::Path;
use std::process::Output;

use kernels_test_support::snapshot::SnapshotText;
use kernels_test_support::{self as common, NO_HUB, TestContext, snapshot};

/// Exit code, then stdout and stderr (unfiltered, for assertion messages).
fn rendered(output: &Output) -> String {
    output.snapshot_text()
}

/// Every visible command path (`[]`, `["lock"]`, …).
fn command_paths() -> Vec<Vec<String>> {
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        for sub in cmd.get_subcommands() {
            if !sub.is_hide_set() {
                path.push(sub.get_name().to_owned());
                walk(sub, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(&kernels::cli::command(), &mut Vec::new(), &mut out);
    out
}

#[test]
fn every_help_is_snapshot_tested() {
    let context = TestContext::new();
    let paths = command_paths();
    assert!(paths.len() >= 6, "{paths:?}");
    for path in paths {
        let output = context
            .kernels_without_hub()
            .args(&path)
            .arg("--help")
            .output()
            .unwrap();
        assert!(output.status.success(), "{path:?}");
        let name = if path.is_empty() {
            "help_kernels".to_owned()
        } else {
            format!("help_{}", path.join("_"))
        };
        snapshot!(name, String::from_utf8_lossy(&output.stdout));
    }
}

#[test]
fn cli_reference_is_fresh() {
    let output = TestContext::new().run(&["generate-cli-reference"]);
    assert!(output.status.success());
    let generated = String::from_utf8(output.stdout).unwrap();
    let path = common::repo_root().join("docs/cli.md");
    if std::env::var_os("KERNELS_BLESS").is_some() {
        fs_err::write(&path, &generated).unwrap();
    }
    let committed = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/cli.md is stale: run `cargo run -q -- generate-cli-reference > docs/cli.md`"
    );
    let headings: std::collections::BTreeSet<String> = generated
        .lines()
        .filter(|l| l.starts_with("## `kernels "))
        .map(str::to_owned)
        .collect();
    let expected: std::collections::BTreeSet<String> = command_paths()
        .iter()
        .filter(|p| !p.is_empty())
        .map(|path| format!("## `kernels {}`", path.join(" ")))
        .collect();
    let missing: Vec<&String> = expected.difference(&headings).collect();
    assert!(missing.is_empty(), "no section for {missing:?}");
}

#[test]
fn version_and_completions() {
    let context = TestContext::new();
    let version = context.run(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!(
            "kernels {} (Rust lockfile tool)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    // Each script is a few hundred lines of generated shell code: rather than a
    // snapshot per shell, every visible subcommand name and long flag must be
    // a whole word of every script.
    let words = completion_words();
    assert!(
        words.is_superset(&["lock".to_owned(), "--check".to_owned()].into()),
        "{words:?}"
    );
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = context.run(&["completions", shell]);
        assert!(output.status.success(), "{shell}");
        assert!(output.stderr.is_empty(), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        let tokens: std::collections::BTreeSet<&str> = script
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .collect();
        let missing: Vec<&String> = words
            .iter()
            .filter(|w| {
                // fish names long flags without the dashes (`-l check`).
                let w = if shell == "fish" {
                    w.trim_start_matches("--")
                } else {
                    w.as_str()
                };
                // Set membership of a whole word, not a substring check.
                !tokens.contains(w)
            })
            .collect();
        assert!(missing.is_empty(), "{shell} completes none of {missing:?}");
    }
}

/// Every visible subcommand name and every visible long flag (`--check`) of
/// the CLI, the words a completion script must offer.
fn completion_words() -> std::collections::BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut std::collections::BTreeSet<String>) {
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                out.insert(format!("--{long}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            out.insert(sub.get_name().to_owned());
            walk(sub, out);
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(&kernels::cli::command(), &mut out);
    out
}

const BAD_MANIFEST: &str = r#"[project]
name = "demo"

[tool.kernels]
trsut = true

[tool.kernels.dependencies]
relu = 1
"kernels-community/activation" = ">=0.1, 0.2"
"kernels-community/rotary" = true
"kernels-community/moe" = { version = 1, revison = "main" }
"#;

#[test]
fn manifest_diagnostics() {
    let context = TestContext::new();
    let cases = [
        ("diag_many_problems", BAD_MANIFEST.to_owned()),
        (
            "diag_duplicate_key",
            "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n\"kernels-community/activation\" = 1\n\"kernels-community/relu\" = 2\n".to_owned(),
        ),
        (
            "diag_dependencies_typo",
            "[tool.kernels.dependecies]\n\"kernels-community/relu\" = 1\n".to_owned(),
        ),
    ];
    for (name, text) in cases {
        context.write("pyproject.toml", &text);
        let output = context
            .kernels_without_hub()
            .args(["lock", "--color", "never"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{name}");
        assert!(!context.project.join("kernels.lock").exists());
        snapshot!(name, output);
    }
}

#[test]
fn resolution_and_network_diagnostics() {
    let context = TestContext::new().with_pyproject(
        "[tool.kernels.dependencies]\n\"kernels-test/versions\" = \">=5\"\n\"nobody/nothing\" = 1\n",
    );
    let output = context.run(&["lock", "--color", "never"]);
    snapshot!("diag_resolution_and_network", output);
}

#[test]
fn color_follows_the_flag() {
    let context = TestContext::new().with_pyproject("[tool.kernels.dependencies]\nrelu = 1\n");
    let colored = context
        .kernels_without_hub()
        .args(["lock", "--color", "always"])
        .output()
        .unwrap();
    // Substring checks for escape sequences: colour is a matter of bytes.
    assert!(String::from_utf8_lossy(&colored.stderr).contains("\u{1b}["));
    for args in [&["lock", "--color", "never"][..], &["lock"][..]] {
        // `common::kernels` sets NO_COLOR, which `auto` obeys.
        let plain = context.kernels_without_hub().args(args).output().unwrap();
        assert!(
            !String::from_utf8_lossy(&plain.stderr).contains("\u{1b}["),
            "{args:?}"
        );
    }
}

const TWO_DEPS: &str = "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n\"kernels-community/relu\" = 1\n";

/// Locks `TWO_DEPS` against the bundled mirror, then empties the cache; returns
/// the context and the lock text.
fn locked_project() -> (TestContext, String) {
    let context = TestContext::new().with_pyproject(TWO_DEPS);
    context.run_ok(&["lock"]);
    if context.cache.exists() {
        fs_err::remove_dir_all(&context.cache).unwrap();
    }
    let lock = context.lockfile();
    (context, lock)
}

#[test]
fn lock_check_online_and_offline() {
    let (context, lock) = locked_project();
    let check = |extra: &[&str], endpoint: &str| {
        context
            .kernels()
            .env("HF_ENDPOINT", endpoint)
            .args(["lock", "--check"])
            .args(extra)
            .output()
            .unwrap()
    };
    // Fresh: online and offline (offline with no Hub at all).
    let online = check(&[], context.endpoint());
    assert_eq!(online.status.code(), Some(0), "{}", rendered(&online));
    let offline = check(&["--offline"], NO_HUB);
    assert_eq!(offline.status.code(), Some(0), "{}", rendered(&offline));
    snapshot!("check_offline_fresh_cold_cache", offline);

    // A stale commit: online shows the diff; offline cannot know.
    let activation_commit =
        kernels::lock::format::Lockfile::parse(&lock, Path::new("kernels.lock"))
            .unwrap()
            .locked_kernels(Path::new("kernels.lock"))
            .unwrap()[0]
            .commit
            .to_string();
    let old = "0123456789abcdef0123456789abcdef01234567";
    context.write("kernels.lock", &lock.replace(&activation_commit, old));
    let stale = check(&[], context.endpoint());
    assert_eq!(stale.status.code(), Some(1));
    snapshot!("check_online_stale", stale);
    let json = check(&["--format", "json"], context.endpoint());
    assert_eq!(json.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["up_to_date"], false);
    assert_eq!(doc["mode"], "online");
    assert_eq!(doc["findings"][0]["kind"], "changed");
    assert_eq!(doc["findings"][0]["locked_commit"], old);
    assert_eq!(
        doc["findings"][0]["resolved_commit"],
        activation_commit.as_str()
    );
    assert_eq!(check(&["--offline"], NO_HUB).status.code(), Some(0));
    // Offline, for another runtime: 0.17 does not read the `>=0.0.2` string
    // (reported before the lock's format is looked at).
    let other_runtime = check(&["--offline", "--target-runtime", "0.17.2"], NO_HUB);
    snapshot!("check_offline_other_runtime", other_runtime);

    // Structural staleness is caught offline.
    context.write(
        "pyproject.toml",
        &TWO_DEPS.replace(
            "\"kernels-community/relu\" = 1\n",
            "\"kernels-community/rotary\" = 1\n",
        ),
    );
    let offline = check(&["--offline"], NO_HUB);
    assert_eq!(offline.status.code(), Some(1));
    snapshot!("check_offline_stale", offline);
    let quiet = check(&["--offline", "-q"], NO_HUB);
    assert_eq!(quiet.status.code(), Some(1));
    assert!(quiet.stderr.is_empty() && quiet.stdout.is_empty());
    // Nothing was written by any check.
    assert_eq!(context.lockfile(), lock.replace(&activation_commit, old));
}

#[test]
fn offline_check_uses_cache_refs() {
    let (context, _) = locked_project();
    // Download by branch/tag with the Python-compatible cache layout: write the refs
    // a download by revision leaves behind.
    let lock =
        kernels::lock::format::Lockfile::read(&context.project.join("kernels.lock")).unwrap();
    let kernels = lock.locked_kernels(Path::new("kernels.lock")).unwrap();
    let hub = kernels_cache::HubCache::new(&context.cache);
    // A specifier string and a variant-hash lock: the runtime that reads
    // them is 0.13.0, whose cache folders are `models--`.
    let repo = |k: &kernels::lock::format::LockedKernel| {
        hub.repo(&k.repo_id, kernels_types::wire::RepoType::Model)
    };
    repo(&kernels[0])
        .write_ref("v0.0.1", kernels[0].commit.as_str())
        .unwrap();
    repo(&kernels[1])
        .write_ref("v1", kernels[1].commit.as_str())
        .unwrap();
    let output = context
        .kernels_without_hub()
        .args(["lock", "--check", "--offline", "-v"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", rendered(&output));
    snapshot!("check_offline_cache_refs", output);
}

#[test]
fn lock_state_flags() {
    let (context, lock) = locked_project();
    let manifest = context.project.join("pyproject.toml");
    fs_err::write(
        &manifest,
        format!("{TWO_DEPS}\"kernels-community/rotary\" = \">=0.0.1\"\n"),
    )
    .unwrap();

    // `kernels lock --locked` / KERNELS_LOCKED: fail, write nothing.
    snapshot!("lock_locked_stale", context.run(&["lock", "--locked"]));
    let env = context
        .kernels()
        .arg("lock")
        .env("KERNELS_LOCKED", "1")
        .output()
        .unwrap();
    assert_eq!(env.status.code(), Some(1));
    assert_eq!(context.lockfile(), lock);

    // `kernels download --locked` refuses the stale lock before downloading.
    let download = context
        .kernels_without_hub()
        .args(["download", "--locked", "--offline", "--all-variants"])
        .output()
        .unwrap();
    assert_eq!(download.status.code(), Some(1));
    snapshot!("download_locked_stale", download);

    // KERNELS_FROZEN: `kernels lock` refuses to update; `lock --check` ignores it.
    let frozen = context
        .kernels()
        .arg("lock")
        .env("KERNELS_FROZEN", "1")
        .output()
        .unwrap();
    snapshot!("lock_frozen_stale", frozen);
    let check = context
        .kernels_without_hub()
        .args(["lock", "--check", "--offline"])
        .env("KERNELS_FROZEN", "1")
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1));
    // KERNELS_OFFLINE and HF_HUB_OFFLINE make the check offline.
    for var in ["KERNELS_OFFLINE", "HF_HUB_OFFLINE"] {
        let offline = context
            .kernels_without_hub()
            .args(["lock", "--check"])
            .env(var, "1")
            .output()
            .unwrap();
        snapshot!(format!("check_offline_by_{var}"), offline);
    }

    // Up to date again: --locked passes and writes nothing new.
    fs_err::write(&manifest, TWO_DEPS).unwrap();
    let ok = context.run(&["lock", "--locked"]);
    assert_eq!(ok.status.code(), Some(0), "{}", rendered(&ok));
}

#[test]
fn conflicted_lock_is_reported_and_repaired() {
    let (context, lock) = locked_project();
    let kernels = kernels::lock::format::Lockfile::parse(&lock, Path::new("kernels.lock"))
        .unwrap()
        .locked_kernels(Path::new("kernels.lock"))
        .unwrap();
    let (activation, relu) = (&kernels[0].commit, &kernels[1].commit);
    // Both branches agree on an (older, made-up) activation commit and disagree on relu.
    let agreed_old = "00000000000000000000000000000000000000aa";
    let base = lock.replace(activation.as_str(), agreed_old);
    let relu_line = format!("\"sha\": \"{relu}\",");
    let ours = format!("\"sha\": \"{}\",", "1".repeat(40));
    let theirs = format!("\"sha\": \"{}\",", "2".repeat(40));
    let conflicted = base.replace(
        &format!("    {relu_line}\n"),
        &format!("<<<<<<< HEAD\n    {ours}\n=======\n    {theirs}\n>>>>>>> feature\n"),
    );
    assert_ne!(conflicted, base, "the conflict was not planted");
    context.write("kernels.lock", &conflicted);

    let check = context
        .kernels_without_hub()
        .args(["lock", "--check", "--offline"])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1));
    snapshot!("check_conflict", check);

    // The agreed entry is kept as is; only relu was resolved again.
    snapshot!("lock_repairs_conflict", context.run_ok(&["lock"]));
    assert_eq!(context.lockfile(), base);
}

#[test]
fn lock_format_json() {
    let context = TestContext::new().with_pyproject(TWO_DEPS);
    let output = context.run(&["lock", "--format", "json"]);
    assert!(output.status.success(), "{}", rendered(&output));
    assert!(output.stderr.is_empty(), "{}", rendered(&output));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["schema"], 2);
    assert_eq!(doc["command"], "lock");
    assert_eq!(doc["written"], true);
    assert_eq!(doc["previous_format"], serde_json::Value::Null);
    assert_eq!(doc["error"], serde_json::Value::Null);
    // What was locked, typed (schema 1 had the status lines here).
    let locked = &doc["locked"][1];
    assert_eq!(locked["repo_id"], "kernels-community/relu", "{doc:#}");
    assert_eq!(locked["version"], "v1", "{doc:#}");
    assert_eq!(locked["commit"], doc["kernels"][1]["commit"], "{doc:#}");
    assert_eq!(
        locked["variant_count"].as_u64(),
        Some(doc["kernels"][1]["variants"].as_array().unwrap().len() as u64),
        "{doc:#}"
    );
    assert_eq!(locked["required_by"], serde_json::Value::Null);
    assert_eq!(doc["kernels"][0]["repo_id"], "kernels-community/activation");
    assert_eq!(doc["kernels"][1]["repo_id"], "kernels-community/relu");
    assert_eq!(doc["format"], "variant-hash");
    assert_eq!(doc["kernels"][1]["commit"].as_str().unwrap().len(), 40);
    assert!(
        doc["kernels"][0]["variants"]
            .as_array()
            .is_some_and(|v| !v.is_empty())
    );
    let again = context.run(&["lock", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["written"], false);
    // Nothing was locked: text mode says up to date, and `locked` is empty.
    assert_eq!(doc["locked"], serde_json::json!([]), "{doc:#}");
    assert_eq!(doc["changes"], serde_json::json!([]), "{doc:#}");
    let upgraded = context.run(&["lock", "--upgrade", "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&upgraded.stdout).unwrap();
    assert_eq!(doc["locked"], serde_json::json!([]), "{doc:#}");
}

/// A 0.17 lock also holds transitive kernel dependencies (`kernels-community/einops`
/// here, required by `kernels-test/kernel-deps`): offline they cannot be told from a
/// removed dependency, so they are not reported as stale.
#[test]
fn offline_check_accepts_transitive_entries_of_a_kernel_locks_file() {
    const FIXTURE: &str = "kernels-tests-kernel_locking-97dab31e";
    let context = TestContext::new().with_fixture_project(FIXTURE);
    fs_err::copy(
        common::repo_root()
            .join("fixtures/projects")
            .join(FIXTURE)
            .join("kernels.lock.real"),
        context.project.join("kernels.lock"),
    )
    .unwrap();
    let output = context
        .kernels_without_hub()
        .args(["lock", "--check", "--offline", "-v"])
        .output()
        .unwrap();
    snapshot!("check_offline_transitive_entries", output);
}

/// `kernels … | head`: a reader that goes away ends the command quietly with
/// exit 1, not a panic (exit 101).
#[test]
fn closed_output_pipe_is_not_a_panic() {
    // The read end is closed before the child starts, so its first write fails
    // (a pipe it could fill before the reader went away made this test racy).
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = common::kernels_scrubbed()
        .arg("generate-cli-reference")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    // Exit 1 with a one-line error, no panic message.
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    snapshot!("closed_output_pipe", output);
}

/// URL settings are checked before any command runs (issue 45 item 8): a
/// value without a scheme, a bad port or a user name / password holding an
/// unencoded delimiter is one error naming the variable, the value
/// (credentials redacted) and the value to set; nothing is requested.
#[test]
fn url_settings_are_checked_at_start() {
    let context = TestContext::new().with_pyproject(TWO_DEPS);
    let run = |name: &str, value: &str| {
        context
            .kernels()
            .env(name, value)
            .args(["lock"])
            .output()
            .unwrap()
    };
    for (snap, name, value) in [
        ("url_setting_no_scheme", "HF_ENDPOINT", "127.0.0.1:8080"),
        (
            "url_setting_bad_port",
            "HF_ENDPOINT",
            "http://127.0.0.1:80800",
        ),
        (
            "url_setting_user_info",
            "HF_ENDPOINT",
            "https://hf_user:s3cret/x@huggingface.co",
        ),
        (
            "url_setting_proxy_port",
            "HTTPS_PROXY",
            "http://user:s3cret@proxy.example:x",
        ),
    ] {
        let out = run(name, value);
        assert_eq!(out.status.code(), Some(1), "{}", rendered(&out));
        // The snapshot names the variable; a secret must appear nowhere.
        assert!(!rendered(&out).contains("s3cret"), "{}", rendered(&out));
        assert!(!context.project.join("kernels.lock").exists());
        snapshot!(snap, out);
    }
    // A proxy without a scheme is `http://…`, as curl reads it; checked
    // before any command (`kernels cache dir` needs no network, and passes).
    let out = context
        .kernels()
        .env("HTTPS_PROXY", "proxy.example:3128")
        .args(["cache", "dir"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", rendered(&out));
}
