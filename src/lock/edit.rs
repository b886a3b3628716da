//! Editing `[tool.kernels.dependencies]` of `pyproject.toml` (`kernels add`,
//! `kernels remove`) with `toml_edit`, so that comments, key order, quoting and
//! blank lines of everything else stay as they were.
//!
//! The dependency table may be a `[tool.kernels.dependencies]` table, an inline
//! `dependencies = { … }` under `[tool.kernels]`, or dotted keys; each is edited
//! where it is. When it is missing, a `[tool.kernels.dependencies]` table is
//! appended at the end of the file.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, InlineTable, Item, Table, TableLike, Value};

use crate::lock::profile::RequirementSupport;
use crate::lock::requirement::{Requirement, branch_version, tag_version};
use kernels_types::repo_id::RepoId;
use kernels_types::wire::GitRefs;

/// The value an `add` writes for an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryValue {
    /// A TOML integer: branch `vN`.
    Integer(u64),
    /// A TOML string: a version specifier against `v<version>` tags.
    Specifier(String),
}

impl std::fmt::Display for EntryValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryValue::Integer(n) => write!(f, "{n}"),
            EntryValue::Specifier(s) => write!(f, "\"{s}\""),
        }
    }
}

/// Why `pyproject.toml` cannot be edited as asked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum EditError {
    /// The file is not valid TOML.
    #[error("{} is not valid TOML: {message}", path.display())]
    #[diagnostic(
        code(kernels::edit::syntax),
        help(
            "fix the TOML syntax (`kernels lock` points at the position), then run the command again"
        )
    )]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },

    /// `tool`, `tool.kernels` or `tool.kernels.dependencies` is not a table.
    #[error("{}: `{key}` is not a table, so a dependency cannot be added to it", path.display())]
    #[diagnostic(
        code(kernels::edit::not_a_table),
        help("make `{key}` a table (`[{key}]`), then run the command again")
    )]
    NotATable {
        /// The file.
        path: PathBuf,
        /// The dotted key.
        key: String,
    },

    /// The requirement given to `kernels add` does not parse.
    #[error("kernels add {repo_id} {requirement}: `{requirement}` is not a requirement: {message}")]
    #[diagnostic(
        code(kernels::edit::bad_requirement),
        help(
            "write an integer such as `1` (branch `v1`), or a version specifier such as `>=0.1.2` (tags `v<version>`, runtimes ≤0.13 only); without a requirement `kernels add` picks the newest version"
        )
    )]
    BadRequirement {
        /// The entry.
        repo_id: RepoId,
        /// The text given.
        requirement: String,
        /// What is wrong.
        message: String,
    },

    /// The requirement given is a form the target runtime cannot read.
    #[error(
        "kernels add {repo_id} {requirement}: kernels {runtime} reads integer versions only (branch `vN`)"
    )]
    #[diagnostic(code(kernels::edit::unsupported_requirement), help("{help}"))]
    UnsupportedRequirement {
        /// The entry.
        repo_id: RepoId,
        /// The text given.
        requirement: String,
        /// The target runtime.
        runtime: String,
        /// What to write instead: without the repository's refs, an integer
        /// in general; with them, [`crate::lock::support::refs_help`].
        help: String,
    },

    /// The repository has no version `kernels add` can name for the runtime.
    #[error("kernels add {repo_id}: {reason}")]
    #[diagnostic(code(kernels::edit::no_version), help("{help}"))]
    NoVersion {
        /// The entry.
        repo_id: RepoId,
        /// What is missing.
        reason: String,
        /// How to go on.
        help: String,
    },

    /// The repository is already a dependency under another spelling.
    #[error(
        "{}: `{existing}` is already a dependency; `{repo_id}` is another spelling of the same Hub repository",
        path.display()
    )]
    #[diagnostic(
        code(kernels::edit::other_spelling),
        help("use the existing spelling: `kernels add {existing} …`")
    )]
    OtherSpelling {
        /// The file.
        path: PathBuf,
        /// The spelling given.
        repo_id: RepoId,
        /// The spelling in the file.
        existing: String,
    },

    /// `kernels remove` of a repository that is not a dependency.
    #[error("kernels remove {repo_id}: `{repo_id}` is not a dependency in {}", path.display())]
    #[diagnostic(
        code(kernels::edit::not_a_dependency),
        help("the project's dependencies are: {known}")
    )]
    NotADependency {
        /// The file.
        path: PathBuf,
        /// The entry asked for.
        repo_id: RepoId,
        /// The dependencies there are.
        known: String,
    },
}

