//! Errors of the Hub HTTP client.
//!
//! The Hub reports the kind of failure in the `X-Error-Code` response header
//! (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`, `GatedRepo`), a human
//! message in `X-Error-Message` or a JSON body (`{"error": ...}`), and a request id
//! in `X-Request-Id`. [`HubError`] keeps all of them; the bearer token is never part
//! of any message.

use std::fmt;

use reqwest::header::HeaderMap;

use kernels_types::RepoId;
use kernels_types::RepoType;
use kernels_types::text::safe;

/// What a request was about; used to phrase error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Repository type the request addressed.
    pub repo_type: RepoType,
    /// Repository id.
    pub repo_id: RepoId,
    /// Revision (branch, tag or commit), when the request named one.
    pub revision: Option<String>,
    /// Repo-relative path, when the request named one.
    pub path: Option<String>,
}

impl Target {
    /// A target naming only a repository.
    pub fn repo(repo_type: RepoType, repo_id: &RepoId) -> Self {
        Target {
            repo_type,
            repo_id: repo_id.clone(),
            revision: None,
            path: None,
        }
    }

    /// Adds a revision.
    pub fn at(mut self, revision: &str) -> Self {
        self.revision = Some(revision.to_owned());
        self
    }

    /// Adds a repo-relative path.
    pub fn path(mut self, path: &str) -> Self {
        self.path = Some(path.to_owned());
        self
    }

    fn revision_str(&self) -> &str {
        self.revision.as_deref().unwrap_or("main")
    }
}

/// The parts of a failed HTTP response worth reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    /// Requested URL (never contains credentials).
    pub url: String,
    /// HTTP status code.
    pub status: u16,
    /// `X-Error-Code` header.
    pub code: Option<String>,
    /// `X-Error-Message` header, else the JSON body's `error`/`errors`/`error_description`,
    /// else a short plain-text body.
    pub message: Option<String>,
    /// `X-Request-Id` header (or `X-Amz-Cf-Id`), for support requests.
    pub request_id: Option<String>,
    /// Seconds to wait before trying again: `t + 1` of a `RateLimit` header with
    /// `r=0` (preferred, as huggingface_hub 2.4 does), else `Retry-After`.
    pub retry_after: Option<u64>,
    /// The `RateLimit` / `RateLimit-Policy` headers, if sent.
    pub rate_limit: Option<crate::ratelimit::RateLimit>,
    /// The request carried no token (none configured, or not sent to that origin).
    pub anonymous: bool,
    /// For a repository not found: a repository of the same owner with a
    /// similar name, when the Hub could list the owner's repositories.
    pub suggestion: Option<String>,
    /// Where the token sent with the request came from (`HF_TOKEN`, a token
    /// file, …; never the token), for the advice of an access failure; `None`
    /// when the request carried no token.
    pub token_sent: Option<String>,
}

impl ErrorResponse {
    /// Collects status, headers and body of a failed response.
    pub(crate) fn new(url: &str, status: u16, headers: &HeaderMap, body: &[u8]) -> Self {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let message = header("x-error-message").or_else(|| body_message(body));
        let rate_limit = crate::ratelimit::RateLimit::from_headers(headers);
        ErrorResponse {
            url: url.to_owned(),
            status,
            code: header("x-error-code"),
            message,
            request_id: header("x-request-id").or_else(|| header("x-amz-cf-id")),
            retry_after: rate_limit
                .as_ref()
                .and_then(|r| r.wait())
                .map(|w| w.as_secs())
                .or_else(|| header("retry-after").and_then(|v| v.parse().ok())),
            rate_limit,
            anonymous: false,
            suggestion: None,
            token_sent: None,
        }
    }
}

