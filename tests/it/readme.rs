//! The README's Usage section, run as written: its `pyproject.toml` in a fresh
//! directory outside the repository, every command of its `sh` block in order
//! against the bundled mirror (the stub torch stands in for the local torch).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use kernels_test_support::{self as common, Server};

/// The first fenced block of `lang` after `## Usage`.
fn usage_block(readme: &str, lang: &str) -> String {
    let usage = &readme[readme.find("## Usage").expect("a Usage section")..];
    let start = usage.find(&format!("```{lang}\n")).expect("the block") + lang.len() + 4;
    let end = usage[start..].find("```").unwrap() + start;
    usage[start..end].to_owned()
}

#[test]
fn every_usage_command_works_as_written() {
    let readme = fs_err::read_to_string(common::repo_root().join("README.md")).unwrap();
    let server = Server::bundled();
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    fs_err::create_dir(&project).unwrap();
    fs_err::write(project.join("pyproject.toml"), usage_block(&readme, "toml")).unwrap();
    let bin_dir = common::kernels_bin().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // An environment with torch (the stub) but no `kernels` runtime: the
    // default target runtime, which reads all three requirement forms.
    let venv = common::pyref_root().join("hub-2.4.0");
    let command = |line: &str| {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", line]);
        for name in common::scrubbed_vars() {
            cmd.env_remove(name);
        }
        cmd.current_dir(&project)
            .env("PATH", &path)
            .env("HOME", tmp.path())
            .env("HF_ENDPOINT", &server.endpoint)
            .env("KERNELS_CACHE", tmp.path().join("cache"))
            .env("NO_COLOR", "1")
            .env("VIRTUAL_ENV", &venv)
            .env(
                "PYTHONPATH",
                common::repo_root().join("tests/python/stub_torch"),
            )
            .env("STUB_TORCH_VERSION", "2.10.0")
            .env("STUB_TORCH_CUDA", "12.6");
        cmd
    };
    let block = usage_block(&readme, "sh");
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= 10, "{block}");
    for line in lines {
        if line.starts_with("kernels serve ") {
            // As written, serving the ./mirror the line before wrote; a free
            // port instead of 8080, which another process may hold.
            assert!(project.join("mirror").is_dir(), "no ./mirror to serve");
            // `exec` so that killing the child stops the server itself, not
            // only the shell around it.
            let line = format!("exec {}", line.replace("--port 8080", "--port 0"));
            let mut child = command(&line)
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
            continue;
        }
        let out = command(line).output().unwrap();
        assert!(
            out.status.success(),
            "`{line}` failed ({:?}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(project.join("kernels.lock").is_file());
    assert!(fs_err::read_dir(project.join("dist")).unwrap().count() > 0);
}
