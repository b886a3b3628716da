//! The README's Usage section, run as written: every fenced block of the
//! section, in order (a `toml` block headed `# pyproject.toml` is written to a
//! fresh directory outside the repository, every line of an `sh` block is run
//! there), against the bundled mirror the section says to serve, in an
//! environment holding only `PATH`, `HOME` and `HF_ENDPOINT`: no torch, no
//! virtual environment, no variable from the developer's shell. And the
//! README's Documentation list, checked against `docs/`.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use kernels_test_support::{self as common, Server};

use crate::doc_shell::{clean_shell, fenced_blocks};

/// The text of the `## {title}` section, up to the next `## ` heading.
fn section<'a>(readme: &'a str, title: &str) -> &'a str {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("a {title} section"))
        + 1;
    let rest = &readme[start + 3..];
    let end = rest.find("\n## ").map_or(readme.len(), |i| start + 3 + i);
    &readme[start..end]
}

/// Runs a `kernels serve ./mirror --port 8080` line as written but on a free
/// port (another process may hold 8080), and checks that it serves.
fn serve_line(line: &str, project: &Path, home: &Path, endpoint: &str) {
    assert!(project.join("mirror").is_dir(), "no ./mirror to serve");
    // `exec` so that killing the child stops the server, not only the shell.
    let line = format!("exec {}", line.replace("--port 8080", "--port 0"));
    let mut child = clean_shell(&line, project, home, endpoint)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.starts_with("http://"), "{line}: {first:?}");
}

#[test]
fn every_usage_block_runs_as_written_without_torch() {
    let readme = fs_err::read_to_string(common::repo_root().join("README.md")).unwrap();
    let server = Server::bundled();
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    fs_err::create_dir(&project).unwrap();
    let torch = clean_shell("python3 -c 'import torch'", &project, home.path(), "")
        .output()
        .unwrap();
    assert!(!torch.status.success(), "the clean environment has torch");
    let mut ran = 0;
    for block in fenced_blocks(section(&readme, "Usage")) {
        let body = block.body;
        match block.lang.as_str() {
            "toml" if body.starts_with("# pyproject.toml\n") => {
                fs_err::write(project.join("pyproject.toml"), body).unwrap();
            }
            "sh" => {
                for line in body.lines().filter(|l| !l.trim().is_empty()) {
                    ran += 1;
                    if line.starts_with("kernels serve ") {
                        serve_line(line, &project, home.path(), &server.endpoint);
                        continue;
                    }
                    let out = clean_shell(line, &project, home.path(), &server.endpoint)
                        .output()
                        .unwrap();
                    assert!(
                        out.status.success(),
                        "`{line}` failed ({:?}):\n{}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
            other => panic!("a Usage block this test does not know how to run: {other:?}"),
        }
    }
    assert!(ran >= 10, "only {ran} commands in the Usage section");
    assert!(project.join("kernels.lock").is_file());
    assert!(fs_err::read_dir(project.join("dist")).unwrap().count() > 0);
}

#[test]
fn documentation_list_names_every_docs_page() {
    let root = common::repo_root();
    let readme = fs_err::read_to_string(root.join("README.md")).unwrap();
    let list = section(&readme, "Documentation");
    let linked: BTreeSet<String> = list
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_owned)
        .collect();
    for link in &linked {
        assert!(
            root.join(link).exists(),
            "README links {link}, which does not exist"
        );
    }
    let pages: BTreeSet<String> = fs_err::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    let missing: Vec<&String> = pages.difference(&linked).collect();
    assert!(
        missing.is_empty(),
        "README's Documentation list lacks {missing:?}"
    );
}
