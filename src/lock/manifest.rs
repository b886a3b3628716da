//! The project manifest: `[tool.kernels.dependencies]` of `pyproject.toml`.
//!
//! Keys are Hub repo ids (`owner/name`), kept in file order (the order the
//! reference iterates in). Values:
//!
//! | TOML value | meaning |
//! |---|---|
//! | integer `N` (≥ 0) | branch `vN` (reference 0.12+) |
//! | string | PEP 440 specifier set against `v<version>` tags (reference 0.1.7–0.13), or a Cargo-style `^1.2` / `~1.2.3` requirement (extension) |
//! | `{ version = N }` / `{ version = "..." }` | same as the bare value |
//! | `{ revision = "..." }` | a branch, tag or commit |
//!
//! Booleans are rejected (the Python reference silently reads `true` as 1). Every
//! problem in the table is reported at once, each pointing at its span.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kernels_types::source_text::ClippedText;
use miette::{NamedSource, SourceSpan};
use toml_edit::{Item, TableLike, Value};

use crate::lock::cooldown::{CUTOFF_KEY, CooldownSettings, ExcludeNewer};
use crate::lock::declared::{DeclaredTarget, PythonVersion, TARGETS_KEY, parse_targets};
use crate::lock::requirement::Requirement;
use crate::lock::trust_settings::{
    REQUIRE_SIGNED_KEY, SIGNERS_KEY, TRUST_ROOT_KEY, TrustSettings, parse_trust_settings,
};
use kernels_types::fit::{Capability, Target};
use kernels_types::repo_id::RepoId;

/// File name of the manifest inside a project directory.
pub const MANIFEST_FILE_NAME: &str = "pyproject.toml";

/// The kernels a project depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The `pyproject.toml` that was read.
    pub path: PathBuf,
    /// Dependencies in file order.
    pub dependencies: Vec<Dependency>,
    /// The other `[tool.kernels]` keys this tool reads.
    pub settings: ToolSettings,
    /// The file's text, for diagnostics pointing at a [`Dependency::span`].
    pub text: Arc<str>,
}

/// `[tool.kernels]` keys other than `dependencies` (extensions; the Python
/// reference reads none of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSettings {
    /// `target-runtime = "0.10.5"`: the `kernels` runtime to write for
    /// ([`crate::lock::profile`]); validated when the profile is chosen.
    pub target_runtime: Option<String>,
    /// `trust = ["org/name", ...]`: repositories locked even when their
    /// publisher is not a trusted kernel publisher (0.17 profile).
    pub trust: Vec<RepoId>,
    /// `cuda-capabilities = ["9.0", "10.0"]` then `rocm-archs = ["gfx942"]`
    /// (shorthands), then the GPUs of each declared target not yet listed:
    /// the GPUs the project's kernels must run on, in that order
    /// ([`crate::variant::targets`]).
    pub targets: Vec<Target>,
    /// How many of [`ToolSettings::targets`] (the first ones) come from
    /// `cuda-capabilities` and `rocm-archs`; the others from declared targets.
    pub shorthand_gpus: usize,
    /// `[[tool.kernels.targets]]`: the environments the project's kernels
    /// must load in ([`crate::lock::declared`]), in file order.
    pub declared: Vec<DeclaredTarget>,
    /// The lower bound of `[project] requires-python` (`>=3.10` → 3.10), the
    /// last source of the target's Python version
    /// ([`crate::variant::python_target`]); `None` without one.
    pub requires_python: Option<PythonVersion>,
    /// `exclude-newer`, `exclude-newer-package` and `exclude-newer-cutoff`:
    /// the release cooldown ([`crate::lock::cooldown`]).
    pub cooldown: CooldownSettings,
    /// `trust-root`, `require-signed` and `[tool.kernels.signers]`: which
    /// signatures are accepted ([`crate::lock::trust_settings`]).
    pub signing: TrustSettings,
    /// `runtime-receipts = false`: `kernels download` writes no digest
    /// receipts for the target runtime (`--no-runtime-receipts`); true when
    /// the key is absent.
    pub runtime_receipts: bool,
    /// `missing-target-builds = "warn"`: a locked kernel without a build for
    /// a declared target is a warning instead of an error.
    pub missing_target_builds: MissingTargetBuilds,
    /// `manylinux = "manylinux_2_28"` and `macos-min = "11.0"`: the image
    /// every compiled file must load on (the shorthand of one declared
    /// target's keys; [`crate::abi`]).
    pub image: crate::abi::ImageTarget,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            target_runtime: None,
            trust: Vec::new(),
            targets: Vec::new(),
            shorthand_gpus: 0,
            cooldown: CooldownSettings::default(),
            signing: TrustSettings::default(),
            declared: Vec::new(),
            requires_python: None,
            runtime_receipts: true,
            missing_target_builds: MissingTargetBuilds::Error,
            image: crate::abi::ImageTarget::default(),
        }
    }
}

impl ToolSettings {
    /// `target-runtime` of `tool` (the `[tool.kernels]` of the
    /// `pyproject.toml` at `path`, if any) with that path, as the profile
    /// choice takes it.
    pub fn target_runtime_at<'a>(
        tool: Option<&'a ToolSettings>,
        path: &'a Path,
    ) -> Option<(&'a str, &'a Path)> {
        tool.and_then(|t| t.target_runtime.as_deref())
            .map(|v| (v, path))
    }
}

impl ToolSettings {
    /// Where the `index`-th of [`ToolSettings::targets`] is declared:
    /// `` `cuda-capabilities` `` / `` `rocm-archs` `` of `[tool.kernels]`, else
    /// the first `[[tool.kernels.targets]]` entry naming it (`targets[N]`,
    /// counted from 1).
    pub fn gpu_origin(&self, index: usize) -> String {
        let Some(target) = self.targets.get(index) else {
            return "[tool.kernels]".to_owned();
        };
        if index < self.shorthand_gpus {
            let key = match target {
                Target::Cuda(_) => "cuda-capabilities",
                Target::Rocm(_) => "rocm-archs",
            };
            return format!("[tool.kernels] `{key}`");
        }
        match self.declared.iter().position(|t| t.gpus.contains(target)) {
            Some(n) => format!("[[tool.kernels.targets]] targets[{}]", n + 1),
            None => "[tool.kernels]".to_owned(),
        }
    }