/// Parses the `REQUIREMENT` argument of `kernels add`: a non-negative integer
/// is a branch `vN`, anything else must parse as a version requirement.
pub fn parse_entry_value(repo_id: &RepoId, text: &str) -> Result<EntryValue, EditError> {
    let trimmed = text.trim();
    if let Ok(n) = trimmed.parse::<u64>() {
        return Ok(EntryValue::Integer(n));
    }
    let bad = |message: String| EditError::BadRequirement {
        repo_id: repo_id.clone(),
        requirement: text.to_owned(),
        message,
    };
    if trimmed.is_empty() {
        return Err(bad("it is empty".to_owned()));
    }
    if branch_version(trimmed).is_some() {
        return Err(bad(format!(
            "write the integer `{}` for branch `{trimmed}`",
            trimmed.trim_start_matches('v')
        )));
    }
    match Requirement::parse_str(trimmed) {
        Ok(_) => Ok(EntryValue::Specifier(trimmed.to_owned())),
        Err(err) => Err(bad(err.message)),
    }
}

/// Checks that `value` is a form the target runtime reads.
pub fn check_support(
    repo_id: &RepoId,
    value: &EntryValue,
    support: RequirementSupport,
    runtime: Option<String>,
) -> Result<(), EditError> {
    match (value, support, runtime) {
        (EntryValue::Specifier(s), RequirementSupport::IntegersOnly, Some(runtime)) => {
            Err(EditError::UnsupportedRequirement {
                repo_id: repo_id.clone(),
                requirement: s.clone(),
                runtime,
                help: format!(
                    "write an integer such as `1` (branch `v1`) if the repository has that branch (`kernels variants {repo_id} --all-versions` lists them), or lock for a runtime that reads specifiers with `--target-runtime 0.13.0`"
                ),
            })
        }
        _ => Ok(()),
    }
}

/// What `cargo add` / `uv add` would pick: the highest `vN` branch as an
/// integer when the repository has version branches (and the runtime reads
/// integers), else `>=X.Y.Z` of the highest release tag (when the runtime reads
/// specifiers).
pub fn default_value(
    repo_id: &RepoId,
    refs: &GitRefs,
    support: RequirementSupport,
    runtime: Option<String>,
) -> Result<EntryValue, EditError> {
    let branch = refs
        .branches
        .iter()
        .filter_map(|b| branch_version(&b.name))
        .filter_map(|n| u64::try_from(n).ok())
        .max();
    let tag = refs
        .tags
        .iter()
        .filter_map(|t| tag_version(&t.name))
        .filter(|v| !v.any_prerelease() && !v.is_local())
        .max();
    let runtime_name = runtime.unwrap_or_else(|| "this runtime".to_owned());
    match (support, branch, tag) {
        (RequirementSupport::StringsOnly, _, Some(tag)) => {
            Ok(EntryValue::Specifier(format!(">={tag}")))
        }
        (RequirementSupport::StringsOnly, _, None) => Err(EditError::NoVersion {
            repo_id: repo_id.clone(),
            reason: format!("the repository has no release tag `v<version>`, and kernels {runtime_name} reads version specifiers only"),
            help: "lock for a runtime that reads integer versions (`--target-runtime 0.17.2`), or pin a revision by hand".to_owned(),
        }),
        (_, Some(n), _) => Ok(EntryValue::Integer(n)),
        (RequirementSupport::IntegersAndStrings, None, Some(tag)) => {
            Ok(EntryValue::Specifier(format!(">={tag}")))
        }
        (RequirementSupport::IntegersOnly, None, tag) => Err(EditError::NoVersion {
            repo_id: repo_id.clone(),
            reason: format!(
                "the repository has no version branch `vN`, and kernels {runtime_name} reads integer versions only"
            ),
            help: match tag {
                Some(tag) => format!(
                    "ask the publisher for a `v1` branch; meanwhile `kernels add {repo_id} \">={tag}\" --target-runtime 0.13.0` locks its tags for a runtime ≤0.13"
                ),
                None => "ask the publisher to publish a version branch such as `v1`".to_owned(),
            },
        }),
        (_, None, None) => Err(EditError::NoVersion {
            repo_id: repo_id.clone(),
            reason: "the repository has neither a version branch `vN` nor a release tag `v<version>`".to_owned(),
            help: "ask the publisher to publish a version branch such as `v1`".to_owned(),
        }),
    }
}

