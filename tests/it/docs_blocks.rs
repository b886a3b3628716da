//! Every command block of `docs/` (a fenced `sh` or `console` block) runs as
//! written, or says why it cannot run here with a marker on the line before
//! its fence: `<!-- docs-blocks: not run (REASON) -->` (Docker, a GPU, a
//! fleet's host names, minutes-long benchmarks). Each page's blocks run in
//! order in a fresh project locking `kernels-community/activation` against the
//! bundled mirror, after `kernels lock` and `kernels download --all-variants`,
//! with the placeholder paths the pages name (`../activation`, a checkout with
//! `build/`; `path/to/project`, a locked project) made first; the environment
//! holds only `PATH`, `HOME` and `HF_ENDPOINT` ([`clean_shell`]).

use std::path::Path;

use kernels_test_support::{self as common, Server};

use crate::doc_shell::{Block, clean_shell, fenced_blocks};

/// The marker that keeps a block from running, with its reason.
const NOT_RUN: &str = "<!-- docs-blocks: not run (";

/// The languages of command blocks.
const SHELLS: &[&str] = &["sh", "console", "bash", "shell"];

/// The commands of a block: `console` blocks run their `$ ` lines (the other
/// lines are output or comments), `sh` blocks every line that is not a
/// comment; a line ending in `\` continues on the next.
fn commands(block: &Block) -> Vec<String> {
    let console = block.lang == "console";
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for line in block.body.lines() {
        if open {
            let last = out.last_mut().expect("a command is open");
            last.push('\n');
            last.push_str(line);
        } else if let Some(command) = line.strip_prefix("$ ").filter(|_| console) {
            out.push(command.to_owned());
        } else if !console && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            out.push(line.to_owned());
        } else {
            continue;
        }
        open = line.ends_with('\\');
    }
    out
}

/// Runs `line` in `project`, asserting success.
fn run(line: &str, project: &Path, home: &Path, endpoint: &str, at: &str) {
    let out = clean_shell(line, project, home, endpoint).output().unwrap();
    assert!(
        out.status.success(),
        "{at}: `{line}` failed ({:?}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A project locking and caching `kernels-community/activation`, with the
/// placeholder paths of the pages.
fn setup(home: &Path, endpoint: &str) -> std::path::PathBuf {
    let project = home.join("project");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(
        project.join("pyproject.toml"),
        "[tool.kernels.dependencies]\n\"kernels-community/activation\" = \">=0.0.2\"\n",
    )
    .unwrap();
    for line in ["kernels lock", "kernels download --all-variants"] {
        run(line, &project, home, endpoint, "setup");
    }
    // `path/to/project`: the same locked project.
    let nested = project.join("path/to/project");
    fs_err::create_dir_all(&nested).unwrap();
    for file in ["pyproject.toml", "kernels.lock"] {
        fs_err::copy(project.join(file), nested.join(file)).unwrap();
    }
    // `../activation`: a checkout with `build/`, the cached snapshot's files
    // (in `models--`: the specifier string locks for 0.13.0).
    let snapshots =
        home.join(".cache/huggingface/hub/models--kernels-community--activation/snapshots");
    let snapshot = fs_err::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let copy = format!(
        "cp -RL '{}' '{}'",
        snapshot.display(),
        home.join("activation").display()
    );
    run(&copy, &project, home, endpoint, "setup");
    project
}

#[test]
fn every_docs_command_block_runs_or_says_why_not() {
    let server = Server::bundled();
    let docs = common::repo_root().join("docs");
    let mut pages: Vec<_> = fs_err::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let (mut ran, mut skipped) = (0, 0);
    for page in pages {
        let text = fs_err::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let blocks: Vec<Block> = fenced_blocks(&text)
            .into_iter()
            // Slice membership of a block's language, not a substring check.
            .filter(|b| SHELLS.contains(&b.lang.as_str()))
            .collect();
        let mut context = None;
        for block in blocks {
            let at = format!("docs/{name}:{}", block.line);
            if let Some(reason) = block.before.strip_prefix(NOT_RUN) {
                assert!(
                    reason.len() > " -->".len() + 1,
                    "{at}: the marker gives no reason"
                );
                skipped += 1;
                continue;
            }
            let (home, project) = context.get_or_insert_with(|| {
                let home = tempfile::tempdir().unwrap();
                let project = setup(home.path(), &server.endpoint);
                (home, project)
            });
            let lines = commands(&block);
            assert!(!lines.is_empty(), "{at}: a command block without a command");
            for line in lines {
                run(&line, project, home.path(), &server.endpoint, &at);
                ran += 1;
            }
        }
    }
    assert!(ran >= 10, "only {ran} docs commands ran");
    assert!(skipped >= 5, "only {skipped} blocks are marked as not run");
}
