//! A small async client for the Hub HTTP API endpoints `kernels` uses.
//!
//! Every request carries `user-agent: kernels/<version>` and, when a token is
//! configured, `authorization: Bearer <token>`. reqwest drops the authorization
//! header when a redirect leaves the original host, so the token never reaches a
//! CDN. In offline mode every call fails with [`HubError::Offline`] before any
//! connection is made.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, LINK};
use serde::de::DeserializeOwned;

use kernels_types::RepoId;
use kernels_types::wire::{
    CommitInfo, GitRefs, OrganizationOverview, RepoInfo, RepoType, TreeEntry,
};

use crate::error::{ErrorResponse, HubError, Target};
use crate::retry::RetryPolicy;

/// What a [`HubClient`] is bound to: built by the caller (the CLI's settings
/// layer reads the environment), never read from the environment here.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Hub base URL (`HF_ENDPOINT`); a trailing `/` is ignored.
    pub endpoint: String,
    /// Bearer token sent to the Hub, if any.
    pub token: Option<String>,
    /// No request may be made: every call fails with [`HubError::Offline`].
    pub offline: bool,
    /// Retry budget and timeouts of every request.
    pub retry: RetryPolicy,
}

/// Characters Python's `urllib.parse.quote(s, safe="")` leaves alone: letters,
/// digits and `_.-~`.
const QUOTE_ALL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'_')
    .remove(b'.')
    .remove(b'-')
    .remove(b'~');

/// Like [`QUOTE_ALL`] but keeping `/` (Python's default `safe="/"`).
const QUOTE_PATH: &AsciiSet = &QUOTE_ALL.remove(b'/');

/// Percent-encodes a revision as one path segment (`refs/pr/1` → `refs%2Fpr%2F1`).
pub fn quote_revision(revision: &str) -> String {
    utf8_percent_encode(revision, QUOTE_ALL).to_string()
}

/// Percent-encodes a repo-relative file path keeping `/` separators.
pub fn quote_path(path: &str) -> String {
    utf8_percent_encode(path, QUOTE_PATH).to_string()
}

/// A metadata request that failed transiently and is about to be tried again
/// (passed to the observer of [`HubClient::with_retry_observer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The request URL.
    pub url: String,
    /// The failure's deepest cause, one line.
    pub reason: String,
    /// The pause before the next attempt.
    pub wait: std::time::Duration,
    /// The number of the retry about to happen (1-based).
    pub attempt: u32,
    /// Retries allowed in all.
    pub max: u32,
}

/// A retry callback.
type RetryFn = dyn Fn(&RetryNotice) + Send + Sync;

/// The caller's retry callback.
#[derive(Clone, Default)]
struct RetryObserver(Option<std::sync::Arc<RetryFn>>);

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

/// Hub API client bound to one endpoint and token. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HubClient {
    http: reqwest::Client,
    endpoint: String,
    auth: HeaderMap,
    offline: bool,
    retry: RetryPolicy,
    on_retry: RetryObserver,
}

