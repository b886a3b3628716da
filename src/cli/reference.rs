//! The Markdown command-line reference (`docs/cli.md`), rendered from the clap
//! definitions so it cannot drift from `--help` (a test compares the file).

use std::fmt::Write;

/// Renders every visible command's long help, depth first, each under a heading.
pub fn markdown(root: &clap::Command) -> String {
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the clap definitions by `kernels generate-cli-reference`; \
         do not edit by hand (`cargo test --test it cli_reference` checks it).\n",
    );
    let mut root = root.clone().term_width(100);
    root.build();
    render(&root, &mut Vec::new(), &mut out);
    out
}

fn render(cmd: &clap::Command, path: &mut Vec<String>, out: &mut String) {
    path.push(cmd.get_name().to_owned());
    let title = path.join(" ");
    let mut cmd = cmd.clone().bin_name(&title);
    let help = cmd.render_long_help().to_string();
    let _ = write!(out, "\n## `{title}`\n\n```text\n{}\n```\n", help.trim_end());
    for sub in cmd.get_subcommands() {
        if !sub.is_hide_set() && sub.get_name() != "help" {
            render(sub, path, out);
        }
    }
    path.pop();
}
