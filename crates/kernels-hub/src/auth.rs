//! Where the bearer token comes from beyond a fixed string, as huggingface_hub
//! 2.4 does it (facts from `utils/_auth.py`, `utils/_oauth_device.py`, `_oidc.py`):
//!
//! * **Browser-login OAuth tokens** ([`TokenSource::StoredFile`]): `hf auth
//!   login` keeps, next to the token file, an INI file `stored_tokens` whose
//!   sections (one per token name) hold `hf_token` and, for OAuth logins,
//!   `refresh_token` and `expires_at` (Unix seconds). When the active token is
//!   one of them and less than a day is left, it is exchanged at
//!   `POST {endpoint}/oauth/token` (`grant_type=refresh_token`, `refresh_token`,
//!   `client_id`) under an exclusive `flock` of `stored_tokens.lock` (Python's
//!   `filelock`), re-reading the file under the lock so that a refresh made by
//!   another process is adopted rather than repeated (the server may rotate
//!   refresh tokens). The section is rewritten (`hf_token`, `refresh_token`,
//!   `expires_at`), sections sorted by name, in configparser's layout; the token
//!   file is updated when it still holds the old token. Both files are written
//!   owner-only. Failure is not fatal: the old token is used and a warning logged.
//! * **OIDC** ([`TokenSource::Oidc`], Trusted Publishers in CI): an id token
//!   (given, or minted from GitHub Actions' `ACTIONS_ID_TOKEN_REQUEST_URL` with
//!   the Hub endpoint as audience) is exchanged (RFC 8693) at the same
//!   `/oauth/token` for a short-lived Hub token scoped to `resource`. Opting in
//!   is explicit, so a failure is an error.
//!
//! Paths and values are given by the caller; nothing here reads the environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::HubError;

/// Refresh when less than this much validity is left (huggingface_hub: one day).
pub const REFRESH_MARGIN_SECS: i64 = 24 * 3600;

/// How long to wait for another process holding `stored_tokens.lock`.
const LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// How the token of a [`crate::ClientConfig`] is obtained or kept fresh.
#[derive(Debug, Clone, Default)]
pub enum TokenSource {
    /// `ClientConfig::token` as given (an environment variable, or none).
    #[default]
    Given,
    /// `ClientConfig::token` was read from `token_path`: refresh it from the
    /// `stored_tokens` file beside it when it is an OAuth token close to expiry.
    StoredFile {
        /// The active token file (`HF_TOKEN_PATH`, else `$HF_HOME/token`).
        token_path: PathBuf,
        /// OAuth client id sent with the refresh (`HF_DEVICE_CODE_OAUTH_CLIENT_ID`).
        client_id: String,
    },
    /// Exchange a CI id token for a Hub token scoped to `resource`.
    Oidc {
        /// `HF_OIDC_RESOURCE`: a repo (`kernels/owner/name`, …) or a user name.
        resource: String,
        /// `HF_OIDC_ID_TOKEN`, when the CI minted one.
        id_token: Option<String>,
        /// GitHub Actions' id-token request URL and bearer, when running there.
        github: Option<(String, String)>,
    },
}

/// The `stored_tokens` file beside `token_path`.
pub fn stored_tokens_path(token_path: &Path) -> PathBuf {
    token_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("stored_tokens")
}

/// A parsed `stored_tokens` INI file: sections in file order, fields in order.
type Sections = Vec<(String, Vec<(String, String)>)>;

/// Parses configparser's INI subset used by `stored_tokens` (`[section]`,
/// `key = value` or `key: value`, `#`/`;` comment lines; keys lowercased).
pub fn parse_stored_tokens(text: &str) -> Sections {
    let mut sections: Sections = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            sections.push((name.to_owned(), Vec::new()));
            continue;
        }
        let Some((_, fields)) = sections.last_mut() else {
            continue;
        };
        let split = match (trimmed.find('='), trimmed.find(':')) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = split {
            let key = trimmed[..at].trim().to_lowercase();
            let value = trimmed[at + 1..].trim().to_owned();
            fields.retain(|(k, _)| *k != key);
            fields.push((key, value));
        }
    }
    sections
}

/// Writes sections the way configparser does, sorted by name as
/// huggingface_hub saves them.
pub fn format_stored_tokens(sections: &Sections) -> String {
    let sorted: BTreeMap<&str, &Vec<(String, String)>> =
        sections.iter().map(|(n, f)| (n.as_str(), f)).collect();
    let mut out = String::new();
    for (name, fields) in sorted {
        out.push_str(&format!("[{name}]\n"));
        for (key, value) in fields {
            out.push_str(&format!("{key} = {value}\n"));
        }
        out.push('\n');
    }
    out
}

fn field<'a>(fields: &'a [(String, String)], key: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn clean(token: &str) -> Option<String> {
    let token = token.replace(['\r', '\n'], "");
    let token = token.trim();
    (!token.is_empty()).then(|| token.to_owned())
}

fn read_sections(path: &Path) -> Sections {
    fs_err::read_to_string(path)
        .map(|t| parse_stored_tokens(&t))
        .unwrap_or_default()
}