    /// The declared target (`[[tool.kernels.targets]]`) commands select
    /// variants for, with the path of its `pyproject.toml`: the only one
    /// declared. `None` without a table, or with several: a run selects for
    /// one environment, so several are left to the flags and the project's
    /// interpreter ([`ToolSettings::several_targets_note`] says so).
    pub fn declared_target_at<'a>(
        tool: Option<&'a ToolSettings>,
        path: &'a Path,
    ) -> Option<(&'a DeclaredTarget, &'a Path)> {
        match tool.map(|t| t.declared.as_slice()) {
            Some([only]) => Some((only, path)),
            _ => None,
        }
    }

    /// The one note for a `pyproject.toml` that declares several targets:
    /// the environment of a run is not taken from them. `None` otherwise.
    pub fn several_targets_note(tool: Option<&ToolSettings>, path: &Path) -> Option<String> {
        let declared = tool.map_or(&[][..], |t| t.declared.as_slice());
        let count = declared.len();
        let example = declared
            .iter()
            .enumerate()
            .find_map(|(n, t)| {
                t.selecting_flags()
                    .map(|f| format!("`{f}` for targets[{}]", n + 1))
            })
            .unwrap_or_else(|| {
                "`--torch-version 2.8 --cuda-version 12.8 --python-version 3.12`".to_owned()
            });
        (count > 1).then(|| {
            format!(
                "{} declares {count} targets in [[tool.kernels.targets]]; one run selects for one environment, here the flags and the project's Python; their GPUs are all checked. Select for a declared one with its flags, for example {example}",
                path.display()
            )
        })
    }
}

/// One `[tool.kernels.dependencies]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// Hub repository id.
    pub repo_id: RepoId,
    /// What it asks for.
    pub requirement: Requirement,
    /// Byte range of the value in [`Manifest::text`].
    pub span: Option<Range<usize>>,
    /// Written as a table (`{ version = … }`, `{ revision = … }`) rather than a
    /// bare integer or string.
    pub table: bool,
    /// `path = "…"` of a table with `version`: a local checkout of the kernel
    /// used by `env`, `check`, `download --explain` and `benchmark` while it is developed (as
    /// written, relative to the project directory); the lock still pins the
    /// Hub `version` exactly as the bare value would.
    pub path: Option<std::path::PathBuf>,
}

/// One invalid entry of `[tool.kernels.dependencies]`, pointing into the file.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{message}")]
#[diagnostic(code(kernels::manifest::invalid_dependency))]
pub struct EntryProblem {
    /// What is wrong, naming the file and the entry.
    pub message: String,
    #[source_code]
    source_code: Arc<NamedSource<ClippedText>>,
    #[label("{label}")]
    span: SourceSpan,
    label: String,
    #[help]
    help: Option<String>,
}

/// Why the manifest cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ManifestError {
    /// `pyproject.toml` does not exist.
    #[error("{} does not exist", path.display())]
    #[diagnostic(
        code(kernels::manifest::missing),
        help(
            "run the command in the project directory that holds pyproject.toml, or name it with `--project DIR` (the path argument of `kernels lock`, `download` and `verify` works too); a new project needs only a pyproject.toml that lists its kernels under `[tool.kernels.dependencies]`, such as `\"kernels-community/relu\" = 1`"
        )
    )]
    Missing {
        /// The expected file.
        path: PathBuf,
    },

    /// `pyproject.toml` cannot be read.
    #[error("cannot read {}", path.display())]
    #[diagnostic(code(kernels::manifest::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// Not valid TOML.
    #[error("{} is not valid TOML: {message}", path.display())]
    #[diagnostic(code(kernels::manifest::syntax))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
        /// The file text.
        #[source_code]
        source_code: Arc<NamedSource<ClippedText>>,
        /// Where parsing failed.
        #[label("here")]
        span: Option<SourceSpan>,
        /// For a duplicate key: its first definition.
        #[label("first defined here")]
        first: Option<SourceSpan>,
        /// How to fix it.
        #[help]
        help: Option<&'static str>,
    },

    /// There is no `[tool.kernels.dependencies]` table.
    #[error("{} has no [tool.kernels.dependencies] table", path.display())]
    #[diagnostic(
        code(kernels::manifest::no_dependencies),
        help(
            "declare the kernels to lock, for example:\n\n    [tool.kernels.dependencies]\n    \"kernels-community/activation\" = 1"
        )
    )]
    NoDependencies {
        /// The file.
        path: PathBuf,
    },

    /// Exactly one invalid entry.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Entry(Box<EntryProblem>),

    /// Several invalid entries, all reported.
    #[error("{} has {} invalid entries in [tool.kernels]", path.display(), problems.len())]
    #[diagnostic(
        code(kernels::manifest::invalid_dependencies),
        help("fix every entry listed below, then run `kernels lock`")
    )]
    Entries {
        /// The file.
        path: PathBuf,
        /// Every problem found.
        #[related]
        problems: Vec<EntryProblem>,
    },
}

struct Problem {
    span: Range<usize>,
    what: String,
    label: &'static str,
    help: Option<String>,
}

impl Problem {
    fn new(span: Option<Range<usize>>, what: String, label: &'static str) -> Self {
        Problem {
            span: span.unwrap_or(0..0),
            what,
            label,
            help: None,
        }
    }

    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl Manifest {
    /// `[tool.kernels] target-runtime` with the path of this `pyproject.toml`
    /// (for errors), as [`crate::lock::profile::DetectInputs::manifest`] takes it.
    pub fn target_runtime(&self) -> Option<(&str, &Path)> {
        self.settings
            .target_runtime
            .as_deref()
            .map(|version| (version, self.path.as_path()))
    }

    /// Reads `<project_dir>/pyproject.toml`.
    pub fn read(project_dir: &Path) -> Result<Manifest, ManifestError> {
        let path = project_dir.join(MANIFEST_FILE_NAME);
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(ManifestError::Missing { path });
            }
            Err(source) => return Err(ManifestError::Io { path, source }),
        };
        Self::parse(&text, &path)
    }

    /// Parses manifest text; `path` names the file in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let source = Arc::new(NamedSource::new(
            path.display().to_string(),
            ClippedText::new(text),
        ));
        let doc = toml_edit::Document::parse(text)
            .map_err(|err| syntax_error(&err, text, path, &source))?;
        let settings = parse_settings(&doc, path, &source)?;
        let kernels_item = doc.get("tool").and_then(|tool| tool.get("kernels"));
        let mut problems = Vec::new();
        if let Some(kernels) = kernels_item {
            problems.extend(check_kernels_table(kernels, path, &source));
        }
        let Some(deps_item) = kernels_item.and_then(|kernels| kernels.get("dependencies")) else {
            if let Some(kernels) = kernels_item.filter(|_| !problems.is_empty()) {
                problems.push(no_dependencies_table(kernels, path, &source));
            }
            return Err(
                ManifestError::from_problems(path, problems).unwrap_or_else(|| {
                    ManifestError::NoDependencies {
                        path: path.to_owned(),
                    }
                }),
            );
        };
        let entries = Entries {
            text,
            path,
            source: &source,
        };
        let dependencies = entries.dependencies(deps_item, &mut problems)?;
        match ManifestError::from_problems(path, problems) {
            Some(err) => Err(err),
            None => Ok(Manifest {
                path: path.to_owned(),
                dependencies,
                settings,
                text: Arc::from(text),
            }),
        }
    }
}

