//! Process-wide settings resolved once from the environment.
//!
//! This is the only module that reads environment variables; everything else
//! receives a [`Settings`] value. Precedence rules follow `huggingface_hub`
//! (see `docs/` for the table).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default Hub endpoint when `HF_ENDPOINT` is unset.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Retries after a transient failure when `KERNELS_MAX_RETRIES` is unset.
pub const DEFAULT_MAX_RETRIES: u32 = 5;

/// Every environment variable the CLI reads ([`Settings::from_env`],
/// [`LockFlags::from_env`], [`virtual_env`], [`color_enabled`], [`path_var`] and
/// the clap `env = ...` attributes): the list lives in `kernels-types` so that test
/// harnesses can clear it without depending on this crate; a unit test below fails
/// when this module or `cli/` reads a name missing there.
pub use kernels_types::env_vars::ENV_VARS;

/// Settings shared by the network and cache commands.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Notes about the environment itself (a deprecated variable in use),
    /// printed once on stderr by the command line unless `--quiet`.
    pub notes: Vec<String>,
    /// Hub base URL without a trailing `/` (`HF_ENDPOINT`).
    pub endpoint: String,
    /// Bearer token (`HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, then the file at
    /// `HF_TOKEN_PATH` or `$HF_HOME/token`), unless `HF_HUB_DISABLE_IMPLICIT_TOKEN` is set.
    pub token: Option<String>,
    /// How [`Settings::token`] is kept fresh or obtained (huggingface_hub 2.4):
    /// an OIDC exchange when `HF_OIDC_RESOURCE` is set (before `HF_TOKEN`), an
    /// OAuth refresh from `stored_tokens` for a token read from the token file.
    pub token_source: kernels_hub::TokenSource,
    /// Trust roots and proxies (`SSL_CERT_FILE`, `SSL_CERT_DIR`,
    /// `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`; `HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, `NO_PROXY` and their lower-case forms).
    pub network: kernels_hub::NetworkConfig,
    /// Hub cache root: `KERNELS_CACHE` (else the deprecated `HF_KERNELS_CACHE`,
    /// with a note), else `HF_HUB_CACHE`, else
    /// `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, where `HF_HOME` defaults to
    /// `$XDG_CACHE_HOME/huggingface` or `~/.cache/huggingface`.
    pub cache_dir: PathBuf,
    /// Which setting chose [`Settings::cache_dir`] (`KERNELS_CACHE`,
    /// `HF_HUB_CACHE`, `HUGGINGFACE_HUB_CACHE`, `HF_HOME`, `XDG_CACHE_HOME` or
    /// `default`), for `kernels cache dir`.
    pub cache_dir_source: &'static str,
    /// How the cache writer adapts to its file system: `HF_HUB_DISABLE_SYMLINKS`
    /// (copy instead of symlinking, as huggingface_hub) and, for tests only,
    /// `KERNELS_TEST_ASSUME_NO_FLOCK` (behave as on a file system without flock).
    pub cache_options: kernels_cache::CacheOptions,
    /// No request may be made: `KERNELS_OFFLINE`, `HF_HUB_OFFLINE` or
    /// `TRANSFORMERS_OFFLINE` is truthy (the CLI's `--offline` also sets it).
    pub offline: bool,
    /// Connect timeout for Hub requests: `HF_HUB_ETAG_TIMEOUT` seconds, default 10
    /// (huggingface_hub's metadata-request timeout; `kernels` makes no metadata
    /// request, see `docs/downloading.md`).
    pub etag_timeout: Duration,
    /// File downloads: longest wait for the response headers and longest pause
    /// between received bytes: `HF_HUB_DOWNLOAD_TIMEOUT` seconds, default 10.
    pub download_timeout: Duration,
    /// Deadline of one whole API exchange (headers and body):
    /// `KERNELS_API_TIMEOUT` seconds, default 60.
    pub api_timeout: Duration,
    /// Longest wait honoured when the Hub rate-limits (`RateLimit` reset,
    /// `Retry-After`): `KERNELS_MAX_RATE_LIMIT_WAIT` seconds, default 300 (the
    /// Hub's window).
    pub max_rate_limit_wait: Duration,
    /// Stall watchdog of file downloads: a transfer that receives no body byte
    /// for this long is abandoned and retried (resuming with `Range`):
    /// `KERNELS_STALL_TIMEOUT` seconds, default the download timeout.
    pub stall_timeout: Duration,
    /// How often a failed request is retried after a transient failure
    /// (connection error, timeout, 408, 429, 500, 502, 503, 504):
    /// `KERNELS_MAX_RETRIES`, default 5; 0 disables retries.
    pub max_retries: u32,
    /// Where [`Settings::token`] came from (`HF_TOKEN`, …), for messages.
    pub token_origin: Option<String>,
    /// The home directory (`HOME`), to print paths below it as `~/…`.
    pub home: Option<PathBuf>,
    /// `HF_HUB_DISABLE_PROGRESS_BARS` is truthy: plain lines even on a
    /// terminal (as `--no-progress`).
    pub no_progress: bool,
    /// The runtime's own variables that are set and make it load something
    /// other than what `kernels.lock` pins ([`runtime_overrides`]).
    pub runtime_overrides: Vec<RuntimeOverride>,
    /// `LOCAL_KERNELS` as set, an empty value included (the runtime reads an
    /// empty value as one malformed entry); parsed by [`Settings::local_kernels`].
    pub local_kernels: Option<String>,
}