/// Writes `content` owner-only (`0600`, the folder `0700`), like huggingface_hub.
fn write_secret(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(content.as_bytes())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        if let Some(parent) = path.parent() {
            let _ = fs_err::set_permissions(parent, std::fs::Permissions::from_mode(0o700));
        }
    }
    Ok(())
}

/// The exclusive lock Python's `filelock` takes on `stored_tokens.lock`.
struct TokensLock {
    _file: fs_err::File,
}

impl TokensLock {
    async fn acquire(path: &Path) -> std::io::Result<TokensLock> {
        let mut options = fs_err::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use fs_err::os::unix::fs::OpenOptionsExt;
            options.mode(0o664);
        }
        let file = options.open(path)?;
        let start = std::time::Instant::now();
        loop {
            #[cfg(unix)]
            let locked =
                rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
            #[cfg(not(unix))]
            let locked: Result<(), std::io::Error> = Ok(());
            match locked {
                Ok(()) => return Ok(TokensLock { _file: file }),
                Err(_) if start.elapsed() < LOCK_TIMEOUT => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(err) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("{} is held by another process: {err}", path.display()),
                    ));
                }
            }
        }
    }
}

/// A `/oauth/token` answer.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenResponse {
    pub access_token: String,
    #[serde(default)]
    pub expires_in: Option<i64>,
    #[serde(default)]
    pub refresh_token: Option<String>,
}

/// Refreshes `token` (read from `token_path`) when `stored_tokens` says it is an
/// OAuth token with less than a day left. Returns the token to use.
pub(crate) async fn refresh_stored<F, Fut>(
    token: &str,
    token_path: &Path,
    now: i64,
    exchange: F,
) -> Result<String, String>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<TokenResponse, String>>,
{
    let stored = stored_tokens_path(token_path);
    let sections = read_sections(&stored);
    let Some((name, fields)) = sections
        .iter()
        .find(|(_, f)| field(f, "hf_token") == Some(token))
    else {
        return Ok(token.to_owned());
    };
    let (Some(refresh_token), Some(expires_at)) = (
        field(fields, "refresh_token"),
        field(fields, "expires_at").and_then(|v| v.parse::<i64>().ok()),
    ) else {
        return Ok(token.to_owned());
    };
    if expires_at - REFRESH_MARGIN_SECS > now {
        return Ok(token.to_owned());
    }
    let name = name.clone();
    let refresh_token = refresh_token.to_owned();
    let lock_path = PathBuf::from(format!("{}.lock", stored.display()));
    let _lock = TokensLock::acquire(&lock_path)
        .await
        .map_err(|err| err.to_string())?;
    // Re-read under the lock: another process may have refreshed meanwhile.
    let mut sections = read_sections(&stored);
    let current = sections
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, f)| field(f, "hf_token"))
        .map(str::to_owned);
    if let Some(current) = current
        && current != token
    {
        return Ok(current);
    }
    let response = exchange(refresh_token.clone()).await?;
    let mut fields = vec![("hf_token".to_owned(), response.access_token.clone())];
    fields.push((
        "refresh_token".to_owned(),
        response
            .refresh_token
            .filter(|t| !t.is_empty())
            .unwrap_or(refresh_token),
    ));
    if let Some(expires_in) = response.expires_in {
        fields.push(("expires_at".to_owned(), (now + expires_in).to_string()));
    }
    match sections.iter_mut().find(|(n, _)| *n == name) {
        Some((_, old)) => *old = fields,
        None => sections.push((name, fields)),
    }
    write_secret(&stored, &format_stored_tokens(&sections)).map_err(|err| err.to_string())?;
    let file_token = fs_err::read_to_string(token_path)
        .ok()
        .and_then(|t| clean(&t));
    if file_token.as_deref() == Some(token) {
        write_secret(token_path, &response.access_token).map_err(|err| err.to_string())?;
    }
    Ok(response.access_token)
}

/// An OIDC failure as a [`HubError`].
pub(crate) fn oidc_error(url: &str, detail: impl Into<String>) -> HubError {
    HubError::InvalidResponse {
        url: url.to_owned(),
        detail: format!(
            "OIDC token exchange (HF_OIDC_RESOURCE) failed: {}",
            detail.into()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_tokens_round_trip_in_configparser_layout() {
        let text = "[zeta]\nhf_token = hf_z\n\n[alpha]\nhf_token = hf_a\nrefresh_token = r\nexpires_at = 12\n\n";
        let sections = parse_stored_tokens(text);
        assert_eq!(sections.len(), 2);
        assert_eq!(
            format_stored_tokens(&sections),
            "[alpha]\nhf_token = hf_a\nrefresh_token = r\nexpires_at = 12\n\n[zeta]\nhf_token = hf_z\n\n"
        );
        let colon = parse_stored_tokens("[a]\nHF_TOKEN: x\n; comment\n");
        assert_eq!(colon[0].1, vec![("hf_token".to_owned(), "x".to_owned())]);
    }
}