impl ManifestError {
    /// One problem as [`ManifestError::Entry`], several as
    /// [`ManifestError::Entries`]; `None` when there is none.
    fn from_problems(path: &Path, mut problems: Vec<EntryProblem>) -> Option<ManifestError> {
        match problems.len() {
            0 => None,
            1 => Some(ManifestError::Entry(Box::new(problems.remove(0)))),
            _ => Some(ManifestError::Entries {
                path: path.to_owned(),
                problems,
            }),
        }
    }
}

/// The TOML syntax error of `pyproject.toml`, with the first definition
/// marked too when the error is a duplicate key.
fn syntax_error(
    err: &toml_edit::TomlError,
    text: &str,
    path: &Path,
    source: &Arc<NamedSource<ClippedText>>,
) -> ManifestError {
    let message = err.message().trim().to_owned();
    let duplicate = message.starts_with("duplicate key");
    let first = err
        .span()
        .filter(|_| duplicate)
        .and_then(|r| first_definition(text, r));
    let help = Some(if duplicate {
        "a key may appear only once per table: keep one of the two marked lines (for a kernel: the requirement you want), then run `kernels lock`"
    } else {
        "fix the TOML syntax at the marked position, then run `kernels lock`"
    });
    ManifestError::Syntax {
        path: path.to_owned(),
        message,
        source_code: source.clone(),
        span: err.span().map(|r| SourceSpan::from(r.start..r.end)),
        first: first.map(SourceSpan::from),
        help,
    }
}

/// The problem added when `[tool.kernels]` has other problems and no
/// `dependencies` table either.
fn no_dependencies_table(
    kernels: &Item,
    path: &Path,
    source: &Arc<NamedSource<ClippedText>>,
) -> EntryProblem {
    EntryProblem {
        message: format!(
            "{} has no [tool.kernels.dependencies] table",
            path.display()
        ),
        source_code: source.clone(),
        span: SourceSpan::from(kernels.span().unwrap_or(0..0)),
        label: "no `dependencies` in here".to_owned(),
        help: Some(
            "declare the kernels to lock as `[tool.kernels.dependencies]` with `\"owner/name\" = 1` lines, then run `kernels lock`".to_owned(),
        ),
    }
}

/// The `[tool.kernels.dependencies]` table of one manifest being parsed.
struct Entries<'a> {
    text: &'a str,
    path: &'a Path,
    source: &'a Arc<NamedSource<ClippedText>>,
}

impl Entries<'_> {
    /// A [`Problem`] of the table (`key: None`) or of one entry, as reported.
    fn problem(&self, problem: Problem, key: Option<&str>) -> EntryProblem {
        let entry = key.map_or_else(String::new, |k| format!(" entry `{k}`"));
        EntryProblem {
            message: format!(
                "{}: [tool.kernels.dependencies]{entry}: {}",
                self.path.display(),
                problem.what
            ),
            source_code: self.source.clone(),
            span: SourceSpan::from(problem.span),
            label: problem.label.to_owned(),
            help: problem.help,
        }
    }

    /// Every well-formed entry of `deps_item`; the problems of the others go
    /// to `problems`. Errors when `deps_item` is not a table at all.
    fn dependencies(
        &self,
        deps_item: &Item,
        problems: &mut Vec<EntryProblem>,
    ) -> Result<Vec<Dependency>, ManifestError> {
        let Some(table) = deps_item.as_table_like() else {
            let problem = Problem::new(
                deps_item.span(),
                format!("expected a table, found {}", type_name(deps_item)),
                "not a table",
            )
            .help("write `[tool.kernels.dependencies]` followed by `\"owner/name\" = 1` lines");
            return Err(ManifestError::Entry(Box::new(self.problem(problem, None))));
        };
        let mut dependencies = Vec::new();
        // Hub repository ids are case-insensitive: two spellings of one repo
        // would lock the same kernel twice.
        let mut spellings: std::collections::HashMap<String, &str> =
            std::collections::HashMap::new();
        for (key, item) in table.iter() {
            let key_span = table.get_key_value(key).and_then(|(k, _)| k.span());
            if let Some(first) = spellings.get(&key.to_ascii_lowercase()) {
                problems.push(self.problem(second_spelling(key_span, key, first), Some(key)));
                continue;
            }
            spellings.insert(key.to_ascii_lowercase(), key);
            let repo_id = key.parse::<RepoId>().map_err(|err| {
                Problem::new(key_span.clone(), err.to_string(), "invalid repo id")
                    .help("keys are Hub repository ids such as `kernels-community/activation`")
            });
            match (repo_id, parse_item(item, self.text)) {
                (Ok(repo_id), Ok((requirement, path))) => dependencies.push(Dependency {
                    repo_id,
                    requirement,
                    span: item.span(),
                    table: item.is_table_like(),
                    path,
                }),
                (repo_id, requirement) => {
                    problems.extend(repo_id.err().map(|p| self.problem(p, Some(key))));
                    problems.extend(requirement.err().map(|p| self.problem(p, Some(key))));
                }
            }
        }
        Ok(dependencies)
    }
}

/// The problem of a key that spells an earlier key's repository differently.
fn second_spelling(key_span: Option<Range<usize>>, key: &str, first: &str) -> Problem {
    Problem::new(
        key_span,
        format!(
            "`{key}` and `{first}` are two spellings of the same Hub repository (repository ids are case-insensitive)"
        ),
        "second spelling",
    )
    .help(format!(
        "keep one entry for the repository: delete the `{key}` line or the `{first}` line (`kernels remove {key}` removes this one), then run `kernels lock`"
    ))
}

