//! Process-wide settings resolved once from the environment.
//!
//! This is the only module that reads environment variables; everything else
//! receives a [`Settings`] value. Precedence rules follow `huggingface_hub`
//! (see `docs/` for the table).

use std::path::PathBuf;
use std::time::Duration;

/// Default Hub endpoint when `HF_ENDPOINT` is unset.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Retries after a transient failure when `KERNELS_MAX_RETRIES` is unset.
pub const DEFAULT_MAX_RETRIES: u32 = 5;

/// Every environment variable the CLI reads: [`Settings::from_env`],
/// [`LockFlags::from_env`], [`virtual_env`], [`color_enabled`], [`path_var`] and
/// the clap `env = ...` attributes of the command arguments. Test harnesses clear
/// exactly these for every spawned binary; a unit test below fails when this
/// module or `cli/` reads a name missing here.
pub const ENV_VARS: &[&str] = &[
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_TOKEN_PATH",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN",
    "HOME",
    "XDG_CACHE_HOME",
    "HF_HOME",
    "KERNELS_CACHE",
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "KERNELS_OFFLINE",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HUB_ETAG_TIMEOUT",
    "HF_HUB_DOWNLOAD_TIMEOUT",
    "KERNELS_STALL_TIMEOUT",
    "KERNELS_MAX_RETRIES",
    "KERNELS_LOCKED",
    "KERNELS_FROZEN",
    "VIRTUAL_ENV",
    "NO_COLOR",
    "PATH",
    "SOURCE_DATE_EPOCH",
    "HF_HUB_DISABLE_PROGRESS_BARS",
];

/// Settings shared by the network and cache commands.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Hub base URL without a trailing `/` (`HF_ENDPOINT`).
    pub endpoint: String,
    /// Bearer token (`HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, then the file at
    /// `HF_TOKEN_PATH` or `$HF_HOME/token`), unless `HF_HUB_DISABLE_IMPLICIT_TOKEN` is set.
    pub token: Option<String>,
    /// Hub cache root: `KERNELS_CACHE`, else `HF_HUB_CACHE`, else
    /// `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, where `HF_HOME` defaults to
    /// `$XDG_CACHE_HOME/huggingface` or `~/.cache/huggingface`.
    pub cache_dir: PathBuf,
    /// No request may be made: `KERNELS_OFFLINE`, `HF_HUB_OFFLINE` or
    /// `TRANSFORMERS_OFFLINE` is truthy (the CLI's `--offline` also sets it).
    pub offline: bool,
    /// Connect timeout for Hub requests: `HF_HUB_ETAG_TIMEOUT` seconds, default 10.
    pub etag_timeout: Duration,
    /// Read timeout (longest pause between received bytes) for Hub requests:
    /// `HF_HUB_DOWNLOAD_TIMEOUT` seconds, default 10.
    pub download_timeout: Duration,
    /// Stall watchdog of file downloads: a transfer that receives no body byte
    /// for this long is abandoned and retried (resuming with `Range`):
    /// `KERNELS_STALL_TIMEOUT` seconds, default the download timeout.
    pub stall_timeout: Duration,
    /// How often a failed request is retried after a transient failure
    /// (connection error, timeout, 408, 429, 500, 502, 503, 504):
    /// `KERNELS_MAX_RETRIES`, default 5; 0 disables retries.
    pub max_retries: u32,
    /// Where [`Settings::token`] came from (`HF_TOKEN`, …), for messages.
    pub token_source: Option<String>,
    /// The home directory (`HOME`), to print paths below it as `~/…`.
    pub home: Option<PathBuf>,
    /// `HF_HUB_DISABLE_PROGRESS_BARS` is truthy: plain lines even on a
    /// terminal (as `--no-progress`).
    pub no_progress: bool,
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
/// fall back to `default_secs`.
fn seconds(name: &str, default_secs: u64) -> Duration {
    var(name)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(Duration::from_secs(default_secs), Duration::from_secs_f64)
}

