//! A small async client for the Hub HTTP API endpoints `kernels` uses.
//!
//! Every request carries `user-agent: kernels/<version>`. When a token is
//! configured, `authorization: Bearer <token>` is attached to requests whose
//! origin is one of the Hub's ([`HubClient::is_hub_origin`]: the endpoint,
//! `huggingface.co`, `hf.co`, `hub-ci.huggingface.co`, as huggingface_hub 2.4
//! trusts them) and to no other: redirects are followed here, hop by hop, so a
//! CDN, a redirect target or a pagination link elsewhere never sees it. In
//! offline mode every call fails with [`HubError::Offline`] before any
//! connection is made.
//!
//! Every read is bounded: an API exchange (headers and body) has one deadline
//! ([`RetryPolicy::api_timeout`]), a JSON document at most
//! [`MAX_DOCUMENT_BYTES`], an error body is read up to [`ERROR_BODY_BYTES`],
//! redirects stop after [`MAX_REDIRECTS`] hops, and
//! pagination after [`MAX_PAGES`] pages or a repeated page, following `next`
//! links on the endpoint's origin only.

use std::collections::HashSet;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, LINK, LOCATION};
use serde::de::DeserializeOwned;
use url::{Origin, Url};

use kernels_types::wire::{
    CommitInfo, GitRefs, OrganizationOverview, RepoInfo, RepoType, TreeEntry,
};
use kernels_types::{CommitId, RepoId};

use crate::auth::TokenSource;
use crate::error::{ErrorResponse, HubError, Target};
use crate::ratelimit::{EventSink, HubEvent, RateLimit};
use crate::retry::{RetryNotice, RetryPolicy, RetryState};
use crate::transport::{TransportError, TransportKind};

/// When each exhausted rate-limit quota (`api`, `resolvers`, …) resets.
type Pauses =
    std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, tokio::time::Instant>>>;

/// Largest JSON document (one API answer or one `metadata.json`) read into memory.
pub const MAX_DOCUMENT_BYTES: usize = 16 << 20;

/// How much of an error body is kept for the message.
pub const ERROR_BODY_BYTES: usize = 4 << 10;

/// Longest time spent reading an error body (what arrived by then is used).
pub const ERROR_BODY_DEADLINE: Duration = Duration::from_secs(5);

/// Redirect hops followed for one request (reqwest's default; huggingface_hub
/// 2.4 allows 20).
pub const MAX_REDIRECTS: usize = 10;

/// Pages of one paginated listing (tree or commits).
pub const MAX_PAGES: usize = 1_000;

/// Origins huggingface_hub 2.4 treats as the Hub besides the configured endpoint.
const HUB_ORIGINS: [&str; 3] = [
    "https://huggingface.co",
    "https://hf.co",
    "https://hub-ci.huggingface.co",
];

/// What a [`HubClient`] is bound to: built by the caller (the CLI's settings
/// layer reads the environment), never read from the environment here.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Hub base URL (`HF_ENDPOINT`); a trailing `/` is ignored.
    pub endpoint: String,
    /// Bearer token sent to the Hub, if any.
    pub token: Option<String>,
    /// Where `token` came from, when it may need a refresh or an exchange
    /// first ([`TokenSource`]); resolved once, before the first request.
    pub token_source: TokenSource,
    /// Where the token comes from, in words for messages (`HF_TOKEN`, `the
    /// token file ~/.cache/huggingface/token`); never the token itself.
    /// Access failures of requests that carried it name it
    /// ([`ErrorResponse::token_sent`]); `None` says "the client configuration".
    pub token_origin: Option<String>,
    /// No request may be made: every call fails with [`HubError::Offline`].
    pub offline: bool,
    /// Retry budget and timeouts of every request.
    pub retry: RetryPolicy,
    /// Where to report [`HubEvent`]s (rate-limit waits); `None` drops them.
    pub events: Option<EventSink>,
    /// Extra trust roots and proxies ([`NetworkConfig`]).
    pub network: NetworkConfig,
}