/// Keys `[tool.kernels]` may hold (`target-runtime` and `trust` are read by the
/// commands that use them).
pub const KNOWN_KERNELS_KEYS: &[&str] = &[
    "dependencies",
    "target-runtime",
    "trust",
    "cuda-capabilities",
    "rocm-archs",
    TARGETS_KEY,
    "exclude-newer",
    "exclude-newer-package",
    CUTOFF_KEY,
    TRUST_ROOT_KEY,
    REQUIRE_SIGNED_KEY,
    SIGNERS_KEY,
    RUNTIME_RECEIPTS_KEY,
    MISSING_TARGET_BUILDS_KEY,
    "manylinux",
    "macos-min",
];

/// `missing-target-builds = "warn"` under `[tool.kernels]`
/// ([`ToolSettings::missing_target_builds`]).
pub const MISSING_TARGET_BUILDS_KEY: &str = "missing-target-builds";

/// What `kernels lock` and `kernels add` do with a locked kernel that has no
/// build variant for a declared target (`[[tool.kernels.targets]]` with
/// `torch` and `backend`): `missing-target-builds` under `[tool.kernels]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MissingTargetBuilds {
    /// `"error"` (the default): the lock fails (exit 1), nothing is written.
    #[default]
    Error,
    /// `"warn"`: the lock is written, with one warning per target.
    Warn,
}

/// `runtime-receipts = false` under `[tool.kernels]` ([`ToolSettings::runtime_receipts`]).
pub const RUNTIME_RECEIPTS_KEY: &str = "runtime-receipts";

/// Problems of the `[tool.kernels]` table itself: not a table, or unknown keys
/// (with the closest known key as a suggestion).
fn check_kernels_table(
    kernels: &Item,
    path: &Path,
    source: &Arc<NamedSource<ClippedText>>,
) -> Vec<EntryProblem> {
    let problem =
        |message: String, span: Option<Range<usize>>, label: &str, help: String| EntryProblem {
            message: format!("{}: {message}", path.display()),
            source_code: source.clone(),
            span: SourceSpan::from(span.unwrap_or(0..0)),
            label: label.to_owned(),
            help: Some(help),
        };
    let Some(table) = kernels.as_table_like() else {
        return vec![problem(
            format!("[tool.kernels] must be a table, found {}", type_name(kernels)),
            kernels.span(),
            "not a table",
            "write a `[tool.kernels.dependencies]` table of `\"owner/name\" = 1` lines, then run `kernels lock`".to_owned(),
        )];
    };
    let mut problems = Vec::new();
    for (key, _) in table.iter() {
        if KNOWN_KERNELS_KEYS.contains(&key) {
            continue;
        }
        let key_span = table.get_key_value(key).and_then(|(k, _)| k.span());
        let known = KNOWN_KERNELS_KEYS
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(key, KNOWN_KERNELS_KEYS) {
            Some(best) => format!(
                "did you mean `{best}`? Rename the key, then run `kernels lock` (known keys: {known})"
            ),
            None => format!("remove the key; [tool.kernels] knows {known}"),
        };
        problems.push(problem(
            format!("[tool.kernels]: unknown key `{key}`"),
            key_span,
            "unknown key",
            help,
        ));
    }
    problems
}

/// The candidate closest to `word` by edit distance (Levenshtein with adjacent
/// transpositions counted as one edit, [`strsim::osa_distance`]), when it is close
/// enough to be a likely typo (at most a third of the word's length, at least 1).
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (strsim::osa_distance(word, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// For a duplicate key at `dup`, the span of the same key text on an earlier line
/// of the same table (the lines since the last `[header]`).
fn first_definition(text: &str, dup: Range<usize>) -> Option<Range<usize>> {
    let key = text.get(dup.clone())?;
    let before = text.get(..dup.start)?;
    let table_start = before
        .match_indices('\n')
        .map(|(i, _)| i + 1)
        .rfind(|&i| text[i..].trim_start().starts_with('['))
        .unwrap_or(0);
    let mut offset = table_start;
    for line in text[table_start..dup.start].split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(key) && trimmed[key.len()..].trim_start().starts_with(['=', '.']) {
            let start = offset + (line.len() - trimmed.len());
            return Some(start..start + key.len());
        }
        offset += line.len();
    }
    None
}

/// The nearest directory from `start` upwards (`start` included) whose
/// `pyproject.toml` has a `[tool.kernels]` table, as uv and cargo find their
/// project. A file that is not valid TOML counts when it mentions
/// `tool.kernels`, so that its syntax error is reported instead of skipped.
pub fn discover_project(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|dir| {
        let text = fs_err::read_to_string(dir.join(MANIFEST_FILE_NAME)).ok()?;
        let has_kernels = match toml_edit::Document::parse(text.as_str()) {
            Ok(doc) => doc.get("tool").and_then(|t| t.get("kernels")).is_some(),
            Err(_) => text.contains("tool.kernels"),
        };
        has_kernels.then(|| dir.to_owned())
    })
}

impl ToolSettings {
    /// Reads the `[tool.kernels]` settings of `<project_dir>/pyproject.toml`
    /// without requiring a dependency table; `None` when the file does not exist.
    pub fn read(project_dir: &Path) -> Result<Option<ToolSettings>, ManifestError> {
        let path = project_dir.join(MANIFEST_FILE_NAME);
        let text = match fs_err::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ManifestError::Io { path, source }),
        };
        let source = Arc::new(NamedSource::new(
            path.display().to_string(),
            ClippedText::new(text.clone()),
        ));
        let doc =
            toml_edit::Document::parse(text.as_str()).map_err(|err| ManifestError::Syntax {
                path: path.clone(),
                message: err.message().trim().to_owned(),
                source_code: source.clone(),
                span: err.span().map(|r| SourceSpan::from(r.start..r.end)),
                first: None,
                help: None,
            })?;
        parse_settings(&doc, &path, &source).map(Some)
    }
}