fn parse(text: &str, path: &Path) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>()
        .map_err(|err| EditError::Syntax {
            path: path.to_owned(),
            message: err.message().trim().to_owned(),
        })
}

/// The dependency table, created (with `tool` and `tool.kernels`) when missing.
fn dependencies_mut<'d>(
    doc: &'d mut DocumentMut,
    path: &Path,
) -> Result<&'d mut dyn TableLike, EditError> {
    let not_table = |key: &str| EditError::NotATable {
        path: path.to_owned(),
        key: key.to_owned(),
    };
    let root = doc.as_table_mut();
    if !root.contains_key("tool") {
        let mut tool = Table::new();
        tool.set_implicit(true);
        root.insert("tool", Item::Table(tool));
    }
    let tool = root["tool"]
        .as_table_like_mut()
        .ok_or_else(|| not_table("tool"))?;
    if !tool.contains_key("kernels") {
        let mut kernels = Table::new();
        kernels.set_implicit(true);
        tool.insert("kernels", Item::Table(kernels));
    }
    let kernels = tool
        .get_mut("kernels")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_table("tool.kernels"))?;
    if !kernels.contains_key("dependencies") {
        kernels.insert("dependencies", Item::Table(Table::new()));
    }
    kernels
        .get_mut("dependencies")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_table("tool.kernels.dependencies"))
}

/// `text` with `repo_id = value` in the dependency table: an existing entry of
/// the same spelling gets the new value in place (its comment kept); a new one
/// goes at the end of the table. Returns the new text and the old value, if any.
pub fn add_dependency(
    text: &str,
    path: &Path,
    repo_id: &RepoId,
    value: &EntryValue,
) -> Result<(String, Option<String>), EditError> {
    let mut doc = parse(text, path)?;
    let trailing = inline_dependencies(&mut doc).map(|t| trailing_space(t));
    let deps = dependencies_mut(&mut doc, path)?;
    if let Some((existing, _)) = deps
        .iter()
        .find(|(k, _)| *k != repo_id.as_str() && k.eq_ignore_ascii_case(repo_id.as_str()))
    {
        return Err(EditError::OtherSpelling {
            path: path.to_owned(),
            repo_id: repo_id.clone(),
            existing: existing.to_owned(),
        });
    }
    let mut new = match value {
        EntryValue::Integer(n) => Value::from(i64::try_from(*n).unwrap_or(i64::MAX)),
        EntryValue::Specifier(s) => Value::from(s.as_str()),
    };
    let old = match deps.get_mut(repo_id.as_str()) {
        Some(item) => {
            let old = item.to_string().trim().to_owned();
            match item.as_value_mut() {
                // `{ version = … }`: replace the version, keep the table.
                Some(Value::InlineTable(t)) if t.contains_key("version") => {
                    let trailing = trailing_space(t);
                    let decor = t["version"].decor().clone();
                    *new.decor_mut() = decor;
                    t.insert("version", new);
                    t.remove("revision");
                    tidy_inline(t, &trailing);
                }
                Some(v) => {
                    let decor = v.decor().clone();
                    *new.decor_mut() = decor;
                    *v = new;
                }
                None => *item = Item::Value(new),
            }
            Some(old)
        }
        None => {
            deps.insert(repo_id.as_str(), Item::Value(new));
            None
        }
    };
    if let (Some(trailing), Some(deps)) = (trailing, inline_dependencies(&mut doc)) {
        tidy_inline(deps, &trailing);
    }
    Ok((keep_line_endings(text, doc.to_string()), old))
}