/// Trust roots and proxies, given by the caller (the library reads no
/// environment; reqwest's own proxy lookup is switched off).
#[derive(Debug, Clone, Default)]
pub struct NetworkConfig {
    /// Also trust the operating system's CA bundle (the first of
    /// [`SYSTEM_CA_FILES`] that exists), beside the built-in web PKI roots.
    pub system_roots: bool,
    /// PEM files (bundles) or folders of PEM files whose certificates are
    /// trusted as well (`SSL_CERT_FILE`, `SSL_CERT_DIR`, `REQUESTS_CA_BUNDLE`,
    /// `CURL_CA_BUNDLE`).
    pub extra_roots: Vec<std::path::PathBuf>,
    /// Proxy for `https://` URLs.
    pub https_proxy: Option<String>,
    /// Proxy for `http://` URLs.
    pub http_proxy: Option<String>,
    /// Proxy for both when the specific one is unset.
    pub all_proxy: Option<String>,
    /// Hosts reached directly (curl's `NO_PROXY` syntax).
    pub no_proxy: Option<String>,
}

/// Where Linux distributions (and macOS, Alpine) keep the system CA bundle, in
/// the order OpenSSL-based clients look for it.
pub const SYSTEM_CA_FILES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

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
    auth: std::sync::Arc<Auth>,
    hub_origins: Vec<Origin>,
    offline: bool,
    retry: RetryPolicy,
    events: Option<EventSink>,
    network: std::sync::Arc<NetworkConfig>,
    pauses: Pauses,
    on_retry: RetryObserver,
    /// The first definitive refusal of a download server the Hub redirected
    /// to (shared by clones): every later download fails with it at once.
    pub(crate) refused: std::sync::Arc<std::sync::Mutex<Option<ErrorResponse>>>,
    /// `model` repositories read through the `kernel` API, when that is on
    /// ([`HubClient::with_kernel_fallback`]).
    pub(crate) kernel_fallback: Option<crate::fallback::KernelFallback>,
}