impl HubClient {
    /// Builds a client from its configuration: endpoint, optional token, offline
    /// flag, connect timeout `retry.etag_timeout`, read timeout
    /// `retry.download_timeout`. Fails if the token cannot be sent as a header.
    pub fn new(settings: &ClientConfig) -> Result<Self, HubError> {
        let mut auth = HeaderMap::new();
        if let Some(token) = &settings.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| HubError::InvalidToken)?;
            value.set_sensitive(true);
            auth.insert(AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("kernels/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(settings.retry.etag_timeout)
            .read_timeout(settings.retry.download_timeout)
            .build()
            .map_err(|source| HubError::Transport {
                url: settings.endpoint.clone(),
                source,
            })?;
        Ok(HubClient {
            http,
            endpoint: settings.endpoint.trim_end_matches('/').to_owned(),
            auth,
            offline: settings.offline,
            retry: settings.retry,
            on_retry: RetryObserver::default(),
        })
    }

    /// Calls `observer` before each retry of a metadata request, so that the
    /// caller can show it ("retrying in 2 s (1/5)").
    pub fn with_retry_observer(
        mut self,
        observer: impl Fn(&RetryNotice) + Send + Sync + 'static,
    ) -> Self {
        self.on_retry = RetryObserver(Some(std::sync::Arc::new(observer)));
        self
    }

    /// Retry budget and timeouts of every request made through this client.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The Hub base URL, without a trailing `/`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether offline mode is on (every request fails).
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// A GET request to `url` carrying the auth header, for streaming downloads.
    ///
    /// Fails with [`HubError::Offline`] in offline mode. Use
    /// [`HubClient::check`] on the response to turn failures into [`HubError`]s.
    pub fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, HubError> {
        self.request(reqwest::Method::GET, url)
    }

    /// A request with any method (for example `HEAD`) carrying the auth header.
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, HubError> {
        if self.offline {
            return Err(HubError::Offline {
                url: url.to_owned(),
            });
        }
        Ok(self.http.request(method, url).headers(self.auth.clone()))
    }

    /// Sends a request, mapping transport errors and unsuccessful statuses to
    /// [`HubError`]; `target` phrases not-found errors.
    pub async fn send(
        &self,
        request: reqwest::RequestBuilder,
        target: Option<&Target>,
    ) -> Result<reqwest::Response, HubError> {
        let request = request.build().map_err(|source| HubError::Transport {
            url: source.url().map(|u| u.to_string()).unwrap_or_default(),
            source,
        })?;
        let url = request.url().to_string();
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|source| HubError::Transport {
                url: url.clone(),
                source,
            })?;
        Self::check(response, target).await
    }

    /// Returns the response if its status is a success (2xx or 3xx), else reads the
    /// body and builds the matching [`HubError`].
    pub async fn check(
        response: reqwest::Response,
        target: Option<&Target>,
    ) -> Result<reqwest::Response, HubError> {
        let status = response.status();
        if status.is_success() || status.is_redirection() {
            return Ok(response);
        }
        let url = response.url().to_string();
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap_or_default();
        Err(HubError::from_response(
            target,
            ErrorResponse::new(&url, status.as_u16(), &headers, &body),
        ))
    }