/// Extracts a message from a JSON error body, or returns a short non-HTML text body.
fn body_message(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
        let as_text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(items) => Some(
                items
                    .iter()
                    .map(|i| match i {
                        serde_json::Value::String(s) => s.clone(),
                        other => other
                            .get("message")
                            .and_then(|m| m.as_str())
                            .map_or_else(|| other.to_string(), str::to_owned),
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        };
        return json
            .get("error")
            .and_then(as_text)
            .or_else(|| json.get("errors").and_then(as_text))
            .or_else(|| json.get("error_description").and_then(as_text));
    }
    if text.starts_with('<') || text.len() > 500 {
        return None;
    }
    Some(text.to_owned())
}

/// Server-supplied text is shown escaped (control characters visible, never
/// executed) and signed URLs lose their query ([`kernels_types::text::safe`]).
impl fmt::Display for ErrorResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {} from {}", self.status, safe(&self.url))?;
        if let Some(code) = &self.code {
            write!(f, " ({})", safe(code))?;
        }
        if let Some(message) = &self.message {
            write!(f, ": {}", safe(message))?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request id {}]", safe(id))?;
        }
        Ok(())
    }
}

/// A failed Hub request.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum HubError {
    /// Offline mode is on; no connection was attempted.
    #[error("cannot reach {}: offline mode is enabled (HF_HUB_OFFLINE)", safe(url))]
    #[diagnostic(
        code(kernels::hub::offline),
        help("unset HF_HUB_OFFLINE (and TRANSFORMERS_OFFLINE) to allow network access")
    )]
    Offline {
        /// URL that would have been requested.
        url: String,
    },

    /// The configured token cannot be sent in an HTTP header: it holds a
    /// control character (other than the CR/LF that are removed when it is
    /// read). A user error: the token is never
    /// shown, only where it came from.
    #[error(
        "the Hub token from {origin} contains a control character, which cannot be sent in an HTTP header"
    )]
    #[diagnostic(
        code(kernels::hub::invalid_token),
        help(
            "make {origin} hold exactly the token the Hub shows (https://huggingface.co/settings/tokens), without quotes or other characters around it"
        )
    )]
    InvalidToken {
        /// Where the token came from (`HF_TOKEN`, `the token file <path>`, …).
        origin: String,
    },

    /// The repository does not exist for this repo type, or is private.
    #[error("{} repository `{}` was not found{}: {response}", target.repo_type.as_str(), target.repo_id, response.suggestion.as_deref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    #[diagnostic(
        code(kernels::hub::repo_not_found),
        help("{}", access_help(Access::NotFound, response))
    )]
    RepoNotFound {
        /// What was asked.
        target: Target,
        /// The server's answer (with the "did you mean" suggestion, if any).
        response: Box<ErrorResponse>,
    },

    /// The revision (branch, tag or commit) does not exist in the repository.
    #[error("revision `{}` does not exist in {} repository `{}`: {response}", target.revision_str(), target.repo_type.as_str(), target.repo_id)]
    #[diagnostic(
        code(kernels::hub::revision_not_found),
        help("use an existing branch, tag or full commit id of the repository")
    )]
    RevisionNotFound {
        /// What was asked.
        target: Target,
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// The path does not exist at that revision.
    #[error("`{}` does not exist at revision `{}` of {} repository `{}`: {response}", target.path.as_deref().unwrap_or(""), target.revision_str(), target.repo_type.as_str(), target.repo_id)]
    #[diagnostic(code(kernels::hub::entry_not_found))]
    EntryNotFound {
        /// What was asked.
        target: Target,
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// The repository is gated and this token has no access.
    #[error("{} repository `{}` is gated: {response}", target.repo_type.as_str(), target.repo_id)]
    #[diagnostic(
        code(kernels::hub::gated),
        help("{}", access_help(Access::Gated, response))
    )]
    Gated {
        /// What was asked.
        target: Target,
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// 401 without a more specific code: missing or invalid token.
    #[error("authentication failed: {response}")]
    #[diagnostic(
        code(kernels::hub::unauthorized),
        help("{}", access_help(Access::Unauthorized, response))
    )]
    Unauthorized {
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// 403 without a more specific code.
    #[error("access denied: {response}")]
    #[diagnostic(
        code(kernels::hub::forbidden),
        help("{}", access_help(Access::Forbidden, response))
    )]
    Forbidden {
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// 401 or 403 from a server the Hub redirected to (a CDN, a storage
    /// bucket), which never gets the token: an expired or foreign signed
    /// URL, or a proxy's policy.
    #[error("the download server refused the request: {response}")]
    #[diagnostic(
        code(kernels::hub::refused),
        help(
            "the Hub redirected there and no token is sent to that server, so the token is not the cause: the signed download URL was refused (expired, or rewritten by a proxy) even after a fresh one was asked for; check the machine's clock and any proxy in between, then run the command again"
        )
    )]
    Refused {
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// A 5xx answer.
    #[error("the Hub server failed: {response}")]
    #[diagnostic(
        code(kernels::hub::server),
        help("this is a server-side problem; retry later")
    )]
    Server {
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// Any other unsuccessful status.
    #[error("request failed: {response}")]
    #[diagnostic(code(kernels::hub::status))]
    Status {
        /// The server's answer.
        response: Box<ErrorResponse>,
    },

    /// Connection, TLS, timeout or body transfer failure.
    #[error("cannot reach {}: {}", safe(url), safe(&source.to_string()))]
    #[diagnostic(
        code(kernels::hub::transport),
        help(
            "check HF_ENDPOINT and the network; timeouts are set with HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds)"
        )
    )]
    Transport {
        /// Requested URL.
        url: String,
        /// The underlying error.
        #[source]
        source: crate::TransportError,
    },

    /// The server's TLS certificate is not trusted (or invalid).
    #[error("cannot reach {}: the server's TLS certificate was refused: {}", safe(url), safe(&source.to_string()))]
    #[diagnostic(
        code(kernels::hub::certificate),
        help(
            "behind a corporate proxy or with a private CA, point SSL_CERT_FILE (or SSL_CERT_DIR, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) at a PEM file with that CA; the system CA bundle is trusted already"
        )
    )]
    Certificate {
        /// Requested URL.
        url: String,
        /// The underlying error.
        #[source]
        source: crate::TransportError,
    },

    /// The connection to the configured proxy failed (`HTTPS_PROXY`, …).
    #[error("cannot reach {} through the proxy {proxy}: {}", safe(url), safe(&source.to_string()))]
    #[diagnostic(
        code(kernels::hub::proxy),
        help(
            "check the proxy settings (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY, or their lower-case forms) and that the proxy is running"
        )
    )]
    Proxy {
        /// Requested URL.
        url: String,
        /// The proxy, without credentials.
        proxy: String,
        /// The underlying error.
        #[source]
        source: crate::TransportError,
    },

    /// No answer, or no body bytes, within a configured time.
    #[error("{}: {what} within {seconds} s", safe(url))]
    #[diagnostic(
        code(kernels::hub::timeout),
        help("the server or network is slow; raise {setting} (seconds) to wait longer")
    )]
    Timeout {
        /// Requested URL.
        url: String,
        /// What did not happen, e.g. `no response headers`.
        what: &'static str,
        /// The limit that expired, in seconds.
        seconds: f64,
        /// The environment variable that sets the limit.
        setting: &'static str,
    },

    /// A successful answer whose body is not what the API promises.
    #[error("unexpected answer from {}: {}", safe(url), safe(detail))]
    #[diagnostic(code(kernels::hub::invalid_response))]
    InvalidResponse {
        /// Requested URL.
        url: String,
        /// What was wrong.
        detail: String,
    },
}