impl HubClient {
    /// Builds a client from its configuration: endpoint, optional token, offline
    /// flag, connect timeout `retry.etag_timeout`, read timeout
    /// `retry.download_timeout`. Fails if the token cannot be sent as a header.
    pub fn new(settings: &ClientConfig) -> Result<Self, HubError> {
        let origin = settings
            .token_origin
            .clone()
            .unwrap_or_else(|| "the client configuration".to_owned());
        let token = match &settings.token {
            Some(token) => Some(bearer(token, &origin)?),
            None => None,
        };
        let endpoint = settings.endpoint.trim_end_matches('/').to_owned();
        let hub_origins = std::iter::once(endpoint.as_str())
            .chain(HUB_ORIGINS)
            .filter_map(|u| Url::parse(u).ok())
            .map(|u| u.origin())
            .collect();
        let mut builder = reqwest::Client::builder().no_proxy();
        for cert in root_certificates(&settings.network)? {
            builder = builder.add_root_certificate(cert);
        }
        for proxy in proxies(&settings.network)? {
            builder = builder.proxy(proxy);
        }
        let http = builder
            .user_agent(concat!("kernels/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(settings.retry.etag_timeout)
            .read_timeout(settings.retry.download_timeout)
            // Followed hop by hop in `execute`, deciding about the token each time.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|source| HubError::transport(settings.endpoint.clone(), source))?;
        Ok(HubClient {
            http,
            endpoint,
            auth: std::sync::Arc::new(Auth {
                given: token,
                given_text: settings.token.clone(),
                source: settings.token_source.clone(),
                origin,
                resolved: tokio::sync::OnceCell::new(),
            }),
            hub_origins,
            offline: settings.offline,
            retry: settings.retry,
            events: settings.events.clone(),
            network: std::sync::Arc::new(settings.network.clone()),
            pauses: Pauses::default(),
            on_retry: RetryObserver::default(),
            refused: std::sync::Arc::default(),
            kernel_fallback: None,
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

    /// This client making one attempt per request (no retry, no retry
    /// notice): for a request that only improves a message, which must not
    /// delay it when the Hub cannot be reached.
    pub fn single_attempt(&self) -> Self {
        let mut client = self.clone();
        client.retry.max_retries = 0;
        client.on_retry = RetryObserver(None);
        client
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

    /// Whether `url` is served by the Hub (the endpoint's origin or one of the
    /// Hub origins huggingface_hub 2.4 trusts), so the token may go there.
    pub fn is_hub_origin(&self, url: &Url) -> bool {
        let origin = url.origin();
        self.hub_origins.contains(&origin)
    }

    /// Whether `url` has the endpoint's own origin (pagination stays there).
    fn is_endpoint_origin(&self, url: &Url) -> bool {
        self.hub_origins.first() == Some(&url.origin())
    }

    /// Whether `url` has the endpoint's origin (an unparsable URL has not).
    pub(crate) fn is_endpoint_url(&self, url: &str) -> bool {
        match (Url::parse(url), Url::parse(&self.endpoint)) {
            (Ok(a), Ok(b)) => a.origin() == b.origin(),
            _ => false,
        }
    }

    /// A GET request to `url`; send it with [`HubClient::send`] or
    /// [`HubClient::send_unchecked`], which attach the token where it may go
    /// and follow redirects.
    ///
    /// Fails with [`HubError::Offline`] in offline mode.
    pub(crate) fn get(&self, url: &str) -> Result<reqwest::RequestBuilder, HubError> {
        if self.offline {
            return Err(HubError::Offline {
                url: url.to_owned(),
            });
        }
        Ok(self.http.get(url))
    }

    /// The quota a request counts against: `api` for `/api/…`, else `resolvers`
    /// (file downloads), the names the Hub uses in `RateLimit`.
    fn quota(url: &Url) -> &'static str {
        if url.path().starts_with("/api/") {
            "api"
        } else {
            "resolvers"
        }
    }

    /// Remembers an exhausted quota (`r=0`) from a successful answer, so the
    /// next request against it waits for the reset instead of failing.
    fn note_rate_limit(&self, headers: &HeaderMap) {
        let Some(limit) = RateLimit::from_headers(headers) else {
            return;
        };
        if let Some(wait) = limit.wait() {
            let until = tokio::time::Instant::now() + wait.min(self.retry.max_wait);
            self.pauses
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(limit.resource, until);
        }
    }

    /// Waits while the quota of `url` is exhausted (telling the event sink).
    async fn pace(&self, url: &Url) {
        let until = {
            let pauses = self.pauses.lock().unwrap_or_else(|e| e.into_inner());
            pauses.get(Self::quota(url)).copied()
        };
        let Some(until) = until else { return };
        let now = tokio::time::Instant::now();
        if until > now {
            self.emit(&HubEvent::RateLimited {
                wait: until - now,
                resource: Some(Self::quota(url).to_owned()),
                policy: None,
            });
            tokio::time::sleep_until(until).await;
        }
    }

    fn emit(&self, event: &HubEvent) {
        if let Some(sink) = &self.events {
            sink.emit(event);
        }
    }

    /// Counts a retry after `err` in `state` and returns the wait before it
    /// ([`RetryState::next_wait`]), or `None` when the budget is spent; a
    /// rate-limit wait (`429`) is reported as [`HubEvent::RateLimited`]. The
    /// caller decides whether `err` is worth a retry, and sleeps.
    pub(crate) fn backoff(&self, state: &mut RetryState, err: &HubError) -> Option<Duration> {
        let wait = state.next_wait(err.retry_after())?;
        if err.status() == Some(429) {
            let limit = err.rate_limit();
            self.emit(&HubEvent::RateLimited {
                wait,
                resource: limit.map(|l| l.resource.clone()),
                policy: limit.and_then(|l| Some((l.limit?, l.window_secs?))),
            });
        }
        Some(wait)
    }

    /// Sends a request, mapping transport errors and unsuccessful statuses to
    /// [`HubError`]; `target` phrases not-found errors.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        target: Option<&Target>,
    ) -> Result<reqwest::Response, HubError> {
        let response = self.send_unchecked(request).await?;
        self.check_response(response, target).await
    }

    /// [`HubClient::check`], knowing whether the final request was anonymous
    /// (no token configured, or none sent to that origin): an anonymous 401
    /// reads as "repository not found", as huggingface_hub reads it.
    pub(crate) async fn check_response(
        &self,
        response: reqwest::Response,
        target: Option<&Target>,
    ) -> Result<reqwest::Response, HubError> {
        let hub_origin = self.is_hub_origin(response.url());
        let anonymous = !self.has_token() || !hub_origin;
        match Self::check(response, target).await {
            Err(err) if !hub_origin => Err(err.into_anonymous(target).into_foreign()),
            Err(err) if anonymous => Err(err.into_anonymous(target)),
            Err(err) => Err(err.with_token_sent(&self.auth.origin)),
            result => result,
        }
    }

    /// Sends a request following redirects (at most [`MAX_REDIRECTS`] hops), with the token attached on Hub origins only; the final
    /// answer is returned whatever its status.
    pub(crate) async fn send_unchecked(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, HubError> {
        let mut request = request.build().map_err(|source| {
            HubError::transport(
                source.url().map(|u| u.to_string()).unwrap_or_default(),
                source,
            )
        })?;
        self.pace(request.url()).await;
        let token = self.token_header().await?;
        let mut hops = 0;
        loop {
            let url = request.url().clone();
            if hops > MAX_REDIRECTS {
                return Err(HubError::InvalidResponse {
                    url: url.to_string(),
                    detail: format!("redirect loop (more than {MAX_REDIRECTS} hops)"),
                });
            }
            hops += 1;
            match &token {
                Some(token) if self.is_hub_origin(&url) => {
                    request.headers_mut().insert(AUTHORIZATION, token.clone());
                }
                _ => {
                    request.headers_mut().remove(AUTHORIZATION);
                }
            }
            let next = request.try_clone();
            let response = self
                .http
                .execute(request)
                .await
                .map_err(|source| self.transport_error(&url, source))?;
            if self.is_hub_origin(&url)
                && response.status() != reqwest::StatusCode::TOO_MANY_REQUESTS
            {
                self.note_rate_limit(response.headers());
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| url.join(v).ok());
            match (response.status().is_redirection(), location, next) {
                (true, Some(target), Some(mut next))
                    if matches!(target.scheme(), "http" | "https") =>
                {
                    *next.url_mut() = target;
                    request = next;
                }
                _ => return Ok(response),
            }
        }
    }

    /// Returns the response if its status is a success (2xx or 3xx), else reads
    /// the start of the body (at most [`ERROR_BODY_BYTES`], for at most
    /// [`ERROR_BODY_DEADLINE`]) and builds the matching [`HubError`].
    pub(crate) async fn check(
        response: reqwest::Response,
        target: Option<&Target>,
    ) -> Result<reqwest::Response, HubError> {
        let status = response.status();
        if status.is_success() || status.is_redirection() {
            return Ok(response);
        }
        let url = response.url().to_string();
        let headers = response.headers().clone();
        let body = read_capped(response, ERROR_BODY_BYTES, ERROR_BODY_DEADLINE).await;
        Err(HubError::from_response(
            target,
            ErrorResponse::new(&url, status.as_u16(), &headers, &body),
        ))
    }

    /// GETs a document (JSON answer or small file) with retries: each attempt
    /// has [`RetryPolicy::api_timeout`] for the whole exchange and may be at
    /// most [`MAX_DOCUMENT_BYTES`] long; `target` phrases not-found errors.
    ///
    /// # Errors
    /// The last attempt's [`HubError`].
    pub async fn get_document(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<Vec<u8>, HubError> {
        Ok(self.get_page(url, target).await?.0)
    }

    /// [`HubClient::get_document`], also returning the headers (pagination).
    async fn get_page(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<(Vec<u8>, HeaderMap), HubError> {
        let mut state = RetryState::new(self.retry);
        loop {
            let err = match self.get_document_once(url, target).await {
                Err(err) if err.is_retryable() => err,
                result => return result,
            };
            let Some(wait) = self.backoff(&mut state, &err) else {
                return Err(err);
            };
            tracing::debug!(
                "retrying {} after {wait:?}: {err}",
                kernels_types::text::safe(url)
            );
            if let Some(observer) = &self.on_retry.0 {
                // The deepest cause names what happened without the URL.
                let mut cause: &dyn std::error::Error = &err;
                while let Some(next) = cause.source() {
                    cause = next;
                }
                let reason = cause
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                observer(&state.notice(url, None, reason, wait));
            }
            tokio::time::sleep(wait).await;
        }
    }

    async fn get_document_once(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<(Vec<u8>, HeaderMap), HubError> {
        let limit = self.retry.api_timeout;
        let exchange = async {
            let response = self.send(self.get(url)?, target).await?;
            let headers = response.headers().clone();
            if response
                .content_length()
                .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
            {
                return Err(too_large(url));
            }
            let mut response = response;
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|source| HubError::transport(url.to_owned(), source))?
            {
                if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                    return Err(too_large(url));
                }
                body.extend_from_slice(&chunk);
            }
            Ok((body, headers))
        };
        tokio::time::timeout(limit, exchange)
            .await
            .map_err(|_| HubError::Timeout {
                url: url.to_owned(),
                what: "no complete answer",
                seconds: limit.as_secs_f64(),
                setting: "KERNELS_API_TIMEOUT",
            })?
    }

    /// GETs and parses a JSON document ([`HubClient::get_document`]).
    async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
        target: Option<&Target>,
    ) -> Result<(T, HeaderMap), HubError> {
        let (body, headers) = self.get_page(url, target).await?;
        let value = serde_json::from_slice(&body).map_err(|err| HubError::InvalidResponse {
            url: url.to_owned(),
            detail: format!("invalid JSON: {err}"),
        })?;
        Ok((value, headers))
    }

    /// The next page of a listing: the `Link: rel="next"` target resolved
    /// against `url`, accepted only on the endpoint's origin, never a page seen
    /// before, and at most [`MAX_PAGES`] pages.
    fn next_page(
        &self,
        url: &str,
        headers: &HeaderMap,
        seen: &mut HashSet<String>,
    ) -> Result<Option<String>, HubError> {
        let Some(link) = next_link(headers) else {
            return Ok(None);
        };
        let invalid = |detail: String| HubError::InvalidResponse {
            url: url.to_owned(),
            detail,
        };
        let next = Url::parse(url)
            .and_then(|base| base.join(&link))
            .map_err(|_| invalid("the `Link` header's next page is not a URL".into()))?;
        if !self.is_endpoint_origin(&next) {
            return Err(invalid(format!(
                "the `Link` header's next page leaves the Hub ({})",
                next.origin().ascii_serialization()
            )));
        }
        let next = next.to_string();
        if !seen.insert(next.clone()) {
            return Err(invalid(
                "the `Link` header points at a page already read (pagination loop)".into(),
            ));
        }
        if seen.len() > MAX_PAGES {
            return Err(invalid(format!("more than {MAX_PAGES} pages")));
        }
        Ok(Some(next))
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
        match self
            .typed(repo_type, repo_id, async |t| self.refs_of(t, repo_id).await)
            .await
        {
            Ok(refs) => Ok(refs),
            Err(err) => Err(self.with_suggestion(err).await),
        }
    }

    async fn refs_of(&self, repo_type: RepoType, repo_id: &RepoId) -> Result<GitRefs, HubError> {
        let url = format!("{}/refs", self.api_url(repo_type, repo_id));
        let target = Target::repo(repo_type, repo_id);
        let (refs, _): (GitRefs, _) = self.get_json(&url, Some(&target)).await?;
        // Git forbids control characters in ref names; a listing with one is
        // hostile (an escape sequence waiting to be printed).
        let all = refs.branches.iter().chain(&refs.converts).chain(&refs.tags);
        if let Some(bad) = all
            .flat_map(|r| [&r.name, &r.git_ref])
            .find(|t| t.chars().any(char::is_control))
        {
            return Err(HubError::InvalidResponse {
                url,
                detail: format!("a ref name contains control characters: {bad:?}"),
            });
        }
        Ok(refs)
    }

    /// `GET /api/{type}s/{repo_id}/revision/{revision}`: the commit a revision
    /// resolves to (`RepoInfo::sha`).
    pub async fn repo_info(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
    ) -> Result<RepoInfo, HubError> {
        match self
            .typed(repo_type, repo_id, async |t| {
                self.info_of(t, repo_id, revision).await
            })
            .await
        {
            Ok(info) => Ok(info),
            Err(err) => Err(self.with_suggestion(err).await),
        }
    }

    async fn info_of(
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
        let (info, _): (RepoInfo, _) = self.get_json(&url, Some(&target)).await?;
        if !info.sha.is_sha1() {
            return Err(HubError::InvalidResponse {
                url,
                detail: format!("`sha` is not a 40-hex commit id: {:?}", info.sha.as_str()),
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
        self.typed(repo_type, repo_id, async |t| {
            self.tree_of(t, repo_id, revision, path, recursive).await
        })
        .await
    }

    async fn tree_of(
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
        let mut seen = HashSet::from([url.clone()]);
        let mut next = Some(url);
        while let Some(url) = next.take() {
            let (page, headers): (Vec<TreeEntry>, _) = self.get_json(&url, Some(&target)).await?;
            entries.extend(page);
            next = self.next_page(&url, &headers, &mut seen)?;
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
        self.typed(repo_type, repo_id, async |t| {
            self.commits_of(t, repo_id, revision, &mut stop).await
        })
        .await
    }

    async fn commits_of(
        &self,
        repo_type: RepoType,
        repo_id: &RepoId,
        revision: &str,
        stop: &mut impl FnMut(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>, HubError> {
        let url = format!(
            "{}/commits/{}",
            self.api_url(repo_type, repo_id),
            quote_revision(revision)
        );
        let target = Target::repo(repo_type, repo_id).at(revision);
        let mut commits = Vec::new();
        let mut seen = HashSet::from([url.clone()]);
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
            next = self.next_page(&url, &headers, &mut seen)?;
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
        commit: &CommitId,
    ) -> Result<bool, HubError> {
        let history = self
            .list_commits_until(repo_type, repo_id, revision, |c| c.id == *commit)
            .await?;
        Ok(history.last().is_some_and(|c| c.id == *commit))
    }

    /// Adds "did you mean" to a [`HubError::RepoNotFound`]: the closest name
    /// among the owner's repositories of that type
    /// (`GET /api/{type}s?author={owner}`), if one is close enough. Any failure
    /// of that listing leaves the error as it is.
    pub async fn with_suggestion(&self, err: HubError) -> HubError {
        let HubError::RepoNotFound {
            target,
            mut response,
        } = err
        else {
            return err;
        };
        if response.suggestion.is_none() {
            response.suggestion = self.suggest_repo(target.repo_type, &target.repo_id).await;
        }
        HubError::RepoNotFound { target, response }
    }

    async fn suggest_repo(&self, repo_type: RepoType, repo_id: &RepoId) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Listed {
            id: String,
        }
        let (owner, name) = repo_id.as_str().split_once('/')?;
        let url = format!(
            "{}/api/{}?author={}&limit=1000",
            self.endpoint,
            repo_type.api_segment(),
            quote_revision(owner)
        );
        let (body, _) = self.get_document_once(&url, None).await.ok()?;
        let listed: Vec<Listed> = serde_json::from_slice(&body).ok()?;
        let wanted = name.to_ascii_lowercase();
        listed
            .into_iter()
            .filter_map(|r| {
                let (o, n) = r.id.split_once('/')?;
                let distance = strsim::levenshtein(&wanted, &n.to_ascii_lowercase());
                let close = distance <= (wanted.chars().count() / 3).max(2);
                (o.eq_ignore_ascii_case(owner) && n != name && close)
                    .then(|| (distance, kernels_types::text::safe(&r.id)))
            })
            .min()
            .map(|(_, id)| id)
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
    /// is encoded as one segment and the path keeps its `/`. A `model`
    /// repository found only through the `kernel` API
    /// ([`HubClient::with_kernel_fallback`]) gets the `kernel` prefix.
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
            self.api_type(repo_type, repo_id).url_prefix(),
            repo_id,
            quote_revision(revision),
            quote_path(path)
        )
    }
}

fn too_large(url: &str) -> HubError {
    HubError::InvalidResponse {
        url: url.to_owned(),
        detail: format!(
            "the answer is larger than {} MiB, more than any Hub API answer",
            MAX_DOCUMENT_BYTES >> 20
        ),
    }
}

/// Certificates to trust besides the built-in roots; an unreadable or empty
/// file given explicitly is an error naming it.
fn root_certificates(network: &NetworkConfig) -> Result<Vec<reqwest::Certificate>, HubError> {
    let bad = |path: &std::path::Path, detail: String| HubError::InvalidResponse {
        url: path.display().to_string(),
        detail: format!("cannot use this CA certificate file: {detail}"),
    };
    let mut certs = Vec::new();
    if network.system_roots
        && let Some(bundle) = SYSTEM_CA_FILES
            .iter()
            .map(std::path::Path::new)
            .find(|p| p.is_file())
        && let Ok(bytes) = fs_err::read(bundle)
    {
        certs.extend(reqwest::Certificate::from_pem_bundle(&bytes).unwrap_or_default());
    }
    for path in &network.extra_roots {
        if path.is_dir() {
            let entries = fs_err::read_dir(path).map_err(|e| bad(path, e.to_string()))?;
            for entry in entries.flatten() {
                if let Ok(bytes) = fs_err::read(entry.path()) {
                    certs.extend(reqwest::Certificate::from_pem_bundle(&bytes).unwrap_or_default());
                }
            }
        } else {
            let bytes = fs_err::read(path).map_err(|e| bad(path, e.to_string()))?;
            let found = reqwest::Certificate::from_pem_bundle(&bytes)
                .map_err(|e| bad(path, e.to_string()))?;
            if found.is_empty() {
                return Err(bad(path, "no PEM certificate in it".to_owned()));
            }
            certs.extend(found);
        }
    }
    Ok(certs)
}

fn proxies(network: &NetworkConfig) -> Result<Vec<reqwest::Proxy>, HubError> {
    let no_proxy = network
        .no_proxy
        .as_deref()
        .and_then(reqwest::NoProxy::from_string);
    let mut out = Vec::new();
    let bad = |url: &str, err: reqwest::Error| HubError::InvalidResponse {
        url: without_credentials(url),
        detail: format!("invalid proxy URL: {}", err.without_url()),
    };
    let entries = [
        (&network.https_proxy, 0),
        (&network.http_proxy, 1),
        (&network.all_proxy, 2),
    ];
    for (url, kind) in entries {
        if let Some(url) = url {
            let proxy = match kind {
                0 => reqwest::Proxy::https(url.as_str()),
                1 => reqwest::Proxy::http(url.as_str()),
                _ => reqwest::Proxy::all(url.as_str()),
            }
            .map_err(|e| bad(url, e))?;
            out.push(proxy.no_proxy(no_proxy.clone()));
        }
    }
    Ok(out)
}

/// A proxy URL as shown in messages: no user name or password.
fn without_credentials(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string().trim_end_matches('/').to_owned()
        }
        Err(_) => url.to_owned(),
    }
}

/// Whether curl-style `no_proxy` exempts `host`.
fn no_proxy_matches(no_proxy: &str, host: &str) -> bool {
    no_proxy.split(',').map(str::trim).any(|entry| {
        let entry = entry.trim_start_matches('.').trim_start_matches("*.");
        entry == "*"
            || (!entry.is_empty()
                && (host.eq_ignore_ascii_case(entry)
                    || host
                        .to_ascii_lowercase()
                        .ends_with(&format!(".{}", entry.to_ascii_lowercase()))))
    })
}

impl HubClient {
    /// The proxy a request to `url` goes through, if any (for messages).
    fn proxy_for(&self, url: &Url) -> Option<String> {
        let net = &self.network;
        let host = url.host_str().unwrap_or_default();
        if net
            .no_proxy
            .as_deref()
            .is_some_and(|n| no_proxy_matches(n, host))
        {
            return None;
        }
        let specific = match url.scheme() {
            "https" => &net.https_proxy,
            _ => &net.http_proxy,
        };
        specific
            .as_ref()
            .or(net.all_proxy.as_ref())
            .map(|p| without_credentials(p))
    }

    /// A transport error, naming the proxy when the connection went through
    /// one, or the certificate when TLS refused it.
    pub(crate) fn transport_error(&self, url: &Url, source: reqwest::Error) -> HubError {
        let source = TransportError::new(source);
        if source.kind() == TransportKind::Certificate {
            return HubError::Certificate {
                url: url.to_string(),
                source,
            };
        }
        match self.proxy_for(url) {
            Some(proxy) if source.is_connect() => HubError::Proxy {
                url: url.to_string(),
                proxy,
                source,
            },
            _ => HubError::Transport {
                url: url.to_string(),
                source,
            },
        }
    }
}

/// The token and how to obtain its final value (see [`crate::auth`]).
#[derive(Debug)]
struct Auth {
    given: Option<HeaderValue>,
    given_text: Option<String>,
    source: TokenSource,
    /// Where the token comes from, for messages.
    origin: String,
    resolved: tokio::sync::OnceCell<Option<HeaderValue>>,
}

/// The `Authorization` value of `token`, from `origin` (for the error).
fn bearer(token: &str, origin: &str) -> Result<HeaderValue, HubError> {
    let mut value =
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| HubError::InvalidToken {
            origin: origin.to_owned(),
        })?;
    value.set_sensitive(true);
    Ok(value)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl HubClient {
    /// Whether requests to the Hub carry a token.
    fn has_token(&self) -> bool {
        self.auth.given.is_some() || matches!(self.auth.source, TokenSource::Oidc { .. })
    }

    /// The `Authorization` value for Hub origins, refreshed or exchanged once.
    async fn token_header(&self) -> Result<Option<HeaderValue>, HubError> {
        if matches!(self.auth.source, TokenSource::Given) || self.offline {
            return Ok(self.auth.given.clone());
        }
        self.auth
            .resolved
            .get_or_try_init(|| self.resolve_token())
            .await
            .cloned()
    }

    async fn resolve_token(&self) -> Result<Option<HeaderValue>, HubError> {
        let url = format!("{}/oauth/token", self.endpoint);
        match &self.auth.source {
            TokenSource::Given => Ok(self.auth.given.clone()),
            TokenSource::StoredFile {
                token_path,
                client_id,
            } => {
                let Some(token) = &self.auth.given_text else {
                    return Ok(None);
                };
                let exchange = |refresh_token: String| {
                    let body = url::form_urlencoded::Serializer::new(String::new())
                        .append_pair("grant_type", "refresh_token")
                        .append_pair("refresh_token", &refresh_token)
                        .append_pair("client_id", client_id)
                        .finish();
                    let request = self
                        .http
                        .post(&url)
                        .header("content-type", "application/x-www-form-urlencoded")
                        .body(body);
                    self.token_exchange(request, &url)
                };
                match crate::auth::refresh_stored(token, token_path, unix_now(), exchange).await {
                    Ok(fresh) if fresh == *token => Ok(self.auth.given.clone()),
                    Ok(fresh) => {
                        self.emit(&HubEvent::TokenRefreshed);
                        bearer(&fresh, &self.auth.origin).map(Some)
                    }
                    Err(reason) => {
                        self.emit(&HubEvent::TokenRefreshFailed { reason });
                        Ok(self.auth.given.clone())
                    }
                }
            }
            TokenSource::Oidc {
                resource,
                id_token,
                github,
            } => {
                let subject = match (id_token, github) {
                    (Some(token), _) => token.clone(),
                    (None, Some((request_url, request_token))) => {
                        self.github_id_token(request_url, request_token).await?
                    }
                    (None, None) => {
                        return Err(crate::auth::oidc_error(
                            &url,
                            "no id token: set HF_OIDC_ID_TOKEN, or run in GitHub Actions with `permissions: id-token: write`",
                        ));
                    }
                };
                let body = serde_json::json!({
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "subject_token": subject,
                    "resource": resource,
                });
                let request = self.http.post(&url).json(&body);
                let response = self
                    .token_exchange(request, &url)
                    .await
                    .map_err(|detail| crate::auth::oidc_error(&url, detail))?;
                bearer(&response.access_token, "the OIDC token exchange").map(Some)
            }
        }
    }

    /// One `/oauth/token` exchange, bounded by the API deadline and the
    /// document cap; the error is a one-line reason.
    async fn token_exchange(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<crate::auth::TokenResponse, String> {
        let deadline = self.retry.api_timeout;
        let response = tokio::time::timeout(deadline, request.send())
            .await
            .map_err(|_| format!("no answer from {url} within {} s", deadline.as_secs_f64()))?
            .map_err(|err| format!("{url}: {}", err.without_url()))?;
        let status = response.status();
        let body = read_capped(response, 64 << 10, deadline).await;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            return Err(format!(
                "HTTP {} from {url}: {}",
                status.as_u16(),
                kernels_types::text::safe(&text)
            ));
        }
        serde_json::from_slice(&body).map_err(|err| format!("unexpected answer from {url}: {err}"))
    }

    /// Mints an id token from GitHub Actions (audience: the Hub endpoint).
    async fn github_id_token(&self, request_url: &str, bearer: &str) -> Result<String, HubError> {
        #[derive(serde::Deserialize)]
        struct Minted {
            value: String,
        }
        let mut url = Url::parse(request_url)
            .map_err(|err| crate::auth::oidc_error(request_url, err.to_string()))?;
        url.query_pairs_mut()
            .append_pair("audience", &self.endpoint);
        let deadline = self.retry.api_timeout;
        let response = tokio::time::timeout(
            deadline,
            self.http
                .get(url.clone())
                .header(AUTHORIZATION, format!("Bearer {bearer}"))
                .send(),
        )
        .await
        .map_err(|_| crate::auth::oidc_error(request_url, "no answer from GitHub"))?
        .map_err(|err| crate::auth::oidc_error(request_url, err.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(crate::auth::oidc_error(
                request_url,
                format!("GitHub answered HTTP {}", response.status().as_u16()),
            ));
        }
        let body = read_capped(response, 64 << 10, deadline).await;
        serde_json::from_slice::<Minted>(&body)
            .map(|m| m.value)
            .map_err(|err| crate::auth::oidc_error(request_url, err.to_string()))
    }
}

/// Reads at most `cap` bytes of a body within `deadline`; what arrived is kept
/// when the body ends, fails, or the time is up.
async fn read_capped(mut response: reqwest::Response, cap: usize, deadline: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    let _ = tokio::time::timeout(deadline, async {
        while let Ok(Some(chunk)) = response.chunk().await {
            let room = cap - body.len();
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if body.len() >= cap {
                break;
            }
        }
    })
    .await;
    body
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
            token_source: Default::default(),
            token_origin: None,
            network: Default::default(),
            offline,
            retry: RetryPolicy {
                max_retries: 0,
                etag_timeout: second,
                download_timeout: second,
                stall_timeout: second,
                api_timeout: second,
                max_wait: second,
            },
            events: None,
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
            Err(HubError::InvalidToken { .. })
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
