//! Which signatures a project accepts: `[tool.kernels] trust-root`,
//! `require-signed` and `[tool.kernels.signers]` of `pyproject.toml`, with
//! `--trust-root FILE` / `--require-signed` on top (extensions; reference
//! 0.17.2 has only its fixed default policy and the online production root).
//!
//! ```toml
//! [tool.kernels]
//! trust-root = "sigstore/trusted_root.json"   # relative to the project
//! require-signed = true                       # refuse unsigned variants
//!
//! [tool.kernels.signers]
//! # owner: every repository of `my-org`
//! "my-org" = ["https://github.com/my-org/kernel-ci/.github/workflows/build.yaml@refs/heads/main"]
//! # one repository, signed by a reusable workflow called from another repository
//! "my-org/relu" = [
//!   { workflow = "https://github.com/my-org/ci/.github/workflows/sign.yaml@refs/tags/v1", source-repository = "https://github.com/my-org/relu" },
//! ]
//! ```
//!
//! A signer is the Fulcio build-signer URI (certificate extension
//! 1.3.6.1.4.1.57264.1.9, `https://github.com/OWNER/REPO/.github/workflows/FILE@REF`)
//! together with the source repository (extension .1.12) the certificate must
//! name. Written as a string, the source repository is the repository of the
//! workflow (`https://github.com/OWNER/REPO`); the table form names it. The
//! OIDC issuer is GitHub Actions' for every signer, as in the reference's
//! policy. Signers are added to [`SignerPolicy::reference_default`] for the
//! repositories they are listed for; they never replace it.

use std::path::{Path, PathBuf};

use kernels_trust::{SignerPolicy, SignerRule, TrustRoot, TrustRootError};
use kernels_types::repo_id::RepoId;
use toml_edit::{Item, TableLike, Value};

use super::manifest::{ManifestError, item_text, type_name, value_type_name};

/// `[tool.kernels]` key of the trusted-root file.
pub const TRUST_ROOT_KEY: &str = "trust-root";
/// `[tool.kernels]` key that refuses unsigned variants.
pub const REQUIRE_SIGNED_KEY: &str = "require-signed";
/// `[tool.kernels]` subtable of extra signers.
pub const SIGNERS_KEY: &str = "signers";

/// The trust settings of a project (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustSettings {
    /// The Sigstore `trusted_root.json` to verify against, already resolved
    /// against the project directory (or the current directory for
    /// `--trust-root`); `None` is the embedded production root.
    pub trust_root: Option<PathBuf>,
    /// Whether an unsigned variant (`SignatureBundleMissing`) is refused
    /// rather than accepted with a warning.
    pub require_signed: bool,
    /// `[tool.kernels.signers]` entries, in file order.
    pub signers: Vec<Signers>,
}

/// One `[tool.kernels.signers]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signers {
    /// The repositories the entry applies to.
    pub scope: SignerScope,
    /// The accepted signers.
    pub signers: Vec<Signer>,
}

/// What a `[tool.kernels.signers]` key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignerScope {
    /// `"my-org"`: every repository of the owner (compared case-insensitively,
    /// as Hub ids are).
    Owner(String),
    /// `"my-org/relu"`: one repository.
    Repo(RepoId),
}

/// One accepted signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The build-signer (workflow) URI with its ref.
    pub workflow: String,
    /// The source repository URI the certificate must name.
    pub source_repository: String,
}

impl SignerScope {
    /// Whether the scope covers `repo_id`.
    pub fn covers(&self, repo_id: &RepoId) -> bool {
        match self {
            SignerScope::Owner(owner) => owner.eq_ignore_ascii_case(repo_id.owner()),
            SignerScope::Repo(repo) => repo.as_str().eq_ignore_ascii_case(repo_id.as_str()),
        }
    }
}

impl TrustSettings {
    /// These settings with the command line's `--trust-root` (relative to
    /// the current directory) and `--require-signed` on top: a given trust
    /// root replaces the project's, and `--require-signed` can only turn the
    /// requirement on.
    pub fn overridden(mut self, trust_root: Option<&Path>, require_signed: bool) -> TrustSettings {
        if let Some(path) = trust_root {
            self.trust_root = Some(path.to_path_buf());
        }
        self.require_signed |= require_signed;
        self
    }