/// Which access failure [`access_help`] phrases.
#[derive(Debug, Clone, Copy)]
enum Access {
    NotFound,
    Gated,
    Unauthorized,
    Forbidden,
}

/// The advice for an access failure. It depends on whether the request
/// carried a token: without one, set one; with one, that token (named by its
/// source, never its value) is the suspect, so check or remove it. This is the
/// one place that decides, for every command.
fn access_help(access: Access, response: &ErrorResponse) -> String {
    let Some(source) = response.token_sent.as_deref().map(safe) else {
        return match access {
            Access::NotFound => "check the repo id and the repo type (`--repo-type kernel` or `model`); for a private repository set HF_TOKEN to a token with read access (the Hub answers 401 to anonymous requests for missing and private repositories alike)",
            Access::Gated => "request access on the repository's Hub page, then set HF_TOKEN to a token of that account",
            Access::Unauthorized => "this request needs a token: set HF_TOKEN to a token with read access",
            Access::Forbidden => "the repository is disabled or needs access: set HF_TOKEN to a token with read access to it",
        }
        .to_owned();
    };
    let check = "check the token's account and permissions (`hf auth whoami` with that token), replace it, or remove it so that no token is sent";
    match access {
        Access::NotFound => format!(
            "check the repo id and the repo type (`--repo-type kernel` or `model`); the token from {source} was sent, so if the repository exists that token is invalid or has no read access to it: {check}"
        ),
        Access::Gated => format!(
            "the token from {source} was sent, but its account has no access to this gated repository: request access on the repository's Hub page with that account (`hf auth whoami` with that token names it), or use a token of an account that has access"
        ),
        Access::Unauthorized => format!(
            "the token from {source} was sent and rejected (invalid, expired or revoked): {check}"
        ),
        Access::Forbidden => format!(
            "the token from {source} was sent and lacks permission for this repository (a fine-grained token needs read access to it), or the repository is disabled: {check}"
        ),
    }
}