/// A variable of the `kernels` runtime, set in this environment, under which
/// the runtime loads something other than what `kernels.lock` pins.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeOverride {
    /// The variable's name.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What the runtime does instead, in words.
    pub effect: &'static str,
}

impl Settings {
    /// One `note:` status line per [`Settings::runtime_overrides`] (`env`,
    /// `check` and `download` say it once; with `--quiet` or JSON the
    /// document's `runtime_overrides` carries it).
    pub fn note_runtime_overrides(&self, printer: &super::printer::Printer) {
        for runtime_override in &self.runtime_overrides {
            printer.status(format_args!("note: {}", runtime_override.note()));
        }
    }
}

impl Settings {
    /// `LOCAL_KERNELS` parsed as the runtime reads it; `None` when unset.
    ///
    /// # Errors
    /// [`crate::local::LocalError::MalformedEntry`] naming the entry.
    pub fn local_kernels(
        &self,
    ) -> Option<Result<crate::local::LocalKernels, crate::local::LocalError>> {
        self.local_kernels
            .as_deref()
            .map(crate::local::LocalKernels::parse)
    }
}

impl RuntimeOverride {
    /// The one `note:` line commands print about it (without `note: `).
    pub fn note(&self) -> String {
        format!("{} is set: {}", self.variable, self.effect)
    }
}

/// `UNSTABLE_KERNELS_ALL_LATEST` when truthy (read by the runtime from 0.19:
/// every kernel loaded at the highest `vN` branch, pins ignored) and
/// `LOCAL_KERNELS` when not empty (0.13+: `repo_id=path:…`, those
/// repositories loaded from local directories).
fn runtime_overrides() -> Vec<RuntimeOverride> {
    let mut out = Vec::new();
    if let Some(value) = var("UNSTABLE_KERNELS_ALL_LATEST").filter(|v| is_truthy(v)) {
        out.push(RuntimeOverride {
            variable: "UNSTABLE_KERNELS_ALL_LATEST",
            value,
            effect: "kernels 0.19+ loads the highest `vN` of every kernel, not the commits kernels.lock pins; unset it to load what was locked and downloaded",
        });
    }
    if let Some(value) = var("LOCAL_KERNELS") {
        out.push(RuntimeOverride {
            variable: "LOCAL_KERNELS",
            value,
            effect: "the runtime loads the repositories it names from those local directories, not the commits kernels.lock pins",
        });
    }
    out
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Whether an environment value counts as true (`1`, `ON`, `YES`, `TRUE`, any case),
/// as `huggingface_hub` reads its boolean variables.
pub fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_uppercase().as_str(),
        "1" | "ON" | "YES" | "TRUE"
    )
}

/// A timeout in (possibly fractional) seconds; unparsable, negative or zero values
/// fall back to `default_secs`, values too large for a [`Duration`] (`1e20`) are
/// clamped to [`MAX_TIMEOUT`].
fn seconds(name: &str, default_secs: u64) -> Duration {
    var(name).map_or(Duration::from_secs(default_secs), |v| {
        parse_seconds(&v).unwrap_or(Duration::from_secs(default_secs))
    })
}