    /// The signer policy for `repo_id`: the reference's default policy plus
    /// every `[tool.kernels.signers]` entry whose key covers the repository.
    pub fn policy_for(&self, repo_id: &RepoId) -> SignerPolicy {
        let mut policy = SignerPolicy::reference_default();
        let extra = self
            .signers
            .iter()
            .filter(|entry| entry.scope.covers(repo_id))
            .flat_map(|entry| &entry.signers);
        for signer in extra {
            let rule = match policy
                .rules
                .iter_mut()
                .find(|rule| rule.source_repository == signer.source_repository)
            {
                Some(rule) => rule,
                None => {
                    policy.rules.push(SignerRule {
                        source_repository: signer.source_repository.clone(),
                        workflows: Vec::new(),
                    });
                    policy.rules.last_mut().expect("just pushed")
                }
            };
            if !rule.workflows.contains(&signer.workflow) {
                rule.workflows.push(signer.workflow.clone());
            }
        }
        policy
    }

    /// The trust root to verify against: the configured file, else the
    /// embedded Sigstore production root.
    ///
    /// # Errors
    /// The file cannot be read, is too large or is not a trusted root.
    pub fn trust_root(&self) -> Result<TrustRoot, TrustRootError> {
        match &self.trust_root {
            Some(path) => TrustRoot::from_file(path),
            None => Ok(TrustRoot::production()),
        }
    }
}

/// The error builder of `[tool.kernels]` keys: key, item, what is wrong, help.
pub(super) type KeyProblem<'a> = &'a dyn Fn(&str, &Item, String, &str) -> ManifestError;

/// Reads `trust-root`, `require-signed` and `signers` of `[tool.kernels]`
/// (the table of the `pyproject.toml` at `path`); `problem` builds the error
/// of a key.
pub(super) fn parse_trust_settings(
    table: &dyn TableLike,
    path: &Path,
    problem: KeyProblem<'_>,
) -> Result<TrustSettings, ManifestError> {
    let mut settings = TrustSettings::default();
    if let Some(item) = table.get(TRUST_ROOT_KEY) {
        let file = item.as_str().filter(|s| !s.is_empty()).ok_or_else(|| {
            problem(
                TRUST_ROOT_KEY,
                item,
                format!("expected a file path string, found {}", item_text(item)),
                "name the Sigstore trusted_root.json, relative to the project, for example `trust-root = \"sigstore/trusted_root.json\"`",
            )
        })?;
        let project = path.parent().unwrap_or(Path::new("."));
        settings.trust_root = Some(project.join(file));
    }
    if let Some(item) = table.get(REQUIRE_SIGNED_KEY) {
        settings.require_signed = item.as_bool().ok_or_else(|| {
            problem(
                REQUIRE_SIGNED_KEY,
                item,
                format!("expected `true` or `false`, found {}", item_text(item)),
                "write `require-signed = true` to refuse unsigned variants, or remove the key",
            )
        })?;
    }
    if let Some(item) = table.get(SIGNERS_KEY) {
        settings.signers = parse_signers(item, problem)?;
    }
    Ok(settings)
}

const SIGNERS_HELP: &str = "write `[tool.kernels.signers]` with `\"owner\" = [\"https://github.com/owner/repo/.github/workflows/build.yaml@refs/heads/main\"]` (or an `\"owner/name\"` key for one repository)";

/// The entries of `[tool.kernels.signers]`.
fn parse_signers(item: &Item, problem: KeyProblem<'_>) -> Result<Vec<Signers>, ManifestError> {
    let table = item.as_table_like().ok_or_else(|| {
        problem(
            SIGNERS_KEY,
            item,
            format!("expected a table, found {}", type_name(item)),
            SIGNERS_HELP,
        )
    })?;
    let mut entries = Vec::new();
    for (key, value) in table.iter() {
        let scope = parse_scope(key).map_err(|what| {
            problem(SIGNERS_KEY, value, format!("`{key}`: {what}"), SIGNERS_HELP)
        })?;
        let array = value.as_array().ok_or_else(|| {
            problem(
                SIGNERS_KEY,
                value,
                format!(
                    "`{key}`: expected an array of signers, found {}",
                    type_name(value)
                ),
                SIGNERS_HELP,
            )
        })?;
        let signers = array
            .iter()
            .map(|element| {
                parse_signer(element).map_err(|(what, help)| {
                    let element = Item::Value(element.clone());
                    problem(SIGNERS_KEY, &element, format!("`{key}`: {what}"), help)
                })
            })
            .collect::<Result<_, _>>()?;
        entries.push(Signers { scope, signers });
    }
    Ok(entries)
}