impl HubError {
    /// Marks the failed answer as one to a request that carried a token from
    /// `source` (`HF_TOKEN`, a token file, …), for the advice of access failures.
    pub(crate) fn with_token_sent(mut self, source: &str) -> Self {
        match &mut self {
            HubError::RepoNotFound { response, .. }
            | HubError::RevisionNotFound { response, .. }
            | HubError::EntryNotFound { response, .. }
            | HubError::Gated { response, .. }
            | HubError::Unauthorized { response }
            | HubError::Forbidden { response }
            | HubError::Server { response }
            | HubError::Status { response } => response.token_sent = Some(source.to_owned()),
            _ => {}
        }
        self
    }

    /// A transport failure for `url`; the URL is kept once, in `url` (shown with
    /// a signed query removed), not again inside the reqwest error.
    pub(crate) fn transport(url: impl Into<String>, source: reqwest::Error) -> Self {
        HubError::Transport {
            url: url.into(),
            source: crate::TransportError::new(source),
        }
    }

    /// Classifies an unsuccessful response the way `huggingface_hub` does:
    /// `X-Error-Code` first, then the status.
    pub fn from_response(target: Option<&Target>, response: ErrorResponse) -> Self {
        let response = Box::new(response);
        let code = response.code.as_deref();
        if let Some(target) = target.cloned() {
            match code {
                Some("RepoNotFound") => {
                    return HubError::RepoNotFound { target, response };
                }
                Some("RevisionNotFound") => {
                    return HubError::RevisionNotFound { target, response };
                }
                Some("EntryNotFound") => return HubError::EntryNotFound { target, response },
                Some("GatedRepo") => return HubError::Gated { target, response },
                _ => {}
            }
        }
        // Without a code, read the status as huggingface_hub does: an anonymous
        // 401 about a repository is the Hub hiding a missing or private repo,
        // unless the message says the credentials themselves are bad.
        let bad_credentials = response
            .message
            .as_deref()
            .is_some_and(|m| m.contains("Invalid credentials in Authorization header"));
        match (response.status, target) {
            (401, Some(target)) if response.anonymous && !bad_credentials => {
                HubError::RepoNotFound {
                    target: target.clone(),
                    response,
                }
            }
            (404, Some(target)) if code.is_none() && target.path.is_some() => {
                HubError::EntryNotFound {
                    target: target.clone(),
                    response,
                }
            }
            (404, Some(target)) if code.is_none() && target.revision.is_none() => {
                HubError::RepoNotFound {
                    target: target.clone(),
                    response,
                }
            }
            (401, _) => HubError::Unauthorized { response },
            (403, _) => HubError::Forbidden { response },
            (500..=599, _) => HubError::Server { response },
            _ => HubError::Status { response },
        }
    }

    /// The same answer classified again as one from a server that is not a
    /// Hub origin: a 401 or 403 there is [`HubError::Refused`].
    pub(crate) fn into_foreign(self) -> Self {
        match self {
            HubError::Unauthorized { response }
            | HubError::Forbidden { response }
            | HubError::RepoNotFound { response, .. }
                if matches!(response.status, 401 | 403) =>
            {
                HubError::Refused { response }
            }
            other => other,
        }
    }