    /// GETs a JSON document, retrying retryable failures as the [`RetryPolicy`]
    /// says; each attempt waits at most `etag_timeout` for the response headers.
    async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<(T, HeaderMap), HubError> {
        let mut attempt = 0;
        loop {
            match self.get_json_once(url, target).await {
                Err(err) if attempt < self.retry.max_retries && err.is_retryable() => {
                    let wait = self.retry.delay(attempt, err.retry_after());
                    tracing::debug!("retrying {url} after {wait:?}: {err}");
                    if let Some(observer) = &self.on_retry.0 {
                        // The deepest cause names what happened without the URL.
                        let mut cause: &dyn std::error::Error = &err;
                        while let Some(next) = cause.source() {
                            cause = next;
                        }
                        observer(&RetryNotice {
                            url: url.to_owned(),
                            reason: cause
                                .to_string()
                                .lines()
                                .next()
                                .unwrap_or_default()
                                .to_owned(),
                            wait,
                            attempt: attempt + 1,
                            max: self.retry.max_retries,
                        });
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn get_json_once<T: DeserializeOwned>(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<(T, HeaderMap), HubError> {
        let limit = self.retry.etag_timeout;
        let response = tokio::time::timeout(limit, self.send(self.get(url)?, target))
            .await
            .map_err(|_| HubError::Timeout {
                url: url.to_owned(),
                what: "no response",
                seconds: limit.as_secs_f64(),
                setting: "HF_HUB_ETAG_TIMEOUT",
            })??;
        let headers = response.headers().clone();
        let body = response
            .bytes()
            .await
            .map_err(|source| HubError::Transport {
                url: url.to_owned(),
                source,
            })?;
        let value = serde_json::from_slice(&body).map_err(|err| HubError::InvalidResponse {
            url: url.to_owned(),
            detail: format!("invalid JSON: {err}"),
        })?;
        Ok((value, headers))
    }

    fn api_url(&self, repo_type: RepoType, repo_id: &RepoId) -> String {
        format!(
            "{}/api/{}/{}",
            self.endpoint,
            repo_type.api_segment(),
            repo_id
        )
    }

    /// `GET /api/{type}s/{repo_id}/refs`: branches, converts and tags.
    pub async fn list_refs(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
    ) -> Result<GitRefs, HubError> {
        let url = format!("{}/refs", self.api_url(repo_type, repo_id));
        let target = Target::repo(repo_type, repo_id);
        Ok(self.get_json(&url, Some(&target)).await?.0)
    }

    /// `GET /api/{type}s/{repo_id}/revision/{revision}`: the commit a revision
    /// resolves to (`RepoInfo::sha`).
    pub async fn repo_info(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
    ) -> Result<RepoInfo, HubError> {
        let url = format!(
            "{}/revision/{}",
            self.api_url(repo_type, repo_id),
            quote_revision(revision)
        );
        let target = Target::repo(repo_type, repo_id).at(revision);
        let info: RepoInfo = self.get_json(&url, Some(&target)).await?.0;
        if !info
            .sha
            .parse::<kernels_types::CommitId>()
            .is_ok_and(|c| c.is_sha1())
        {
            return Err(HubError::InvalidResponse {
                url,
                detail: format!("`sha` is not a 40-hex commit id: {:?}", info.sha),
            });
        }
        Ok(info)
    }

    /// `GET /api/{type}s/{repo_id}/tree/{revision}[/{path}]?recursive=…`, following
    /// `Link: <…>; rel="next"` pagination. `path` empty means the repository root.
    /// Entries carry full repo-relative paths, in server order.
    pub async fn list_tree(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
        path: &str,
        recursive: bool,
    ) -> Result<Vec<TreeEntry>, HubError> {
        let path = path.trim_matches('/');
        let mut url = format!(
            "{}/tree/{}",
            self.api_url(repo_type, repo_id),
            quote_revision(revision)
        );
        if !path.is_empty() {
            url.push('/');
            url.push_str(&quote_revision(path));
        }
        url.push_str(&format!("?recursive={recursive}&expand=false"));
        let mut target = Target::repo(repo_type, repo_id).at(revision);
        if !path.is_empty() {
            target = target.path(path);
        }
        let mut entries = Vec::new();
        let mut next = Some(url);
        while let Some(url) = next.take() {
            let (page, headers): (Vec<TreeEntry>, _) = self.get_json(&url, Some(&target)).await?;
            entries.extend(page);
            next = next_link(&headers);
            if next.as_deref() == Some(url.as_str()) {
                return Err(HubError::InvalidResponse {
                    url,
                    detail: "the `Link` header points at the same page".into(),
                });
            }
        }
        Ok(entries)
    }

    /// `GET /api/{type}s/{repo_id}/commits/{revision}`, newest first, following
    /// `Link: <…>; rel="next"` pages until `stop` returns true for an entry
    /// (that entry is included) or the history ends.
    pub async fn list_commits_until(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
        mut stop: impl FnMut(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>, HubError> {
        let url = format!(
            "{}/commits/{}",
            self.api_url(repo_type, repo_id),
            quote_revision(revision)
        );
        let target = Target::repo(repo_type, repo_id).at(revision);
        let mut commits = Vec::new();
        let mut next = Some(url);
        while let Some(url) = next.take() {
            let (page, headers): (Vec<CommitInfo>, _) = self.get_json(&url, Some(&target)).await?;
            for commit in page {
                let done = stop(&commit);
                commits.push(commit);
                if done {
                    return Ok(commits);
                }
            }
            next = next_link(&headers);
            if next.as_deref() == Some(url.as_str()) {
                return Err(HubError::InvalidResponse {
                    url,
                    detail: "the `Link` header points at the same page".into(),
                });
            }
        }
        Ok(commits)
    }

    /// Whether `commit` is `revision`'s commit or one of its ancestors, from the
    /// commit history (pages are read only until the commit is found).
    pub async fn is_ancestor(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
        commit: &str,
    ) -> Result<bool, HubError> {
        let history = self
            .list_commits_until(repo_type, repo_id, revision, |c| {
                c.id.eq_ignore_ascii_case(commit)
            })
            .await?;
        Ok(history
            .last()
            .is_some_and(|c| c.id.eq_ignore_ascii_case(commit)))
    }

    /// `GET /api/organizations/{org}/overview`.
    pub async fn org_overview(&self, org: &str) -> Result<OrganizationOverview, HubError> {
        let url = format!(
            "{}/api/organizations/{}/overview",
            self.endpoint,
            quote_revision(org)
        );
        Ok(self.get_json(&url, None).await?.0)
    }

    /// The download URL of a file:
    /// `{endpoint}/{prefix}{repo_id}/resolve/{quote(revision)}/{quote(path)}`, where the
    /// prefix is `kernels/` for kernel repos and empty for model repos, the revision
    /// is encoded as one segment and the path keeps its `/`.
    pub fn resolve_url(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
        path: &str,
    ) -> String {
        format!(
            "{}/{}{}/resolve/{}/{}",
            self.endpoint,
            repo_type.url_prefix(),
            repo_id,
            quote_revision(revision),
            quote_path(path)
        )
    }
}

/// The `rel="next"` target of a `Link` header, if any.
fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|part| {
            let mut pieces = part.split(';');
            let target = pieces.next()?.trim();
            let is_next = pieces.any(|p| {
                let p = p.trim();
                p.strip_prefix("rel=").is_some_and(|rel| {
                    rel.trim_matches('"')
                        .split_whitespace()
                        .any(|r| r == "next")
                })
            });
            let url = target.strip_prefix('<')?.strip_suffix('>')?;
            is_next.then(|| url.to_owned())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_matches_python() {
        assert_eq!(quote_revision("refs/pr/1"), "refs%2Fpr%2F1");
        assert_eq!(quote_revision("v1.0-rc_1~x"), "v1.0-rc_1~x");
        assert_eq!(quote_revision("a b+c"), "a%20b%2Bc");
        assert_eq!(
            quote_path("build/torch-cuda/a b.py"),
            "build/torch-cuda/a%20b.py"
        );
    }

    #[test]
    fn parses_link_header() {
        let mut headers = HeaderMap::new();
        headers.insert(
            LINK,
            r#"<http://h/api/x?cursor=abc>; rel="prev", <http://h/api/x?cursor=def>; rel="next""#
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("http://h/api/x?cursor=def")
        );
        assert_eq!(next_link(&HeaderMap::new()), None);
    }

    fn config(endpoint: &str, token: Option<String>, offline: bool) -> ClientConfig {
        let second = std::time::Duration::from_secs(1);
        ClientConfig {
            endpoint: endpoint.to_owned(),
            token,
            offline,
            retry: RetryPolicy {
                max_retries: 0,
                etag_timeout: second,
                download_timeout: second,
                stall_timeout: second,
            },
        }
    }

    #[test]
    fn resolve_urls() {
        let settings = config("http://127.0.0.1:1/", None, false);
        let client = HubClient::new(&settings).unwrap();
        let id: RepoId = "acme/relu".parse().unwrap();
        assert_eq!(
            client.resolve_url(RepoType::Kernel, &id, "refs/heads/v1", "build/x y/m.json"),
            "http://127.0.0.1:1/kernels/acme/relu/resolve/refs%2Fheads%2Fv1/build/x%20y/m.json"
        );
        assert_eq!(
            client.resolve_url(RepoType::Model, &id, "main", "a.py"),
            "http://127.0.0.1:1/acme/relu/resolve/main/a.py"
        );
    }

    #[test]
    fn rejects_unsendable_tokens() {
        let settings = config("http://127.0.0.1:1", Some("bad\ntoken".into()), false);
        assert!(matches!(
            HubClient::new(&settings),
            Err(HubError::InvalidToken)
        ));
    }

    #[tokio::test]
    async fn offline_fails_without_connecting() {
        let settings = config("http://127.0.0.1:1", Some("secret-token".into()), true);
        let client = HubClient::new(&settings).unwrap();
        let id: RepoId = "acme/relu".parse().unwrap();
        let err = client.list_refs(RepoType::Kernel, &id).await.unwrap_err();
        assert!(matches!(err, HubError::Offline { .. }));
        assert!(!format!("{err:?}").contains("secret-token"));
    }
}