/// `text` with the entry of `repo_id` (already written by
/// [`add_dependency`]) made `{ path = "DIR", version = … }`: a local
/// checkout used while the kernel is developed, next to the version the lock
/// pins. A `revision` is dropped (a path goes with a version only).
pub fn set_path(
    text: &str,
    path: &Path,
    repo_id: &RepoId,
    dir: &Path,
) -> Result<String, EditError> {
    let mut doc = parse(text, path)?;
    let deps = dependencies_mut(&mut doc, path)?;
    if let Some(item) = deps.get_mut(repo_id.as_str()) {
        let mut table = match item.as_value() {
            Some(Value::InlineTable(t)) => t.clone(),
            Some(v) => {
                let mut t = InlineTable::new();
                t.insert("version", v.clone().decorated(" ", " "));
                t
            }
            None => InlineTable::new(),
        };
        table.remove("revision");
        let version = table.remove("version");
        let mut fresh = InlineTable::new();
        fresh.insert("path", Value::from(dir.display().to_string()));
        if let Some(version) = version {
            fresh.insert("version", version);
        }
        fresh.fmt();
        *item = Item::Value(Value::InlineTable(fresh));
    }
    Ok(keep_line_endings(text, doc.to_string()))
}

/// `text` without the entries of `repos` (matched exactly, else ignoring ASCII
/// case); every repository must be a dependency. A repository named twice (in
/// any spelling) is removed once. Returns the new text and the keys removed,
/// in `repos` order.
pub fn remove_dependencies(
    text: &str,
    path: &Path,
    repos: &[RepoId],
) -> Result<(String, Vec<String>), EditError> {
    let mut doc = parse(text, path)?;
    let trailing = inline_dependencies(&mut doc).map(|t| trailing_space(t));
    let deps = doc
        .get_mut("tool")
        .and_then(|t| t.get_mut("kernels"))
        .and_then(|k| k.get_mut("dependencies"))
        .and_then(Item::as_table_like_mut);
    let known = |deps: Option<&dyn TableLike>| {
        let names: Vec<&str> = deps
            .map(|d| d.iter().map(|(k, _)| k).collect())
            .unwrap_or_default();
        if names.is_empty() {
            "none ([tool.kernels.dependencies] is empty or missing)".to_owned()
        } else {
            names.join(", ")
        }
    };
    let Some(deps) = deps else {
        return Err(EditError::NotADependency {
            path: path.to_owned(),
            repo_id: repos
                .first()
                .cloned()
                .unwrap_or_else(|| "a/b".parse().expect("valid")),
            known: known(None),
        });
    };
    let mut removed = Vec::new();
    for repo in repos {
        if removed
            .iter()
            .any(|k: &String| k.eq_ignore_ascii_case(repo.as_str()))
        {
            continue;
        }
        let key = if deps.contains_key(repo.as_str()) {
            Some(repo.as_str().to_owned())
        } else {
            deps.iter()
                .map(|(k, _)| k)
                .find(|k| k.eq_ignore_ascii_case(repo.as_str()))
                .map(str::to_owned)
        };
        let Some(key) = key else {
            return Err(EditError::NotADependency {
                path: path.to_owned(),
                repo_id: repo.clone(),
                known: known(Some(&*deps)),
            });
        };
        deps.remove(&key);
        removed.push(key);
    }
    if let (Some(trailing), Some(deps)) = (trailing, inline_dependencies(&mut doc)) {
        tidy_inline(deps, &trailing);
    }
    Ok((keep_line_endings(text, doc.to_string()), removed))
}