    /// The same answer classified again as one to an anonymous request.
    pub(crate) fn into_anonymous(self, target: Option<&Target>) -> Self {
        match self {
            HubError::Unauthorized { mut response } => {
                response.anonymous = true;
                HubError::from_response(target, *response)
            }
            other => other,
        }
    }

    /// Whether trying again may succeed: 408, 429 and 500/502/503/504 answers,
    /// and connection or transfer failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            // Redirect loops and unbuildable requests fail the same way every time.
            HubError::Transport { source, .. } | HubError::Proxy { source, .. } => {
                source.is_retryable()
            }
            HubError::Certificate { .. } => false,
            HubError::Timeout { .. } => true,
            HubError::Server { response } | HubError::Status { response } => {
                matches!(response.status, 408 | 429 | 500 | 502 | 503 | 504)
            }
            _ => false,
        }
    }

    /// The server's `Retry-After`, in seconds, if it sent one.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            HubError::Server { response } | HubError::Status { response } => response.retry_after,
            _ => None,
        }
    }

    /// The `RateLimit` headers of the failed answer, if sent.
    pub fn rate_limit(&self) -> Option<&crate::ratelimit::RateLimit> {
        match self {
            HubError::Server { response } | HubError::Status { response } => {
                response.rate_limit.as_ref()
            }
            _ => None,
        }
    }

    /// HTTP status of the failed answer, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            HubError::RepoNotFound { response, .. }
            | HubError::RevisionNotFound { response, .. }
            | HubError::EntryNotFound { response, .. }
            | HubError::Gated { response, .. }
            | HubError::Unauthorized { response }
            | HubError::Forbidden { response }
            | HubError::Refused { response }
            | HubError::Server { response }
            | HubError::Status { response } => Some(response.status),
            HubError::Transport { source, .. } | HubError::Proxy { source, .. } => source.status(),
            HubError::Certificate { .. } => None,
            HubError::Offline { .. }
            | HubError::Timeout { .. }
            | HubError::InvalidResponse { .. }
            | HubError::InvalidToken { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratelimit_header_is_preferred_over_retry_after() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "5".parse().unwrap());
        let resp = |h: &HeaderMap| ErrorResponse::new("http://h/api", 429, h, b"").retry_after;
        assert_eq!(resp(&headers), Some(5));
        headers.insert("ratelimit", "\"api\";r=0;t=55".parse().unwrap());
        assert_eq!(resp(&headers), Some(56));
        headers.insert("ratelimit", "\"api\";r=3;t=55".parse().unwrap());
        assert_eq!(resp(&headers), Some(5));
    }

    #[test]
    fn message_from_json_body() {
        assert_eq!(
            body_message(br#"{"error":"Repository not found"}"#).as_deref(),
            Some("Repository not found")
        );
        assert_eq!(
            body_message(br#"{"errors":[{"message":"a"},{"message":"b"}]}"#).as_deref(),
            Some("a; b")
        );
        assert_eq!(body_message(b"<html>nope</html>"), None);
        assert_eq!(body_message(b"plain text").as_deref(), Some("plain text"));
    }

    #[test]
    fn classification_uses_code_first() {
        let target = Target::repo(RepoType::Kernel, &"a/b".parse().unwrap()).at("v9");
        let mut headers = HeaderMap::new();
        headers.insert("x-error-code", "RevisionNotFound".parse().unwrap());
        headers.insert("x-request-id", "abc".parse().unwrap());
        let resp = ErrorResponse::new("http://h/api/kernels/a/b/revision/v9", 404, &headers, b"");
        let err = HubError::from_response(Some(&target), resp);
        assert!(matches!(err, HubError::RevisionNotFound { .. }));
        let text = err.to_string();
        assert!(
            text.contains("`v9`") && text.contains("kernel repository `a/b`"),
            "{text}"
        );
        assert!(text.contains("request id abc"), "{text}");
        let resp = ErrorResponse::new("http://h/x", 503, &HeaderMap::new(), b"");
        assert!(matches!(
            HubError::from_response(None, resp),
            HubError::Server { .. }
        ));
    }
}