/// An owner (`my-org`) or a repository id (`my-org/relu`).
fn parse_scope(key: &str) -> Result<SignerScope, String> {
    if key.contains('/') {
        return key
            .parse::<RepoId>()
            .map(SignerScope::Repo)
            .map_err(|err| err.to_string());
    }
    // An owner is valid when `owner/x` is a valid repository id.
    format!("{key}/x")
        .parse::<RepoId>()
        .map(|_| SignerScope::Owner(key.to_owned()))
        .map_err(|_| "not a Hub owner name or `owner/name` repository id".to_owned())
}

const SIGNER_HELP: &str = "a signer is a GitHub Actions workflow URI with its ref, `https://github.com/OWNER/REPO/.github/workflows/FILE.yaml@refs/heads/main`, or `{ workflow = \"…\", source-repository = \"https://github.com/OWNER/REPO\" }`";

/// One signer: a workflow URI string, or `{ workflow, source-repository }`.
fn parse_signer(value: &Value) -> Result<Signer, (String, &'static str)> {
    let (workflow, source) = match value {
        Value::String(s) => (s.value().as_str(), None),
        Value::InlineTable(table) => {
            if let Some((key, _)) = table
                .iter()
                .find(|(k, _)| *k != "workflow" && *k != "source-repository")
            {
                return Err((format!("unknown signer key `{key}`"), SIGNER_HELP));
            }
            let field = |name: &str| match table.get(name) {
                None => Ok(None),
                Some(v) => v.as_str().map(Some).ok_or_else(|| {
                    format!("`{name}` must be a string, found {}", value_type_name(v))
                }),
            };
            let workflow = field("workflow")
                .map_err(|e| (e, SIGNER_HELP))?
                .ok_or_else(|| ("a signer table needs `workflow`".to_owned(), SIGNER_HELP))?;
            (
                workflow,
                field("source-repository").map_err(|e| (e, SIGNER_HELP))?,
            )
        }
        other => {
            return Err((
                format!(
                    "expected a workflow URI string, found {}",
                    value_type_name(other)
                ),
                SIGNER_HELP,
            ));
        }
    };
    let repository = workflow_repository(workflow).map_err(|what| (what, SIGNER_HELP))?;
    let source_repository = match source {
        Some(source) => github_repository(source)
            .map(|_| source.to_owned())
            .map_err(|what| (what, SIGNER_HELP))?,
        None => repository,
    };
    Ok(Signer {
        workflow: workflow.to_owned(),
        source_repository,
    })
}

const GITHUB: &str = "https://github.com/";

/// The repository URI (`https://github.com/OWNER/REPO`) of a workflow URI
/// `https://github.com/OWNER/REPO/.github/workflows/FILE@REF`.
fn workflow_repository(workflow: &str) -> Result<String, String> {
    let bad = |why: &str| format!("`{workflow}` is not a GitHub Actions workflow URI: {why}");
    let (repository, rest) = workflow
        .split_once("/.github/workflows/")
        .ok_or_else(|| bad("no `/.github/workflows/`"))?;
    github_repository(repository)
        .map_err(|_| bad("it must start with `https://github.com/OWNER/REPO`"))?;
    let (file, reference) = rest
        .split_once('@')
        .ok_or_else(|| bad("no `@REF` (for example `@refs/heads/main`)"))?;
    if file.is_empty() || file.contains('/') || reference.is_empty() {
        return Err(bad("expected `FILE@REF` after `/.github/workflows/`"));
    }
    Ok(repository.to_owned())
}