/// Longest timeout accepted from the environment (one year; more is clamped).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses (possibly fractional) seconds, never panicking: `None` for text that is
/// not a positive finite number, [`MAX_TIMEOUT`] at most.
pub fn parse_seconds(value: &str) -> Option<Duration> {
    let secs = value.trim().parse::<f64>().ok()?;
    if !secs.is_finite() || secs <= 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).map_or(MAX_TIMEOUT, |d| d.min(MAX_TIMEOUT)))
}

/// Expands a path the way huggingface_hub does (`os.path.expandvars(
/// os.path.expanduser(value))`): a leading `~` or `~/` becomes `$HOME`, then
/// `$NAME` and `${NAME}` become the variable's value; unknown variables and
/// `~user` are left as they are.
pub fn expand_path(value: &str) -> PathBuf {
    PathBuf::from(expand_vars(&expand_user(value)))
}

fn expand_user(value: &str) -> String {
    let home = || std::env::var("HOME").ok().filter(|h| !h.is_empty());
    match value.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match home() {
            Some(home) => format!("{}{rest}", home.trim_end_matches('/')),
            None => value.to_owned(),
        },
        _ => value.to_owned(),
    }
}

fn expand_vars(value: &str) -> String {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail, raw) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..], &rest[i..i + end + 3]),
                None => ("", after, "$"),
            }
        } else {
            let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
            (&after[..end], &after[end..], &rest[i..i + 1 + end])
        };
        match std::env::var(name).ok().filter(|_| !name.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(raw),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `VIRTUAL_ENV`: the active Python environment, whose interpreter detects torch
/// for `kernels download` (kept out of [`Settings`], which only the Hub commands need).
pub fn virtual_env() -> Option<PathBuf> {
    var("VIRTUAL_ENV").map(PathBuf::from)
}

/// What the project's interpreter would see besides its files: every
/// environment variable (but `_`, `OLDPWD` and `SHLVL`, which a shell changes
/// between identical runs) and the working directory, as one string; the key
/// of the stored probes ([`crate::variant::ProbeReceipts`]), so that a probe
/// taken under another `PYTHONPATH`, `PYTHONUSERBASE`, `VIRTUAL_ENV` or
/// `CUDA_VISIBLE_DEVICES` is not reused.
pub fn interpreter_context() -> String {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(name, _)| !matches!(name.to_str(), Some("_" | "OLDPWD" | "SHLVL")))
        .collect();
    vars.sort();
    let mut context = std::env::current_dir()
        .map(|dir| dir.display().to_string())
        .unwrap_or_default();
    for (name, value) in vars {
        context.push('\0');
        context.push_str(&name.to_string_lossy());
        context.push('=');
        context.push_str(&value.to_string_lossy());
    }
    context
}

/// Whether coloured output is allowed: `NO_COLOR` unset or empty (no-color.org).
pub fn color_enabled() -> bool {
    var("NO_COLOR").is_none()
}

/// `PATH`, searched for `python3` when looking for an installed `kernels`
/// package ([`crate::lock::profile::installed_kernels`]).
pub fn path_var() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

/// Where the token came from, in words for messages (`HF_TOKEN`, the token
/// file, an OIDC exchange); `None` without a token.
fn token_origin(token: Option<&str>, source: &kernels_hub::TokenSource) -> Option<String> {
    use kernels_hub::TokenSource;
    match source {
        TokenSource::Oidc { .. } => Some("an OIDC exchange (HF_OIDC_RESOURCE)".to_owned()),
        TokenSource::StoredFile { token_path, .. } => {
            token.map(|_| format!("the token file {}", token_path.display()))
        }
        TokenSource::Given => token.map(|_| {
            if var("HF_TOKEN").is_some() {
                "HF_TOKEN".to_owned()
            } else {
                "HUGGING_FACE_HUB_TOKEN".to_owned()
            }
        }),
    }
}

/// A token as huggingface_hub 2.4 reads it from `HF_TOKEN` or a token file:
/// every CR and LF removed (a file saved on Windows, a `.env` line), then
/// surrounding whitespace; `None` when nothing is left. Other characters that
/// cannot be sent are refused when the client is built
/// (`kernels_hub::HubError::InvalidToken`, naming the source).
fn clean_token(token: &str) -> Option<String> {
    Some(token.replace(['\r', '\n'], "").trim().to_owned()).filter(|t| !t.is_empty())
}

