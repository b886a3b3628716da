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
    /// The hub cache at [`Settings::cache_dir`] with [`Settings::cache_options`].
    pub fn cache(&self) -> kernels_cache::HubCache {
        kernels_cache::HubCache::with_options(&self.cache_dir, self.cache_options)
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
        let (cache_dir, cache_dir_source) =
            ["KERNELS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"]
                .into_iter()
                .find_map(|name| var(name).map(|v| (PathBuf::from(v), name)))
                .unwrap_or_else(|| {
                    let source = if var("HF_HOME").is_some() {
                        "HF_HOME"
                    } else if var("XDG_CACHE_HOME").is_some() {
                        "XDG_CACHE_HOME"
                    } else {
                        "default"
                    };
                    (hf_home.join("hub"), source)
                });
        let token = if flag("HF_HUB_DISABLE_IMPLICIT_TOKEN") {
            None
        } else {
            var("HF_TOKEN")
                .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
                .or_else(|| {
                    let path = var("HF_TOKEN_PATH")
                        .map(PathBuf::from)
                        .unwrap_or_else(|| hf_home.join("token"));
                    std::fs::read_to_string(path)
                        .ok()
                        .map(|t| t.trim().to_owned())
                        .filter(|t| !t.is_empty())
                })
        };
        let download_timeout = seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
        Settings {
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned())
                .trim_end_matches('/')
                .to_owned(),
            token,
            cache_dir,
            cache_dir_source,
            cache_options: kernels_cache::CacheOptions {
                disable_symlinks: flag("HF_HUB_DISABLE_SYMLINKS"),
                assume_no_flock: flag("KERNELS_TEST_ASSUME_NO_FLOCK"),
            },
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
        }
    }
}