/// Checks that `uri` is `https://github.com/OWNER/REPO`.
fn github_repository(uri: &str) -> Result<(), String> {
    let path = uri.strip_prefix(GITHUB).unwrap_or("");
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) {
        Ok(())
    } else {
        Err(format!(
            "`{uri}` is not a GitHub repository URI such as `https://github.com/OWNER/REPO`"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> Result<TrustSettings, String> {
        let doc = toml_edit::Document::parse(text).unwrap();
        let table = doc["tool"]["kernels"].as_table_like().unwrap();
        let path = Path::new("/p/pyproject.toml");
        let problem = |key: &str, _: &Item, what: String, _: &str| ManifestError::NoDependencies {
            path: PathBuf::from(format!("{key}: {what}")),
        };
        parse_trust_settings(table, path, &problem).map_err(|e| match e {
            ManifestError::NoDependencies { path } => path.display().to_string(),
            other => other.to_string(),
        })
    }

    const CI: &str =
        "https://github.com/my-org/kernel-ci/.github/workflows/build.yaml@refs/heads/main";

    #[test]
    fn signers_extend_the_default_policy_for_their_scope_only() {
        let text = format!(
            "[tool.kernels]\ntrust-root = \"root.json\"\nrequire-signed = true\n[tool.kernels.signers]\n\"My-Org\" = [\"{CI}\"]\n\"other/relu\" = [{{ workflow = \"{CI}\", source-repository = \"https://github.com/other/relu\" }}]\n"
        );
        let s = settings(&text).unwrap();
        assert_eq!(s.trust_root, Some(PathBuf::from("/p/root.json")));
        assert!(s.require_signed);
        let mine = s.policy_for(&"my-org/relu".parse().unwrap());
        let defaults = SignerPolicy::reference_default().rules;
        assert_eq!(mine.rules.len(), defaults.len() + 1);
        assert_eq!(mine.rules[..defaults.len()], defaults[..]);
        let added = &mine.rules[defaults.len()];
        assert_eq!(
            added.source_repository,
            "https://github.com/my-org/kernel-ci"
        );
        assert_eq!(added.workflows, vec![CI.to_owned()]);
        let other = s.policy_for(&"other/relu".parse().unwrap());
        assert_eq!(
            other.rules[defaults.len()].source_repository,
            "https://github.com/other/relu"
        );
        let community = s.policy_for(&"kernels-community/relu".parse().unwrap());
        assert_eq!(community, SignerPolicy::reference_default());
        assert_eq!(mine.issuer, kernels_trust::policy::GITHUB_ACTIONS_ISSUER);
    }

    #[test]
    fn the_command_line_overrides_the_project() {
        let s = settings("[tool.kernels]\ntrust-root = \"root.json\"\n").unwrap();
        let s = s.overridden(Some(Path::new("cli.json")), true);
        assert_eq!(s.trust_root, Some(PathBuf::from("cli.json")));
        assert!(s.require_signed);
        assert!(s.overridden(None, false).require_signed);
    }

    #[test]
    fn wrong_values_name_the_key_and_the_problem() {
        let cases = [
            (
                "require-signed = \"yes\"",
                "require-signed: expected `true` or `false`, found `\"yes\"`",
            ),
            (
                "trust-root = 1",
                "trust-root: expected a file path string, found `1`",
            ),
            ("signers = 1", "signers: expected a table, found an integer"),
            (
                "signers = { a = \"x\" }",
                "signers: `a`: expected an array of signers, found a string",
            ),
            ("signers = { \"a/b/c\" = [] }", "signers: `a/b/c`: "),
            (
                "signers = { a = [\"https://github.com/a/b/build.yaml\"] }",
                "signers: `a`: `https://github.com/a/b/build.yaml` is not a GitHub Actions workflow URI: no `/.github/workflows/`",
            ),
            (
                "signers = { a = [\"https://gitlab.com/a/b/.github/workflows/x.yaml@refs/heads/main\"] }",
                "it must start with `https://github.com/OWNER/REPO`",
            ),
            (
                "signers = { a = [\"https://github.com/a/b/.github/workflows/x.yaml\"] }",
                "no `@REF`",
            ),
            (
                "signers = { a = [{ workflow = 1 }] }",
                "`workflow` must be a string, found an integer",
            ),
            (
                "signers = { a = [{ flow = \"x\" }] }",
                "unknown signer key `flow`",
            ),
            (
                "signers = { a = [{ source-repository = \"x\" }] }",
                "a signer table needs `workflow`",
            ),
        ];
        for (line, expected) in cases {
            let err = settings(&format!("[tool.kernels]\n{line}\n")).unwrap_err();
            assert!(err.contains(expected), "{line}: {err}");
        }
    }
}