/// Reads `target-runtime`, `trust`, `cuda-capabilities`, `rocm-archs`,
/// `[[tool.kernels.targets]]`, the cooldown, the signing keys,
/// `runtime-receipts` and `missing-target-builds` of `[tool.kernels]`.
fn parse_settings(
    doc: &toml_edit::Document<&str>,
    path: &Path,
    source: &Arc<NamedSource<ClippedText>>,
) -> Result<ToolSettings, ManifestError> {
    let mut settings = ToolSettings {
        requires_python: requires_python_floor(doc),
        ..ToolSettings::default()
    };
    let Some(table) = doc
        .get("tool")
        .and_then(|tool| tool.get("kernels"))
        .and_then(Item::as_table_like)
    else {
        return Ok(settings);
    };
    let problem = |key: &str, item: &Item, what: String, help: &str| {
        ManifestError::Entry(Box::new(EntryProblem {
            message: format!("{}: [tool.kernels] `{key}`: {what}", path.display()),
            source_code: source.clone(),
            span: SourceSpan::from(item.span().unwrap_or(0..0)),
            label: "invalid".to_owned(),
            help: Some(help.to_owned()),
        }))
    };
    if let Some(item) = table.get("target-runtime") {
        match item.as_str() {
            Some(version) => settings.target_runtime = Some(version.to_owned()),
            None => {
                return Err(problem(
                    "target-runtime",
                    item,
                    format!("expected a version string, found {}", type_name(item)),
                    "write the kernels version the project runs, for example `target-runtime = \"0.17.2\"`",
                ));
            }
        }
    }
    let trust_help = "list repository ids, for example `trust = [\"my-org/my-kernel\"]`";
    settings.trust = string_array(table, "trust", "repo id", |s| s.parse::<RepoId>())
        .map_err(|(item, what)| problem("trust", item, what, trust_help))?;
    (settings.targets, settings.declared) = parse_target_keys(table, path, source, &problem)?;
    settings.shorthand_gpus = shorthand_count(table);
    settings.image = parse_image(table, &problem)?;
    settings.cooldown = parse_cooldown(table, &problem)?;
    settings.signing = parse_trust_settings(table, path, &problem)?;
    parse_switches(table, &problem, &mut settings)?;
    Ok(settings)
}

/// How many GPUs `cuda-capabilities` and `rocm-archs` of the (valid)
/// `[tool.kernels]` `table` list.
fn shorthand_count(table: &dyn TableLike) -> usize {
    ["cuda-capabilities", "rocm-archs"]
        .iter()
        .filter_map(|key| table.get(key)?.as_array().map(|a| a.len()))
        .sum()
}

/// The GPUs (`cuda-capabilities`, `rocm-archs`, then those of each declared
/// target not yet listed) and the declared targets (`[[tool.kernels.targets]]`)
/// of the `[tool.kernels]` `table` of `path`.
fn parse_target_keys(
    table: &dyn TableLike,
    path: &Path,
    source: &Arc<NamedSource<ClippedText>>,
    problem: &dyn Fn(&str, &Item, String, &str) -> ManifestError,
) -> Result<(Vec<Target>, Vec<DeclaredTarget>), ManifestError> {
    let cuda_help = "list CUDA compute capabilities as strings, for example `cuda-capabilities = [\"9.0\", \"10.0\"]`";
    let mut targets = string_array(table, "cuda-capabilities", "capability", |s| {
        s.parse::<Capability>().map(Target::Cuda)
    })
    .map_err(|(item, what)| problem("cuda-capabilities", item, what, cuda_help))?;
    let rocm_help = "list ROCm GPU archs, for example `rocm-archs = [\"gfx942\"]`";
    let rocm = string_array(table, "rocm-archs", "arch", Target::rocm)
        .map_err(|(item, what)| problem("rocm-archs", item, what, rocm_help))?;
    targets.extend(rocm);
    let mut declared = Vec::new();
    if let Some(item) = table.get(TARGETS_KEY) {
        declared = parse_targets(item).map_err(|bad| {
            ManifestError::Entry(Box::new(EntryProblem {
                message: format!(
                    "{}: [tool.kernels] `{}`: {}",
                    path.display(),
                    bad.key,
                    bad.what
                ),
                source_code: source.clone(),
                span: SourceSpan::from(bad.span.unwrap_or(0..0)),
                label: "invalid".to_owned(),
                help: Some(bad.help),
            }))
        })?;
    }
    for gpu in declared.iter().flat_map(|t| &t.gpus) {
        if !targets.contains(gpu) {
            targets.push(gpu.clone());
        }
    }
    Ok((targets, declared))
}

/// `runtime-receipts` (true or false) and `missing-target-builds` (`"error"`
/// or `"warn"`) of the `[tool.kernels]` `table`, into `settings`.
fn parse_switches(
    table: &dyn TableLike,
    problem: &dyn Fn(&str, &Item, String, &str) -> ManifestError,
    settings: &mut ToolSettings,
) -> Result<(), ManifestError> {
    if let Some(item) = table.get(RUNTIME_RECEIPTS_KEY) {
        settings.runtime_receipts = item.as_bool().ok_or_else(|| {
            problem(
                RUNTIME_RECEIPTS_KEY,
                item,
                format!("expected true or false, found {}", item_text(item)),
                "write `runtime-receipts = false` to stop `kernels download` writing the runtime's digest receipts",
            )
        })?;
    }
    if let Some(item) = table.get(MISSING_TARGET_BUILDS_KEY) {
        settings.missing_target_builds = match item.as_str() {
            Some("error") => MissingTargetBuilds::Error,
            Some("warn") => MissingTargetBuilds::Warn,
            _ => {
                return Err(problem(
                    MISSING_TARGET_BUILDS_KEY,
                    item,
                    format!("expected \"error\" or \"warn\", found {}", item_text(item)),
                    "write `missing-target-builds = \"warn\"` to lock a kernel without a build for a declared target with a warning, or `\"error\"` (the default) to refuse it",
                ));
            }
        };
    }
    Ok(())
}

/// `manylinux` and `macos-min` of `[tool.kernels]`.
fn parse_image(
    table: &dyn TableLike,
    problem: &dyn Fn(&str, &Item, String, &str) -> ManifestError,
) -> Result<crate::abi::ImageTarget, ManifestError> {
    let mut image = crate::abi::ImageTarget::default();
    if let Some(item) = table.get("manylinux") {
        let help =
            "write the image's manylinux target, for example `manylinux = \"manylinux_2_28\"`";
        let text = item.as_str().ok_or_else(|| {
            problem(
                "manylinux",
                item,
                format!("expected a string, found {}", type_name(item)),
                help,
            )
        })?;
        image.manylinux = Some(
            crate::abi::parse_manylinux(text)
                .map_err(|what| problem("manylinux", item, what, help))?,
        );
    }
    if let Some(item) = table.get("macos-min") {
        let help =
            "write the image's macOS minimum as MAJOR.MINOR, for example `macos-min = \"11.0\"`";
        let parsed = item.as_str().and_then(|text| {
            let (major, minor) = text.trim().split_once('.')?;
            Some((major.parse().ok()?, minor.parse().ok()?))
        });
        image.macos = Some(parsed.ok_or_else(|| {
            problem(
                "macos-min",
                item,
                format!("`{}` is not a macOS version MAJOR.MINOR", item_text(item)),
                help,
            )
        })?);
    }
    Ok(image)
}