/// `VIRTUAL_ENV`: the active Python environment, whose interpreter detects torch
/// for `kernels download` (kept out of [`Settings`], which only the Hub commands need).
pub fn virtual_env() -> Option<PathBuf> {
    var("VIRTUAL_ENV").map(PathBuf::from)
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

impl Settings {
    /// A note for an error the Hub answered with "not found", "unauthorized" or
    /// "gated" (diagnostic `code`) while a token was sent: the token is set,
    /// and was rejected or lacks access; `None` otherwise.
    pub fn token_note(&self, code: &str) -> Option<String> {
        let source = self.token_source.as_ref()?;
        [
            "kernels::hub::repo_not_found",
            "kernels::hub::unauthorized",
            "kernels::hub::gated",
        ]
        .iter()
        .any(|c| code.contains(c))
        .then(|| {
            format!(
                "note: a token is set (from {source}) and was sent: the Hub rejected it, or its account has no access to this repository"
            )
        })
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
    /// one retry and deadline policy of every request.
    pub fn client_config(&self) -> kernels_hub::ClientConfig {
        kernels_hub::ClientConfig {
            endpoint: self.endpoint.clone(),
            token: self.token.clone(),
            offline: self.offline,
            retry: self.retry_policy(),
        }
    }

    /// The retry budget and timeouts configured by the environment.
    pub fn retry_policy(&self) -> kernels_hub::RetryPolicy {
        kernels_hub::RetryPolicy {
            max_retries: self.max_retries,
            etag_timeout: self.etag_timeout,
            download_timeout: self.download_timeout,
            stall_timeout: self.stall_timeout,
        }
    }

    /// Reads the settings from the process environment.
    pub fn from_env() -> Self {
        let home = var("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let hf_home = var("HF_HOME").map(PathBuf::from).unwrap_or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".cache"))
                .join("huggingface")
        });
        let cache_dir = var("KERNELS_CACHE")
            .or_else(|| var("HF_HUB_CACHE"))
            .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| hf_home.join("hub"));
        let (token, token_source) = if flag("HF_HUB_DISABLE_IMPLICIT_TOKEN") {
            (None, None)
        } else if let Some(token) = var("HF_TOKEN") {
            (Some(token), Some("HF_TOKEN".to_owned()))
        } else if let Some(token) = var("HUGGING_FACE_HUB_TOKEN") {
            (Some(token), Some("HUGGING_FACE_HUB_TOKEN".to_owned()))
        } else {
            let path = var("HF_TOKEN_PATH")
                .map(PathBuf::from)
                .unwrap_or_else(|| hf_home.join("token"));
            let token = std::fs::read_to_string(&path)
                .ok()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty());
            let source = token
                .as_ref()
                .map(|_| format!("the token file {}", path.display()));
            (token, source)
        };
        let download_timeout = seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
        Settings {
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned())
                .trim_end_matches('/')
                .to_owned(),
            token,
            token_source,
            cache_dir,
            offline: flag("KERNELS_OFFLINE")
                || flag("HF_HUB_OFFLINE")
                || flag("TRANSFORMERS_OFFLINE"),
            etag_timeout: seconds("HF_HUB_ETAG_TIMEOUT", 10),
            download_timeout,
            stall_timeout: var("KERNELS_STALL_TIMEOUT")
                .map_or(download_timeout, |_| seconds("KERNELS_STALL_TIMEOUT", 10)),
            max_retries: var("KERNELS_MAX_RETRIES")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_MAX_RETRIES),
            home: var("HOME").map(PathBuf::from),
            no_progress: flag("HF_HUB_DISABLE_PROGRESS_BARS"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ENV_VARS;

    /// The quoted names read by `var("X")`, `flag("X")`, `seconds("X", ..)`,
    /// `var_os("X")` and clap's `env = "X"` in `text`.
    fn names_read(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for opener in ["var(\"", "flag(\"", "seconds(\"", "var_os(\"", "env = \""] {
            let mut rest = text;
            while let Some(i) = rest.find(opener) {
                rest = &rest[i + opener.len()..];
                let end = rest.find('"').unwrap_or(0);
                out.push(rest[..end].to_owned());
            }
        }
        out
    }

    #[test]
    fn env_vars_lists_every_variable_the_cli_reads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
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
}