/// The dependency table when it is an inline `dependencies = { … }`.
fn inline_dependencies(doc: &mut DocumentMut) -> Option<&mut InlineTable> {
    doc.get_mut("tool")?
        .get_mut("kernels")?
        .get_mut("dependencies")?
        .as_inline_table_mut()
}

/// What an inline table has between its last value and `}` (one space when
/// that is not just spaces, or the table is empty).
fn trailing_space(table: &InlineTable) -> String {
    table
        .iter()
        .last()
        .and_then(|(_, value)| value.decor().suffix()?.as_str().map(str::to_owned))
        .filter(|s| s.trim().is_empty())
        .unwrap_or_else(|| " ".to_owned())
}

/// Spaces an edited inline table as people write it: `toml_edit` keeps the
/// space a former last value had before `}` when a value is added after it
/// (`{ "a/b" = 1 , "c/d" = 2}`) and drops it when the last value is removed
/// (`{ "a/b" = 1}`). Blank space after a value becomes none, and `trailing`
/// after the last one.
fn tidy_inline(table: &mut InlineTable, trailing: &str) {
    let last = table.len().saturating_sub(1);
    for (i, (_, value)) in table.iter_mut().enumerate() {
        let decor = value.decor_mut();
        let blank = decor
            .suffix()
            .and_then(|s| s.as_str())
            .is_none_or(|s| s.trim().is_empty());
        if blank {
            decor.set_suffix(if i == last { trailing } else { "" });
        }
    }
}