/// The lower bound of `[project] requires-python`: the smallest version of
/// its `>=`, `~=`, `==` (also `==3.12.*`) and `>` clauses, as `MAJOR.MINOR`
/// (`>3.10` counts as 3.10: the next patch release has that minor). `None`
/// without the key, without such a clause, or for a value that is not a
/// PEP 440 specifier set (the Python packaging tools report that one).
fn requires_python_floor(doc: &toml_edit::Document<&str>) -> Option<PythonVersion> {
    use pep440_rs::Operator;
    let text = doc.get("project")?.get("requires-python")?.as_str()?;
    let specifiers: pep440_rs::VersionSpecifiers = text.parse().ok()?;
    specifiers
        .iter()
        .filter(|s| {
            matches!(
                s.operator(),
                Operator::GreaterThanEqual
                    | Operator::GreaterThan
                    | Operator::TildeEqual
                    | Operator::Equal
                    | Operator::EqualStar
                    | Operator::ExactEqual
            )
        })
        .filter_map(|s| {
            let release = s.version().release();
            Some(PythonVersion {
                major: u32::try_from(*release.first()?).ok()?,
                minor: u32::try_from(release.get(1).copied().unwrap_or(0)).ok()?,
            })
        })
        .min()
}

/// `exclude-newer`, `exclude-newer-package` and `exclude-newer-cutoff` of
/// `[tool.kernels]`; `problem` builds the error of a key.
fn parse_cooldown(
    table: &dyn TableLike,
    problem: &dyn Fn(&str, &Item, String, &str) -> ManifestError,
) -> Result<CooldownSettings, ManifestError> {
    let mut cooldown = CooldownSettings::default();
    let help = "write a span such as `exclude-newer = \"7 days\"`, or an RFC 3339 time such as `\"2026-11-25T00:00:00Z\"`";
    if let Some(item) = table.get("exclude-newer") {
        let value = item
            .as_str()
            .ok_or_else(|| format!("expected a string, found {}", type_name(item)))
            .and_then(ExcludeNewer::parse)
            .map_err(|what| problem("exclude-newer", item, what, help))?;
        cooldown.exclude_newer = Some(value);
    }
    if let Some(item) = table.get(CUTOFF_KEY) {
        let recorded = item
            .as_str()
            .and_then(|s| s.parse::<jiff::Timestamp>().ok());
        cooldown.recorded = Some(recorded.ok_or_else(|| {
            problem(
                CUTOFF_KEY,
                item,
                format!(
                    "expected an RFC 3339 time string, found {}",
                    item_text(item)
                ),
                "`kernels lock` writes this key; delete it and run `kernels lock` again",
            )
        })?);
    }
    if let Some(item) = table.get("exclude-newer-package") {
        let exempt_help = "write `exclude-newer-package = { \"org/name\" = false }` to exempt a repository from the cooldown";
        let entries = item.as_table_like().ok_or_else(|| {
            problem(
                "exclude-newer-package",
                item,
                format!("expected a table, found {}", type_name(item)),
                exempt_help,
            )
        })?;
        for (key, value) in entries.iter() {
            let repo = key.parse::<RepoId>().map_err(|err| {
                problem(
                    "exclude-newer-package",
                    value,
                    format!("`{key}`: {err}"),
                    exempt_help,
                )
            })?;
            if value.as_bool() != Some(false) {
                return Err(problem(
                    "exclude-newer-package",
                    value,
                    format!("`{key}`: expected `false`, found {}", item_text(value)),
                    exempt_help,
                ));
            }
            cooldown.exempt.push(repo);
        }
    }
    Ok(cooldown)
}

/// A short description of a value for messages: its TOML text, or its type.
pub(super) fn item_text(item: &Item) -> String {
    match item.as_value() {
        Some(value) => format!("`{}`", value.to_string().trim()),
        None => type_name(item).to_owned(),
    }
}

/// The strings of `[tool.kernels] key`, each parsed by `parse`; an absent
/// key is empty. The error names the item and what is wrong with it.
fn string_array<'a, T, E: std::fmt::Display>(
    table: &'a dyn TableLike,
    key: &str,
    what: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, (&'a Item, String)> {
    let Some(item) = table.get(key) else {
        return Ok(Vec::new());
    };
    let Some(array) = item.as_array() else {
        return Err((
            item,
            format!(
                "expected an array of {what} strings, found {}",
                type_name(item)
            ),
        ));
    };
    array
        .iter()
        .map(|value| {
            let text = value.as_str().ok_or_else(|| {
                format!("expected a {what} string, found {}", value_type_name(value))
            })?;
            parse(text).map_err(|err| format!("`{text}`: {err}"))
        })
        .collect::<Result<_, _>>()
        .map_err(|message| (item, message))
}

pub(crate) fn type_name(item: &Item) -> &'static str {
    match item {
        Item::None => "nothing",
        Item::Table(_) => "a table",
        Item::ArrayOfTables(_) => "an array of tables",
        Item::Value(value) => value_type_name(value),
    }
}

pub(super) fn value_type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::InlineTable(_) => "an inline table",
    }
}

const VALUE_HELP: &str = "use an integer such as `1` (branch `v1`), a version specifier string such as `\">=0.1.0\"`, or `{ revision = \"<branch, tag or commit>\" }`";

/// Parses a dependency value (bare or a table with `version`/`revision`,
/// and `path` next to `version`).
fn parse_item(item: &Item, text: &str) -> Result<(Requirement, Option<PathBuf>), Problem> {
    let table: Option<(&dyn TableLike, _)> = match item {
        Item::Value(Value::InlineTable(table)) => Some((table, table.span())),
        Item::Table(table) => Some((table, table.span())),
        _ => None,
    };
    if let Some((table, span)) = table {
        let path = parse_path(table, span.clone())?;
        return parse_table(table, span, text).map(|r| (r, path));
    }
    match item {
        Item::Value(value) => parse_version(value, text).map(|r| (r, None)),
        other => Err(Problem::new(
            other.span(),
            format!("expected a version, found {}", type_name(other)),
            "not a version",
        )
        .help(VALUE_HELP)),
    }
}