/// The token and its source, in huggingface_hub 2.4's order: OIDC
/// (`HF_OIDC_RESOURCE`), `HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, then the token
/// file (`HF_TOKEN_PATH`, else `$HF_HOME/token`), which may be refreshed from
/// `stored_tokens`; nothing when `HF_HUB_DISABLE_IMPLICIT_TOKEN` is set.
fn token_from_env(hf_home: &Path) -> (Option<String>, kernels_hub::TokenSource) {
    use kernels_hub::TokenSource;
    if flag("HF_HUB_DISABLE_IMPLICIT_TOKEN") {
        return (None, TokenSource::Given);
    }
    if let Some(resource) = var("HF_OIDC_RESOURCE") {
        let github = (var("GITHUB_ACTIONS").as_deref() == Some("true"))
            .then(|| {
                Some((
                    var("ACTIONS_ID_TOKEN_REQUEST_URL")?,
                    var("ACTIONS_ID_TOKEN_REQUEST_TOKEN")?,
                ))
            })
            .flatten();
        let source = TokenSource::Oidc {
            resource,
            id_token: var("HF_OIDC_ID_TOKEN"),
            github,
        };
        return (None, source);
    }
    if let Some(token) = var("HF_TOKEN")
        .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
        .and_then(|t| clean_token(&t))
    {
        return (Some(token), TokenSource::Given);
    }
    let token_path = var("HF_TOKEN_PATH")
        .map(|v| expand_path(&v))
        .unwrap_or_else(|| hf_home.join("token"));
    let token = fs_err::read_to_string(&token_path)
        .ok()
        .and_then(|t| clean_token(&t));
    let source = TokenSource::StoredFile {
        token_path,
        client_id: var("HF_DEVICE_CODE_OAUTH_CLIENT_ID")
            .unwrap_or_else(|| DEVICE_CODE_OAUTH_CLIENT_ID.to_owned()),
    };
    (token, source)
}

/// CA files and proxies. Certificates named by any of the CA variables are
/// trusted in addition to the built-in and system roots; a proxy variable is
/// read upper-case first, as curl and reqwest do.
fn network_from_env() -> kernels_hub::NetworkConfig {
    let either = |upper: &str, lower: &str| var(upper).or_else(|| var(lower));
    kernels_hub::NetworkConfig {
        system_roots: true,
        extra_roots: [
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
        ]
        .iter()
        .filter_map(|name| var(name))
        .map(|v| expand_path(&v))
        .collect(),
        https_proxy: either("HTTPS_PROXY", "https_proxy"),
        http_proxy: either("HTTP_PROXY", "http_proxy"),
        all_proxy: either("ALL_PROXY", "all_proxy"),
        no_proxy: either("NO_PROXY", "no_proxy"),
    }
}

/// A URL setting of the environment that cannot be used: the variable, its
/// value with its secrets redacted ([`redact_url`]), what is wrong and the
/// value to set instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
#[error("{variable}={value} cannot be used: {problem}")]
#[diagnostic(code(kernels::settings::bad_url), help("{fix}"))]
pub struct BadUrlSetting {
    /// The environment variable.
    pub variable: &'static str,
    /// Its value, secrets redacted.
    pub value: String,
    /// What is wrong with it.
    pub problem: String,
    /// What to set instead.
    pub fix: String,
}

/// Which rules a URL setting follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UrlKind {
    /// `HF_ENDPOINT`: `http` or `https` (a user info is a mirror's basic
    /// authentication).
    Endpoint,
    /// A proxy: `http` or `https` (this build has no SOCKS support); a value
    /// without a scheme is `http://` (as curl and Python's `requests` read
    /// it), and `user:password@` is how a proxy takes credentials.
    Proxy,
}

/// `value` as messages show it: the password of its user info as `***` (a
/// user name alone too) and a signed query as `?…`, by the one redaction rule
/// of messages ([`kernels_types::text::redact`]); a value without a scheme is
/// redacted as if it had `http://`.
fn redact_url(value: &str) -> String {
    if value.contains("://") {
        return kernels_types::text::safe(value);
    }
    let shown = kernels_types::text::safe(&format!("http://{value}"));
    shown
        .strip_prefix("http://")
        .map_or_else(|| shown.clone(), str::to_owned)
}

