//! The layers of `docs/architecture.md`, held against the code.
//!
//! Every `crate::…` and `super::…` path in `src/` (imports and paths in
//! code; comments and `#[cfg(test)]` modules left out) is resolved to the
//! module it names, and:
//!
//! * a top-level module of `src/` names only modules of a lower rank of the
//!   doc's "Layers" table (or itself), and each crate of `crates/` depends
//!   only on crates of a lower rank;
//! * inside `src/cli/`, a command file (a private `mod` of `src/cli/mod.rs`,
//!   one per subcommand, with its own submodules) names no other command
//!   file; the shared steps (`project/`) name no command file; the flag
//!   groups, the printer, progress, the JSON documents and the settings
//!   (the `pub mod`s but `project`) name neither.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A path named in a file: the line and the absolute segments (from the
/// crate root, at most three).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    line: usize,
    segments: Vec<String>,
}

/// The `.rs` files under `dir`, recursively, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The module path of a file under `src/`: `src/cli/add.rs` → `[cli, add]`,
/// `src/cli/project/mod.rs` → `[cli, project]`, `src/lib.rs` → `[]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

/// `text` without comments, string literals and the trailing
/// `#[cfg(test)] mod …` modules; line breaks are kept.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    // A quote as a character literal starts no string; a raw string ends
    // only at its own `"#`.
    let text = text.replace("'\"'", "' '").replace("'\\\"'", "' '");
    let text = without_raw_strings(&text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` with each raw string `r#"…"#` emptied (its line breaks kept).
fn without_raw_strings(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("r#\"") {
        out.push_str(&rest[..at]);
        let body = &rest[at + 3..];
        let end = body.find("\"#").unwrap_or(body.len());
        out.push_str("\"\"");
        out.extend(body[..end].chars().filter(|c| *c == '\n'));
        rest = body.get(end + 2..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// The paths `code` names after `crate::` or `super::`, made absolute for a
/// file of module `module`; a `{…}` group names each of its items.
fn named_paths(code: &str, module: &[String]) -> Vec<Named> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let root = ["crate::", "super::"]
            .into_iter()
            .find(|p| rest.starts_with(p));
        let boundary = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let (Some(root), true) = (root, boundary) else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let line = code[..at].matches('\n').count() + 1;
        let mut base: Vec<String> = if root == "crate::" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        let mut pos = at + root.len();
        while code[pos..].starts_with("super::") {
            base.pop();
            pos += "super::".len();
        }
        let mut found = Vec::new();
        tree(code, pos, &base, &mut found);
        out.extend(found.into_iter().map(|segments| Named { line, segments }));
        at = pos;
    }
    out
}

/// The paths of the use-tree at `pos` (`a::b`, `a::{b, c::d}`), each
/// appended to `base`, at most three segments deep.
fn tree(code: &str, pos: usize, base: &[String], out: &mut Vec<Vec<String>>) {
    let rest = &code[pos..];
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    tree(code, pos + 1 + start, base, out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    tree(code, pos + 1 + start, base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let trimmed = rest.trim_start();
    let skipped = rest.len() - trimmed.len();
    let ident: String = trimmed
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if ident.is_empty() || ident == "self" {
        if !base.is_empty() {
            out.push(base.to_vec());
        }
        return;
    }
    let mut path = base.to_vec();
    path.push(ident.clone());
    let after = pos + skipped + ident.len();
    if path.len() < 3 && code[after..].starts_with("::") {
        tree(code, after + 2, &path, out);
    } else {
        out.push(path);
    }
}

/// The ranks of the "Layers" table of `docs/architecture.md`: each
/// backquoted name of a row (`cli`, `kernels-hub`) with the row's rank.
fn ranks(doc: &str) -> BTreeMap<String, u32> {
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .expect("docs/architecture.md has a `## Layers` section");
    let mut out = BTreeMap::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(Ok(rank)) = cells.get(1).map(|c| c.parse::<u32>()) else {
            continue;
        };
        for name in cells[2].split('`').skip(1).step_by(2) {
            out.insert(name.trim_end_matches('/').to_owned(), rank);
        }
    }
    out
}

/// The modules of `src/cli/mod.rs`: (command files, shared infrastructure).
fn cli_modules(mod_rs: &str) -> (Vec<String>, Vec<String>) {
    let (mut commands, mut shared) = (Vec::new(), Vec::new());
    for line in code_of(mod_rs).lines() {
        if let Some(name) = line.strip_prefix("mod ") {
            commands.push(name.trim_end_matches(';').to_owned());
        } else if let Some(name) = line.strip_prefix("pub mod ") {
            shared.push(name.trim_end_matches(';').to_owned());
        }
    }
    (commands, shared)
}

/// What is wrong with one file of module `module` naming `named`, if
/// anything.
fn offence(
    module: &[String],
    named: &[String],
    ranks: &BTreeMap<String, u32>,
    commands: &[String],
) -> Option<String> {
    let (from, to) = (module.first()?, named.first()?);
    if from != to {
        let (Some(a), Some(b)) = (ranks.get(from), ranks.get(to)) else {
            return None;
        };
        return (b >= a).then(|| {
            format!(
                "`{from}` (rank {a}) imports `{to}` (rank {b}): only lower ranks may be imported"
            )
        });
    }
    if from != "cli" || module.len() < 2 || named.len() < 2 {
        return None;
    }
    let (here, there) = (&module[1], &named[1]);
    let command = |m: &String| commands.contains(m);
    if here == there {
        return None;
    }
    if command(there) {
        return Some(if command(here) {
            format!(
                "command file cli::{here} imports command file cli::{there}: move what both need into src/cli/project/"
            )
        } else {
            format!(
                "cli::{here} imports command file cli::{there}: only the dispatch in src/cli/mod.rs may"
            )
        });
    }
    (there == "project" && here != "project" && !command(here))
        .then(|| format!("cli::{here} (flag groups, printer, JSON, settings) imports the use-case layer cli::project"))
}

/// Every offence of the tree at `root` (a checkout of this repository).
fn offences(root: &Path) -> Vec<String> {
    let doc = fs_err::read_to_string(root.join("docs/architecture.md")).unwrap();
    let ranks = ranks(&doc);
    let (commands, _) = cli_modules(&fs_err::read_to_string(root.join("src/cli/mod.rs")).unwrap());
    let src = root.join("src");
    let mut out = Vec::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let module = module_path(relative);
        // The root (`lib.rs`, `main.rs`) and the dispatch may name anything.
        if relative == Path::new("cli/mod.rs") || module.is_empty() {
            continue;
        }
        let code = code_of(&fs_err::read_to_string(&file).unwrap());
        for named in named_paths(&code, &module) {
            if let Some(why) = offence(&module, &named.segments, &ranks, &commands) {
                out.push(format!("src/{}:{}: {why}", relative.display(), named.line));
            }
        }
    }
    out.extend(crate_offences(root, &ranks));
    out
}

/// Each crate of `crates/` depending on a crate of an equal or higher rank.
fn crate_offences(root: &Path, ranks: &BTreeMap<String, u32>) -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(root.join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = fs_err::read_to_string(dir.join("Cargo.toml")).unwrap();
        let rank = *ranks
            .get(&name)
            .unwrap_or_else(|| panic!("docs/architecture.md gives no rank to `{name}`"));
        let deps = manifest
            .split("\n[dependencies]\n")
            .nth(1)
            .map(|s| s.split("\n[").next().unwrap_or_default())
            .unwrap_or_default();
        for dep in deps.lines().filter_map(|l| l.split(['.', ' ', '=']).next()) {
            if let Some(&other) = ranks.get(dep).filter(|_| dep.starts_with("kernels-"))
                && other >= rank
            {
                out.push(format!(
                    "crates/{name} (rank {rank}) depends on {dep} (rank {other})"
                ));
            }
        }
    }
    out
}

#[test]
fn no_import_runs_up_a_layer_and_no_command_imports_another() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let found = offences(root);
    assert!(
        found.is_empty(),
        "imports against the layers of docs/architecture.md:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_module_of_src_and_every_crate_has_a_rank() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ranks = ranks(&fs_err::read_to_string(root.join("docs/architecture.md")).unwrap());
    let mut missing = Vec::new();
    for dir in ["src", "crates"] {
        for entry in fs_err::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let name = file.trim_end_matches(".rs");
            let module = path.is_dir()
                || (dir == "src" && file.ends_with(".rs") && !matches!(name, "lib" | "main"));
            if module && !ranks.contains_key(name) {
                missing.push(format!("{dir}/{file}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "no rank in docs/architecture.md for {missing:?}"
    );
}

#[test]
fn the_check_catches_a_command_importing_another_and_an_upward_import() {
    let ranks: BTreeMap<String, u32> = [("lock", 2), ("install", 4), ("cli", 7)]
        .map(|(n, r)| (n.to_owned(), r))
        .into();
    let commands = ["add".to_owned(), "lock".to_owned()];
    let check = |file: &str, code: &str| -> Vec<String> {
        let module = module_path(Path::new(file));
        named_paths(&code_of(code), &module)
            .iter()
            .filter_map(|n| offence(&module, &n.segments, &ranks, &commands))
            .collect()
    };
    let planted = "use super::{printer::Printer, lock::LockArgs};\n";
    assert_eq!(check("cli/add.rs", planted).len(), 1);
    assert_eq!(
        check("cli/project/stale.rs", "use crate::cli::lock::run;").len(),
        1
    );
    assert_eq!(
        check("cli/add/fit.rs", "use super::super::lock::X;").len(),
        1
    );
    assert_eq!(
        check("cli/printer.rs", "use super::project::read;").len(),
        1
    );
    assert_eq!(
        check("lock/provenance.rs", "fn f(_: &crate::install::X) {}").len(),
        1
    );
    // Quotes in a character literal or a raw string hide nothing after them.
    let after_quotes = "let q = '\"'; let r = r#\"{\"a\": 1}\"#;\nuse super::lock::run;\n";
    assert_eq!(check("cli/add.rs", after_quotes).len(), 1);
    // Allowed: the shared layer, the flag groups, a lower layer, its own
    // submodules, comments and strings.
    let fine = "use super::project::read;\nuse super::args::X;\nuse crate::lock::Y;\n\
                use crate::cli::add::fit::Z;\n// super::lock::run\nconst S: &str = \"crate::cli::lock\";\n";
    assert_eq!(check("cli/add.rs", fine), Vec::<String>::new());
}
