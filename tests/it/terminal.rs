//! What a person sees in a terminal: `kernels download` of the bundled mirror's
//! text-generation-inference project under a pseudo-terminal (`script` from
//! util-linux) at several widths, the bytes replayed through a terminal emulator
//! (`vt100`). Every intermediate screen is checked (no wrapped row, one total
//! bar and at most three file bars), and the final screen is a snapshot.

use std::path::Path;
use std::process::Command;

use kernels_test_support::snapshot::sorted_kernel_lines;
use kernels_test_support::{self as common, TestContext, snapshot};

/// The text-generation-inference project locked against the bundled mirror
/// (served with `--test-control`), and a fresh cache.
pub(crate) fn tgi() -> TestContext {
    let context = TestContext::with_test_control().with_fixture_project("tgi-server-db931fcf");
    context.run_ok(&["lock"]);
    context
}

/// Delays the first `count` CDN answers by `ms` so that bars are drawn.
fn slow_cdn(p: &TestContext, ms: u64, count: u64) {
    common::add_fault(
        &p.server.endpoint,
        serde_json::json!({"listener": "cdn", "latency_ms": ms, "count": count}),
    );
}

/// Runs `kernels ARGS` on a `cols`-column pseudo-terminal; returns the raw bytes.
fn on_terminal(p: &TestContext, cols: u16, args: &str, env: &[(&str, &str)]) -> Vec<u8> {
    let line = format!(
        "stty cols {cols} rows 60; exec {} {args}",
        common::kernels_bin().display()
    );
    let mut cmd = Command::new("script");
    cmd.args(["-qefc", &line, "/dev/null"]);
    let template = common::kernels(&p.server.endpoint, &p.cache);
    for (key, value) in template.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd.env("TERM", "xterm-256color").current_dir(&p.project);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("run `script` (util-linux)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    out.stdout
}

/// Replays `bytes` on a `cols`-column screen, checking every drawn state;
/// returns the final screen.
fn replay(bytes: &[u8], cols: u16) -> String {
    replay_checked(bytes, cols, true)
}

fn replay_checked(bytes: &[u8], cols: u16, bars: bool) -> String {
    let rows = 3000;
    let mut parser = vt100::Parser::new(rows, cols, 0);
    let mut max_bars = 0;
    // Checked just before each escape sequence: every text write before it is
    // complete there (colour is off, so a line holds no escape of its own).
    let mut starts: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == 0x1b)
        .map(|(i, _)| i)
        .collect();
    starts.push(bytes.len());
    let mut from = 0;
    for to in starts {
        parser.process(&bytes[from..to]);
        from = to;
        let screen = parser.screen();
        // A bar drawn wider than the terminal would leave a row ending mid-bar.
        let cursor = screen.cursor_position().0;
        let near = cursor.saturating_sub(6)..(cursor + 2).min(rows);
        let lines: Vec<String> = screen
            .rows(0, cols)
            .skip(near.start.into())
            .take(near.len())
            .collect();
        for line in &lines {
            let line = line.trim_end();
            let total = line.starts_with("Downloading [");
            let file = line.starts_with("  ") && !line.starts_with("   ");
            // Substring checks on bar frames, whose counts and rates change
            // while they are drawn.
            assert!(
                (!total || line.contains(" ETA ")) && (!file || line.ends_with('B')),
                "a bar does not fit {cols} columns: {line:?}\n{}",
                screen.contents()
            );
            assert!(line.chars().count() <= usize::from(cols));
        }
        let contents = lines.join("\n");
        let totals = contents
            .lines()
            .filter(|l| l.starts_with("Downloading ["))
            .count();
        assert!(totals <= 1, "{contents}");
        let files = contents.lines().filter(|l| l.starts_with("  ")).count();
        assert!(files <= 3, "more than 3 file bars:\n{contents}");
        // No frame draws an empty bar.
        assert!(!contents.contains("0 B/0 B"), "an empty bar:\n{contents}");
        max_bars = max_bars.max(totals);
    }
    if bars {
        assert_eq!(max_bars, 1, "the total bar was never drawn");
    }
    // No per-kernel line wrapped: each row that names a kernel starts a line.
    let screen = parser.screen();
    for (i, row) in screen.rows(0, cols).enumerate() {
        let i = u16::try_from(i).unwrap();
        let kernel_line = row
            .trim_start_matches("Downloaded ")
            .starts_with("kernels-community/");
        if kernel_line && i + 1 < rows {
            assert!(
                !screen.row_wrapped(i),
                "row {i} wraps at {cols} columns: {row:?}"
            );
        }
    }
    screen.contents().trim_end().to_owned() + "\n"
}