/// The authority of `url` (after `scheme://`, up to the path, query or
/// fragment) and whether a user info with an unencoded `/`, `?` or `#` ends
/// it early (`u:pa/ss@host`: the authority reads `u:pa`, a `user:password`
/// whose "port" is no number, and an `@` follows).
fn authority(url: &str) -> (&str, bool) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let broken = !authority.contains('@')
        && rest[end..].contains('@')
        && authority
            .split_once(':')
            .is_some_and(|(_, after)| !after.bytes().all(|b| b.is_ascii_digit()));
    (authority, broken)
}

/// The port text of an `authority`, when it has one.
fn port_text(authority: &str) -> Option<&str> {
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.rsplit_once(']').map_or(host, |(_, after)| after);
    host.rsplit_once(':').map(|(_, port)| port)
}

/// Checks the URL setting `variable` = `value` of `kind` and returns the URL
/// to use (a scheme-less proxy gains `http://`).
///
/// # Errors
/// No scheme (`HF_ENDPOINT`), another scheme than `kind` reads, a user info
/// with an unencoded `/`, `?` or `#`, a port that is not 1 to 65535, no
/// host, or text that is no URL at all: [`BadUrlSetting`], naming the
/// variable and the fix. A well-formed user info is basic authentication (a
/// mirror's, a proxy's) and is accepted; messages never show its password.
fn check_url(variable: &'static str, value: &str, kind: UrlKind) -> Result<String, BadUrlSetting> {
    let shown = redact_url(value);
    let bad = |problem: String, fix: String| BadUrlSetting {
        variable,
        value: shown.clone(),
        problem,
        fix,
    };
    let schemes: &[&str] = match kind {
        UrlKind::Endpoint => &["http", "https"],
        UrlKind::Proxy => &["http", "https"],
    };
    let url = match value.split_once("://") {
        None if kind == UrlKind::Proxy => format!("http://{value}"),
        None => {
            let local = ["127.", "localhost", "[::1]", "0.0.0.0"]
                .iter()
                .any(|p| value.starts_with(p));
            let scheme = if local { "http" } else { "https" };
            return Err(bad(
                "it has no scheme".to_owned(),
                format!("set {variable}={scheme}://{shown}"),
            ));
        }
        Some((scheme, _)) if !schemes.contains(&scheme.to_ascii_lowercase().as_str()) => {
            return Err(bad(
                format!("the scheme `{scheme}` is not {}", schemes.join(", ")),
                format!("set {variable} to a URL starting with {}://", schemes[0]),
            ));
        }
        Some(_) => value.to_owned(),
    };
    let example = match kind {
        UrlKind::Endpoint => "https://huggingface.co",
        UrlKind::Proxy => "http://proxy.example:3128",
    };
    let (authority, broken) = authority(&url);
    if broken {
        let token = match kind {
            UrlKind::Endpoint => ", or give the token in HF_TOKEN",
            UrlKind::Proxy => "",
        };
        return Err(bad(
            "its user name or password holds an unencoded `/`, `?` or `#`".to_owned(),
            format!(
                "percent-encode them in {variable} (`/` as %2F, `?` as %3F, `#` as %23){token}"
            ),
        ));
    }
    if let Some(port) = port_text(authority).filter(|p| !p.is_empty())
        && !port.parse::<u16>().is_ok_and(|p| p > 0)
    {
        return Err(bad(
            format!("the port `{port}` is not a number from 1 to 65535"),
            format!(
                "set {variable}={} with the port of the server",
                redact_url(&url).replacen(&format!(":{port}"), ":PORT", 1)
            ),
        ));
    }
    let parsed = url::Url::parse(&url).map_err(|err| {
        bad(
            format!("it is not a URL ({err})"),
            format!("set {variable} to a URL such as {example}"),
        )
    })?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad(
            "it names no host".to_owned(),
            format!("set {variable} to a URL such as {example}"),
        ));
    }
    Ok(url)
}

/// huggingface_hub's default OAuth client id for `hf auth login`.
const DEVICE_CODE_OAUTH_CLIENT_ID: &str = "26be6b09-91c5-47da-9861-d2d2bb7a7e36";

fn flag(name: &str) -> bool {
    var(name).is_some_and(|v| is_truthy(&v))
}

/// Lock-state switches from the environment (uv's meanings); the CLI's `--locked`
/// and `--frozen` flags add to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockFlags {
    /// `KERNELS_LOCKED` is truthy: fail when `kernels.lock` is missing or would change.
    pub locked: bool,
    /// `KERNELS_FROZEN` is truthy: use `kernels.lock` as it is, without a freshness check.
    pub frozen: bool,
}