/// `path` of a dependency table: a non-empty string, only next to
/// `version` (the lock pins the Hub version; a path alone has nothing to lock).
fn parse_path(
    table: &dyn TableLike,
    span: Option<Range<usize>>,
) -> Result<Option<PathBuf>, Problem> {
    let Some(item) = table.get("path") else {
        return Ok(None);
    };
    let path = match item.as_str() {
        Some(path) if !path.trim().is_empty() => PathBuf::from(path),
        _ => {
            return Err(Problem::new(
                item.span(),
                format!(
                    "`path` must be a non-empty string, found {}",
                    type_name(item)
                ),
                "not a path",
            )
            .help("name the kernel's checkout, for example `path = \"../my-kernel\"`"));
        }
    };
    if table.get("version").is_none() {
        return Err(Problem::new(
            span,
            "`path` needs `version`: the lock pins the published version the path stands in for"
                .into(),
            "no version",
        )
        .help(format!(
            "add the Hub version it develops, for example `{{ path = \"{}\", version = 1 }}`",
            path.display()
        )));
    }
    Ok(Some(path))
}

fn parse_table(
    table: &dyn TableLike,
    span: Option<Range<usize>>,
    text: &str,
) -> Result<Requirement, Problem> {
    for (key, _) in table.iter() {
        if key != "version" && key != "revision" && key != "path" {
            let key_span = table.get_key_value(key).and_then(|(k, _)| k.span());
            return Err(
                Problem::new(key_span, format!("unknown key `{key}`"), "unknown key").help(
                    match did_you_mean(key, &["version", "revision"]) {
                        Some(best) => format!(
                            "did you mean `{best}`? A dependency table takes either `version` or `revision`"
                        ),
                        None => "a dependency table takes either `version` or `revision`".to_owned(),
                    },
                ),
            );
        }
    }
    match (table.get("version"), table.get("revision")) {
        (Some(_), Some(_)) => Err(Problem::new(
            span,
            "`version` and `revision` are mutually exclusive".into(),
            "both given",
        )
        .help("keep only one of them")),
        (None, None) => Err(Problem::new(
            span,
            "a dependency table needs `version` or `revision`".into(),
            "empty",
        )
        .help(VALUE_HELP)),
        (Some(version), None) => match version {
            Item::Value(value) if !matches!(value, Value::InlineTable(_)) => {
                parse_version(value, text)
            }
            other => Err(Problem::new(
                other.span(),
                format!(
                    "`version` must be an integer or a string, found {}",
                    type_name(other)
                ),
                "not a version",
            )
            .help(VALUE_HELP)),
        },
        (None, Some(revision)) => match revision.as_str() {
            Some(rev) if !rev.trim().is_empty() => Ok(Requirement::Revision(rev.to_owned())),
            Some(_) => Err(Problem::new(
                revision.span(),
                "`revision` is empty".into(),
                "empty revision",
            )
            .help("name a branch, a tag or a full commit id")),
            None => Err(Problem::new(
                revision.span(),
                format!("`revision` must be a string, found {}", type_name(revision)),
                "not a string",
            )
            .help("name a branch, a tag or a full commit id, for example `revision = \"v1\"`")),
        },
    }
}

/// Parses a bare version value: integer or string.
fn parse_version(value: &Value, text: &str) -> Result<Requirement, Problem> {
    let span = value.span();
    match value {
        Value::Integer(n) => {
            let n = *n.value();
            u64::try_from(n).map(Requirement::Branch).map_err(|_| {
                Problem::new(span, format!("version {n} is negative"), "negative version")
                    .help("versions are branch numbers: `1` means branch `v1`")
            })
        }
        Value::String(s) => Requirement::parse_str(s.value()).map_err(|err| {
            let inner = span.map(|r| string_content_span(text, r, s.value(), err.range.clone()));
            let help = match s.value().trim().parse::<u64>() {
                Ok(n) => format!(
                    "for branch `v{n}` write the integer without quotes: `= {n}`; for tags write a specifier such as `\"=={n}\"`"
                ),
                Err(_) => "write a PEP 440 specifier set such as `\">=0.1.0,<0.2.0\"`, or an integer such as `1` for branch `v1`".to_owned(),
            };
            Problem::new(inner, err.message, "invalid version requirement").help(help)
        }),
        Value::Boolean(b) => Err(Problem::new(
            span,
            format!("`{}` is a boolean, not a version", b.value()),
            "boolean",
        )
        .help("write an integer such as `1` for branch `v1` (the Python reference reads `true` as 1; `kernels` does not guess)")),
        Value::Float(f) => Err(Problem::new(
            span,
            format!("`{}` is a float, not a version", f.value()),
            "float",
        )
        .help("write an integer such as `1` for branch `v1`, or a quoted specifier such as `\">=1.5\"`")),
        other => Err(Problem::new(
            span,
            format!("expected a version, found {}", value_type_name(other)),
            "not a version",
        )
        .help(VALUE_HELP)),
    }
}