fn relative(path: &Path, p: &TestContext) -> String {
    path.display()
        .to_string()
        .replace(&p.cache.display().to_string(), "[CACHE]")
}

#[test]
fn download_screens_at_60_80_and_200_columns() {
    for cols in [60u16, 80, 200] {
        let p = tgi();
        // Slow transfers so that bars are drawn.
        slow_cdn(&p, 300, 8);
        let bytes = on_terminal(&p, cols, "download . --all-variants --concurrency 4", &[]);
        let screen = replay(&bytes, cols);
        let screen = relative(Path::new(&screen), &p);
        snapshot!(
            format!("download_screen_{cols}"),
            sorted_kernel_lines(&screen)
        );
    }
}

#[test]
fn verbose_log_lines_are_all_kept_above_the_bars() {
    let p = tgi();
    let bytes = on_terminal(&p, 80, "download . --all-variants -v", &[]);
    let screen = replay(&bytes, 80);
    // Counting the log lines (their text varies from run to run).
    let logged = screen.lines().filter(|l| l.contains(" DEBUG ")).count();

    // The same run without a terminal logs the same number of lines.
    let p = tgi();
    let out = common::kernels(&p.server.endpoint, &p.cache)
        .args(["download", ".", "--all-variants", "-v"])
        .current_dir(&p.project)
        .output()
        .unwrap();
    let piped = String::from_utf8_lossy(&out.stderr);
    // Counting the log lines again.
    assert_eq!(
        logged,
        piped.lines().filter(|l| l.contains(" DEBUG ")).count(),
        "log lines lost on the terminal:\n{screen}"
    );
    assert!(logged > 50, "{screen}");
    // Stays a substring check: the verbose log's order and timings vary.
    assert!(
        !piped.contains('\x1b') && !piped.contains("Downloading ["),
        "bars without a terminal: {piped}"
    );
}

#[test]
fn no_progress_and_hf_hub_disable_progress_bars_give_plain_lines() {
    for (name, args, env) in [
        ("no_progress", "download . --no-progress", &[][..]),
        (
            "hf_hub_disable_progress_bars",
            "download .",
            &[("HF_HUB_DISABLE_PROGRESS_BARS", "1")][..],
        ),
    ] {
        let p = tgi();
        let bytes = on_terminal(&p, 80, &format!("{args} --all-variants"), env);
        // The bytes as written: no bar and no escape sequence, only lines.
        let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
        let text = relative(Path::new(&text), &p);
        snapshot!(name, sorted_kernel_lines(&text));
    }
}

#[test]
fn lock_shows_a_spinner_while_resolving() {
    let p = tgi();
    fs_err::remove_file(p.project.join("kernels.lock")).unwrap();
    let url = format!("{}/__fixture/faults", p.server.endpoint);
    let rule = serde_json::json!({"listener": "hub", "latency_ms": 300, "count": 6});
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let resp = reqwest::Client::new()
                .post(&url)
                .json(&rule)
                .send()
                .await
                .unwrap();
            assert!(resp.status().is_success());
        });
    let bytes = on_terminal(&p, 80, "lock .", &[]);
    let text = String::from_utf8_lossy(&bytes);
    // Stays a substring check: the spinner's frames depend on timing.
    assert!(text.contains("Resolving 6 kernels"), "{text:?}");
    // What stays on the screen: no spinner, the lock written.
    snapshot!("lock_screen", replay_checked(&bytes, 80, false));
}