impl LockFlags {
    /// Reads `KERNELS_LOCKED` and `KERNELS_FROZEN`.
    pub fn from_env() -> Self {
        LockFlags {
            locked: flag("KERNELS_LOCKED"),
            frozen: flag("KERNELS_FROZEN"),
        }
    }
}

/// The hub cache and the variable that chose it: `KERNELS_CACHE` (else the
/// deprecated `HF_KERNELS_CACHE`, with a note in `notes`), else `HF_HUB_CACHE`,
/// else `HUGGINGFACE_HUB_CACHE`, else `hf_home/hub`.
fn cache_dir_from_env(hf_home: &Path, notes: &mut Vec<String>) -> (PathBuf, &'static str) {
    let legacy_cache = var("KERNELS_CACHE")
        .is_none()
        .then(|| var("HF_KERNELS_CACHE"))
        .flatten();
    if legacy_cache.is_some() {
        notes.push(
            "HF_KERNELS_CACHE is deprecated and will be removed; set KERNELS_CACHE instead"
                .to_owned(),
        );
    }
    let chosen = var("KERNELS_CACHE")
        .map(|v| (v, "KERNELS_CACHE"))
        .or(legacy_cache.map(|v| (v, "HF_KERNELS_CACHE")))
        .or_else(|| var("HF_HUB_CACHE").map(|v| (v, "HF_HUB_CACHE")))
        .or_else(|| var("HUGGINGFACE_HUB_CACHE").map(|v| (v, "HUGGINGFACE_HUB_CACHE")));
    match chosen {
        Some((value, name)) => (expand_path(&value), name),
        None => {
            let source = if var("HF_HOME").is_some() {
                "HF_HOME"
            } else if var("XDG_CACHE_HOME").is_some() {
                "XDG_CACHE_HOME"
            } else {
                "default"
            };
            (hf_home.join("hub"), source)
        }
    }
}

impl Settings {
    /// These settings, offline as well when `offline` (`--offline` on top of
    /// `HF_HUB_OFFLINE`).
    pub fn offline_if(mut self, offline: bool) -> Settings {
        self.offline |= offline;
        self
    }

    /// The hub cache at [`Settings::cache_dir`] with [`Settings::cache_options`].
    pub fn cache(&self) -> kernels_cache::HubCache {
        kernels_cache::HubCache::with_options(&self.cache_dir, self.cache_options)
    }

    /// `path` for people: below the home directory as `~/…`.
    pub fn display_path(&self, path: &std::path::Path) -> String {
        match self
            .home
            .as_deref()
            .and_then(|home| path.strip_prefix(home).ok())
        {
            Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
            Some(rest) => format!("~/{}", rest.display()),
            None => path.display().to_string(),
        }
    }

    /// What the Hub client is bound to: endpoint, token, offline flag and the
    /// one retry and deadline policy of every request; its events are shown
    /// through `printer`.
    pub fn client_config(&self, printer: &super::printer::Printer) -> kernels_hub::ClientConfig {
        kernels_hub::ClientConfig {
            endpoint: self.endpoint.clone(),
            token: self.token.clone(),
            token_source: self.token_source.clone(),
            token_origin: self.token_origin.clone(),
            network: self.network.clone(),
            offline: self.offline,
            retry: self.retry_policy(),
            events: Some(printer.hub_events()),
        }
    }

    /// The retry budget and timeouts configured by the environment.
    pub fn retry_policy(&self) -> kernels_hub::RetryPolicy {
        kernels_hub::RetryPolicy {
            max_retries: self.max_retries,
            etag_timeout: self.etag_timeout,
            download_timeout: self.download_timeout,
            stall_timeout: self.stall_timeout,
            api_timeout: self.api_timeout,
            max_wait: self.max_rate_limit_wait,
        }
    }