/// Maps a byte range of a string's value to the file, when the raw string has no
/// escapes (value and raw content are identical); else the whole string literal.
fn string_content_span(
    text: &str,
    literal: Range<usize>,
    value: &str,
    range: Range<usize>,
) -> Range<usize> {
    let raw = text.get(literal.clone()).unwrap_or("");
    let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        3
    } else {
        1
    };
    let content = raw
        .get(quote..raw.len().saturating_sub(quote))
        .unwrap_or("");
    if content == value && range.end <= value.len() {
        let start = literal.start + quote + range.start;
        start..literal.start + quote + range.end
    } else {
        literal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, Path::new("proj/pyproject.toml"))
    }

    #[test]
    fn targets_of_tool_kernels() {
        let manifest = parse(
            "[tool.kernels]\ncuda-capabilities = [\"9.0\", \"10.0\"]\nrocm-archs = [\"gfx942:xnack-\"]\n[tool.kernels.dependencies]\n\"acme/relu\" = 1\n",
        )
        .unwrap();
        assert_eq!(
            manifest.settings.targets,
            [
                Target::Cuda(Capability::new(9, 0)),
                Target::Cuda(Capability::new(10, 0)),
                Target::Rocm("gfx942".into()),
            ]
        );
        for (text, message) in [
            (
                "cuda-capabilities = [9.0]",
                "proj/pyproject.toml: [tool.kernels] `cuda-capabilities`: expected a capability string, found a float",
            ),
            (
                "cuda-capabilities = \"9.0\"",
                "proj/pyproject.toml: [tool.kernels] `cuda-capabilities`: expected an array of capability strings, found a string",
            ),
            (
                "cuda-capabilities = [\"sm_90\"]",
                "proj/pyproject.toml: [tool.kernels] `cuda-capabilities`: `sm_90`: `sm_90` is not a CUDA capability such as `9.0`",
            ),
            (
                "rocm-archs = [\"mi300\"]",
                "proj/pyproject.toml: [tool.kernels] `rocm-archs`: `mi300`: `mi300` is not a ROCm arch such as `gfx942`",
            ),
        ] {
            let text =
                format!("[tool.kernels]\n{text}\n[tool.kernels.dependencies]\n\"acme/relu\" = 1\n");
            let err = parse(&text).unwrap_err();
            assert_eq!(err.to_string(), message, "{text}");
        }
    }

    #[test]
    fn path_sources_need_a_version() {
        let manifest = parse(
            "[tool.kernels.dependencies]\n\"a/relu\" = { path = \"../relu\", version = 1 }\n",
        )
        .unwrap();
        let dep = &manifest.dependencies[0];
        assert_eq!(dep.requirement, Requirement::Branch(1));
        assert_eq!(dep.path.as_deref(), Some(Path::new("../relu")));
        let err = parse("[tool.kernels.dependencies]\n\"a/relu\" = { path = \"../relu\" }\n")
            .unwrap_err();
        assert!(err.to_string().contains("`path` needs `version`"), "{err}");
        let text = format!("{:?}", miette::Report::new(err));
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains("version = 1 }"), "{text}");
        assert!(
            parse("[tool.kernels.dependencies]\n\"a/relu\" = { path = 3, version = 1 }\n").is_err()
        );
    }

    #[test]
    fn reads_all_value_forms_in_file_order() {
        let manifest = parse(
            r#"
[project]
name = "x"

[tool.kernels.dependencies]
"kernels-community/relu" = 1
"kernels-community/activation" = ">=0.0.2"
"kernels-test/versions" = { version = "^0.1" }
"kernels-test/pinned" = { revision = "refs/pr/1" }
"#,
        )
        .unwrap();
        let got: Vec<String> = manifest
            .dependencies
            .iter()
            .map(|d| format!("{} {}", d.repo_id, d.requirement))
            .collect();
        assert_eq!(
            got,
            [
                "kernels-community/relu version 1 (branch `v1`)",
                "kernels-community/activation `>=0.0.2`",
                "kernels-test/versions `^0.1`",
                "kernels-test/pinned revision `refs/pr/1`",
            ]
        );
    }

    #[test]
    fn real_manifests_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/projects");
        let mut count = 0;
        for entry in fs_err::read_dir(dir).unwrap() {
            let manifest = Manifest::read(&entry.unwrap().path()).unwrap();
            assert!(!manifest.dependencies.is_empty());
            count += 1;
        }
        assert!(count >= 10);
    }

    #[test]
    fn missing_table() {
        let err = parse("[project]\nname = \"x\"\n").unwrap_err();
        assert!(matches!(err, ManifestError::NoDependencies { .. }));
        assert!(err.to_string().contains("proj/pyproject.toml"));
    }

    #[test]
    fn all_problems_in_one_pass() {
        let text = r#"[tool.kernels.dependencies]
relu = 1
"a/b" = true
"a/c" = 1.5
"a/d" = ">=0.1, nope"
"a/e" = [1]
"a/f" = { version = 1, revision = "main" }
"a/g" = -1
"a/h" = 2
"#;
        let err = parse(text).unwrap_err();
        let ManifestError::Entries { problems, .. } = err else {
            panic!("expected several problems: {err:?}");
        };
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 7, "{messages:#?}");
        assert!(messages[0].contains("entry `relu`") && messages[0].contains("no `/`"));
        assert!(messages[1].contains("boolean"));
        assert!(messages[2].contains("float"));
        assert!(messages[3].contains("`nope`"));
        assert!(messages[4].contains("an array"));
        assert!(messages[5].contains("mutually exclusive"));
        assert!(messages[6].contains("negative"));
        for message in messages {
            assert!(
                message.starts_with("proj/pyproject.toml: [tool.kernels.dependencies] entry `")
            );
        }
        let spec_problem = &problems[3];
        let start = text.find("nope").unwrap();
        assert_eq!(spec_problem.span, SourceSpan::from(start..start + 4));
    }

    #[test]
    fn unknown_kernels_keys_suggest_the_closest() {
        let err =
            parse("[tool.kernels]\ntrsut = 1\nzzz = 2\n[tool.kernels.dependencies]\n\"a/b\" = 1\n")
                .unwrap_err();
        let ManifestError::Entries { problems, .. } = err else {
            panic!("expected two problems: {err:?}");
        };
        assert!(problems[0].message.contains("unknown key `trsut`"));
        assert!(
            problems[0]
                .help
                .as_deref()
                .unwrap()
                .starts_with("did you mean `trust`?")
        );
        assert!(
            problems[1]
                .help
                .as_deref()
                .unwrap()
                .starts_with("remove the key")
        );
        let typo = parse("[tool.kernels.dependecies]\n\"a/b\" = 1\n").unwrap_err();
        let ManifestError::Entries { problems, .. } = typo else {
            panic!("{typo:?}");
        };
        assert!(
            problems[0]
                .help
                .as_deref()
                .unwrap()
                .starts_with("did you mean `dependencies`?")
        );
        assert!(
            problems[1]
                .message
                .ends_with("has no [tool.kernels.dependencies] table")
        );
        assert_eq!(
            did_you_mean("dependancies", KNOWN_KERNELS_KEYS),
            Some("dependencies")
        );
        assert_eq!(did_you_mean("x", KNOWN_KERNELS_KEYS), None);
    }

    #[test]
    fn duplicate_keys_point_at_both_definitions() {
        let text = "[tool.kernels.dependencies]\n\"a/b\" = 1\n\"a/c\" = 1\n\"a/b\" = 2\n";
        let err = parse(text).unwrap_err();
        let ManifestError::Syntax { first, help, .. } = err else {
            panic!("{err:?}");
        };
        let start = text.find("\"a/b\"").unwrap();
        assert_eq!(first, Some(SourceSpan::from(start..start + 5)));
        assert!(help.unwrap().contains("keep one of the two marked lines"));
    }

    #[test]
    fn syntax_error_points_into_file() {
        let err = parse("[tool.kernels.dependencies]\n\"a/b\" = \n").unwrap_err();
        assert!(matches!(err, ManifestError::Syntax { span: Some(_), .. }));
    }
}