/// `edited` with the line endings of `original`: when every line of
/// `original` ends in CRLF, so does every line of `edited` (`toml_edit` ends
/// the lines it adds with LF); otherwise `edited` as it is.
fn keep_line_endings(original: &str, edited: String) -> String {
    let lines = original.matches('\n').count();
    if lines == 0 || original.matches("\r\n").count() != lines {
        return edited;
    }
    edited.replace("\r\n", "\n").replace('\n', "\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(s: &str) -> RepoId {
        s.parse().unwrap()
    }

    const TEXT: &str = "[project]\nname = \"demo\"  # the name\n\n[tool.kernels.dependencies]\n# activation kernels\n\"kernels-community/activation\" = 1 # pinned\n'kernels-community/relu' = 1\n\n[tool.other]\nx = 1\n";

    #[test]
    fn add_appends_and_keeps_the_rest() {
        let (out, old) = add_dependency(
            TEXT,
            Path::new("pyproject.toml"),
            &repo("kernels-test/versions"),
            &EntryValue::Integer(2),
        )
        .unwrap();
        assert_eq!(old, None);
        assert_eq!(
            out,
            TEXT.replace(
                "'kernels-community/relu' = 1\n",
                "'kernels-community/relu' = 1\n\"kernels-test/versions\" = 2\n"
            )
        );
    }

    #[test]
    fn add_replaces_in_place_keeping_the_comment() {
        let (out, old) = add_dependency(
            TEXT,
            Path::new("pyproject.toml"),
            &repo("kernels-community/activation"),
            &EntryValue::Integer(2),
        )
        .unwrap();
        assert_eq!(old.as_deref(), Some("1 # pinned"));
        assert_eq!(out, TEXT.replace("= 1 # pinned", "= 2 # pinned"));
    }

    #[test]
    fn add_creates_the_table() {
        let text = "[project]\nname = \"demo\"\n";
        let (out, _) = add_dependency(
            text,
            Path::new("pyproject.toml"),
            &repo("kernels-community/relu"),
            &EntryValue::Integer(1),
        )
        .unwrap();
        assert_eq!(
            out,
            "[project]\nname = \"demo\"\n\n[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n"
        );
    }

    #[test]
    fn add_refuses_another_spelling() {
        let err = add_dependency(
            TEXT,
            Path::new("pyproject.toml"),
            &repo("Kernels-Community/Relu"),
            &EntryValue::Integer(1),
        )
        .unwrap_err();
        assert!(matches!(err, EditError::OtherSpelling { .. }));
    }

    #[test]
    fn remove_keeps_the_rest() {
        let (out, removed) = remove_dependencies(
            TEXT,
            Path::new("pyproject.toml"),
            &[repo("kernels-community/relu")],
        )
        .unwrap();
        assert_eq!(removed, ["kernels-community/relu"]);
        assert_eq!(out, TEXT.replace("'kernels-community/relu' = 1\n", ""));
        let err =
            remove_dependencies(TEXT, Path::new("pyproject.toml"), &[repo("a/b")]).unwrap_err();
        assert!(err.to_string().contains("`a/b` is not a dependency"));
    }

    #[test]
    fn inline_tables_get_no_stray_spaces() {
        let p = Path::new("pyproject.toml");
        let one = "[tool.kernels]\ndependencies = { \"a/b\" = 1 }\n";
        let two = "[tool.kernels]\ndependencies = { \"a/b\" = 1, \"c/d\" = 2 }\n";
        let (added, _) = add_dependency(one, p, &repo("c/d"), &EntryValue::Integer(2)).unwrap();
        assert_eq!(added, two);
        let (removed, _) = remove_dependencies(two, p, &[repo("c/d")]).unwrap();
        assert_eq!(removed, one);
        let (empty, _) = remove_dependencies(one, p, &[repo("a/b")]).unwrap();
        let (again, _) = add_dependency(&empty, p, &repo("a/b"), &EntryValue::Integer(1)).unwrap();
        assert_eq!(again, one);
        let pinned =
            "[tool.kernels.dependencies]\n\"a/b\" = { version = 1, revision = \"main\" }\n";
        let (set, _) = add_dependency(pinned, p, &repo("a/b"), &EntryValue::Integer(2)).unwrap();
        assert_eq!(
            set,
            "[tool.kernels.dependencies]\n\"a/b\" = { version = 2 }\n"
        );
    }

    #[test]
    fn crlf_stays_crlf() {
        let p = Path::new("pyproject.toml");
        let text = TEXT.replace('\n', "\r\n");
        let (added, _) = add_dependency(
            &text,
            p,
            &repo("kernels-test/versions"),
            &EntryValue::Integer(2),
        )
        .unwrap();
        assert_eq!(added.matches('\n').count(), added.matches("\r\n").count());
        assert!(added.contains("\"kernels-test/versions\" = 2\r\n"));
        let (removed, _) =
            remove_dependencies(&added, p, &[repo("kernels-test/versions")]).unwrap();
        assert_eq!(removed, text);
        let created = add_dependency(
            "[project]\r\nname = \"demo\"\r\n",
            p,
            &repo("a/b"),
            &EntryValue::Integer(1),
        )
        .unwrap()
        .0;
        assert_eq!(
            created,
            "[project]\r\nname = \"demo\"\r\n\r\n[tool.kernels.dependencies]\r\n\"a/b\" = 1\r\n"
        );
    }

    #[test]
    fn requirement_argument() {
        let r = repo("a/b");
        assert_eq!(parse_entry_value(&r, "2").unwrap(), EntryValue::Integer(2));
        assert_eq!(
            parse_entry_value(&r, ">=0.1.2").unwrap(),
            EntryValue::Specifier(">=0.1.2".into())
        );
        assert!(parse_entry_value(&r, "v2").is_err());
        assert!(parse_entry_value(&r, ">=banana").is_err());
    }
}