    /// Checks every URL setting of the environment before a command runs:
    /// `HF_ENDPOINT` and the proxy variables (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, upper case first, then lower case, as
    /// [`Settings::network`] reads them). A scheme-less proxy is used as
    /// `http://…`.
    ///
    /// # Errors
    /// The first setting that cannot be used, naming it, its value (secrets
    /// redacted) and the value to set ([`BadUrlSetting`]).
    pub fn check_urls(&mut self) -> Result<(), BadUrlSetting> {
        if let Some(endpoint) = var("HF_ENDPOINT") {
            check_url(
                "HF_ENDPOINT",
                endpoint.trim_end_matches('/'),
                UrlKind::Endpoint,
            )?;
        }
        let proxies = [
            ("HTTPS_PROXY", "https_proxy", &mut self.network.https_proxy),
            ("HTTP_PROXY", "http_proxy", &mut self.network.http_proxy),
            ("ALL_PROXY", "all_proxy", &mut self.network.all_proxy),
        ];
        for (upper, lower, slot) in proxies {
            let Some(name) = [upper, lower].into_iter().find(|n| var(n).is_some()) else {
                continue;
            };
            if let Some(value) = slot.as_deref() {
                *slot = Some(check_url(name, value, UrlKind::Proxy)?);
            }
        }
        Ok(())
    }

