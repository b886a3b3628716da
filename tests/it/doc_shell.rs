//! Reading the command blocks of the documentation and running them as a user
//! would: the fenced blocks of a Markdown text, and `sh -c` in a clean
//! environment. Shared by the README test ([`crate::readme`]) and the docs
//! test ([`crate::docs_blocks`]).

use std::path::Path;
use std::process::Command;

use kernels_test_support as common;

/// A fenced block of a Markdown text.
pub struct Block {
    /// The info string (`sh`, `console`, `toml`, or empty).
    pub lang: String,
    /// The lines between the fences, each ending in a newline.
    pub body: String,
    /// The line just before the opening fence (a `<!-- … -->` marker there
    /// says how a test treats the block).
    pub before: String,
    /// The 1-based line number of the opening fence.
    pub line: usize,
}

/// Every fenced block of `text`, in order.
pub fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut previous = "";
    let mut lines = text.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else {
            previous = line;
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| *l != "```")
            .collect();
        blocks.push(Block {
            lang: lang.trim().to_owned(),
            body: body.join("\n") + "\n",
            before: previous.to_owned(),
            line: number + 1,
        });
        previous = "```";
    }
    blocks
}

/// `sh -c line` in `dir` with nothing but `PATH` (the built binary, then the
/// system's directories), `HOME` and `HF_ENDPOINT`.
pub fn clean_shell(line: &str, dir: &Path, home: &Path, endpoint: &str) -> Command {
    let bin_dir = common::kernels_bin().parent().unwrap().to_owned();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", line])
        .env_clear()
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()),
        )
        .env("HOME", home)
        .env("HF_ENDPOINT", endpoint);
    cmd
}