    /// Reads the settings from the process environment.
    pub fn from_env() -> Self {
        let home = var("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        // `~` and `$VAR` are expanded where huggingface_hub expands them (HF_HOME,
        // its XDG default, HF_HUB_CACHE / HUGGINGFACE_HUB_CACHE, HF_TOKEN_PATH),
        // and in KERNELS_CACHE / HF_KERNELS_CACHE alike.
        let hf_home = var("HF_HOME").map(|v| expand_path(&v)).unwrap_or_else(|| {
            var("XDG_CACHE_HOME")
                .map(|v| expand_path(&v))
                .unwrap_or_else(|| home.join(".cache"))
                .join("huggingface")
        });
        let mut notes = Vec::new();
        let (cache_dir, cache_dir_source) = cache_dir_from_env(&hf_home, &mut notes);
        let (token, token_source) = token_from_env(&hf_home);
        let token_origin = token_origin(token.as_deref(), &token_source);
        let download_timeout = seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
        Settings {
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned())
                .trim_end_matches('/')
                .to_owned(),
            token,
            token_source,
            token_origin,
            network: network_from_env(),
            cache_dir,
            cache_dir_source,
            notes,
            cache_options: kernels_cache::CacheOptions {
                disable_symlinks: flag("HF_HUB_DISABLE_SYMLINKS"),
                assume_no_flock: flag("KERNELS_TEST_ASSUME_NO_FLOCK"),
                fail_symlinks: var("KERNELS_TEST_SYMLINK_ERRNO").and_then(|v| v.parse().ok()),
            },
            offline: flag("KERNELS_OFFLINE")
                || flag("HF_HUB_OFFLINE")
                || flag("TRANSFORMERS_OFFLINE"),
            etag_timeout: seconds("HF_HUB_ETAG_TIMEOUT", 10),
            download_timeout,
            api_timeout: seconds(
                "KERNELS_API_TIMEOUT",
                kernels_hub::retry::DEFAULT_API_TIMEOUT.as_secs(),
            ),
            max_rate_limit_wait: seconds(
                "KERNELS_MAX_RATE_LIMIT_WAIT",
                kernels_hub::retry::MAX_RETRY_AFTER.as_secs(),
            ),
            stall_timeout: var("KERNELS_STALL_TIMEOUT")
                .map_or(download_timeout, |_| seconds("KERNELS_STALL_TIMEOUT", 10)),
            max_retries: var("KERNELS_MAX_RETRIES")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_MAX_RETRIES),
            home: var("HOME").map(PathBuf::from),
            no_progress: flag("HF_HUB_DISABLE_PROGRESS_BARS"),
            runtime_overrides: runtime_overrides(),
            local_kernels: std::env::var("LOCAL_KERNELS").ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quoted names read by `var("X")`, `flag("X")`, `seconds("X", ..)`,
    /// `var_os("X")` and clap's `env = "X"` in `text`.
    fn names_read(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for opener in ["var(", "flag(", "seconds(", "var_os(", "env = "] {
            let mut rest = text;
            while let Some(i) = rest.find(opener) {
                // The name may follow on the next line (`seconds(\n "X", …)`).
                rest = rest[i + opener.len()..].trim_start();
                if let Some(quoted) = rest.strip_prefix('"') {
                    let end = quoted.find('"').unwrap_or(0);
                    out.push(quoted[..end].to_owned());
                }
            }
        }
        out
    }

    #[test]
    fn env_vars_lists_every_variable_the_cli_reads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
        let mut seen = 0;
        for entry in fs_err::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = fs_err::read_to_string(&path).unwrap();
            // This test's own string literals are not reads.
            let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            for name in names_read(text) {
                seen += 1;
                assert!(
                    ENV_VARS.contains(&name.as_str()),
                    "{} reads `{name}`, which is missing from settings::ENV_VARS",
                    path.display()
                );
            }
        }
        assert!(
            seen >= 20,
            "only {seen} reads found: has the reader changed shape?"
        );
    }

    #[test]
    fn env_vars_has_no_duplicates() {
        let mut names = ENV_VARS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENV_VARS.len());
    }

    #[test]
    fn durations_never_panic() {
        assert_eq!(parse_seconds("1e20"), Some(MAX_TIMEOUT));
        assert_eq!(parse_seconds("inf"), None);
        assert_eq!(parse_seconds("NaN"), None);
        assert_eq!(parse_seconds("-1"), None);
        assert_eq!(parse_seconds("0"), None);
        assert_eq!(parse_seconds(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_seconds("10"), Some(Duration::from_secs(10)));
    }

    #[test]
    fn expansion_follows_python() {
        // HOME is set for the test process; unknown variables stay as written.
        let home = std::env::var("HOME").unwrap();
        assert_eq!(expand_user("~"), home.trim_end_matches('/'));
        assert_eq!(
            expand_user("~/hf"),
            format!("{}/hf", home.trim_end_matches('/'))
        );
        assert_eq!(expand_user("~other/hf"), "~other/hf");
        assert_eq!(expand_user("a/~/b"), "a/~/b");
        assert_eq!(expand_vars("$HOME/x"), format!("{home}/x"));
        assert_eq!(expand_vars("${HOME}/x"), format!("{home}/x"));
        assert_eq!(
            expand_vars("/a/$KERNELS_SURELY_UNSET_VAR/b"),
            "/a/$KERNELS_SURELY_UNSET_VAR/b"
        );
        assert_eq!(expand_vars("cost$"), "cost$");
        assert_eq!(expand_vars("${unclosed"), "${unclosed");
    }

    #[test]
    fn url_settings_name_the_problem_and_the_fix() {
        let endpoint = |v: &str| check_url("HF_ENDPOINT", v, UrlKind::Endpoint);
        let err = endpoint("127.0.0.1:8080").unwrap_err();
        assert_eq!(err.problem, "it has no scheme");
        assert_eq!(err.fix, "set HF_ENDPOINT=http://127.0.0.1:8080");
        assert_eq!(
            endpoint("hf-mirror.example").unwrap_err().fix,
            "set HF_ENDPOINT=https://hf-mirror.example"
        );
        let err = endpoint("http://127.0.0.1:99999").unwrap_err();
        assert!(err.problem.contains("`99999`"), "{err:?}");
        assert_eq!(
            err.fix,
            "set HF_ENDPOINT=http://127.0.0.1:PORT with the port of the server"
        );
        let err = endpoint("http://u:s3/cr#e?t@127.0.0.1:1").unwrap_err();
        assert!(err.problem.contains("unencoded"), "{err:?}");
        assert!(!format!("{err} {}", err.fix).contains("s3"), "{err:?}");
        assert_eq!(err.value, "http://u:***@127.0.0.1:1");
        assert_eq!(
            endpoint("https://u:pw@hub.example/x").unwrap(),
            "https://u:pw@hub.example/x"
        );
        assert!(
            endpoint("ftp://hub.example")
                .unwrap_err()
                .problem
                .contains("`ftp`")
        );
        assert!(endpoint("http://").is_err());
        assert_eq!(endpoint("http://[::1]:8080").unwrap(), "http://[::1]:8080");
        assert_eq!(
            endpoint("https://huggingface.co").unwrap(),
            "https://huggingface.co"
        );

        let proxy = |v: &str| check_url("HTTPS_PROXY", v, UrlKind::Proxy);
        assert_eq!(proxy("proxy.corp:3128").unwrap(), "http://proxy.corp:3128");
        assert_eq!(
            proxy("http://user:s3cret@proxy:3128").unwrap(),
            "http://user:s3cret@proxy:3128"
        );
        let err = proxy("http://user:s3cret@proxy:0").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert!(!err.fix.contains("s3cret"), "{err:?}");
    }
}
