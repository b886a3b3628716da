//! `kernels serve`: a read-only Hugging Face Hub over a mirror directory.
//!
//! Two listeners run side by side:
//!
//! * the **Hub** (`http://<host>:<port>`, default `127.0.0.1` and a free port):
//!   `/api/{kernels,models}/<owner>/<name>[/refs|/revision/<rev>|/tree/<rev>[/<path>]]`,
//!   `/[kernels/]<owner>/<name>/resolve/<rev>/<path>`, `/api/resolve-cache/…`,
//!   `/api/agent-harnesses` and `/api/organizations/<org>/overview`;
//! * the **LFS CDN** on the host name `localhost` (bound on `127.0.0.1` and, when
//!   available, `::1`, same port): `/lfs/<sha256>`. LFS files on the Hub answer
//!   with a `302` there. The host name differs from the Hub's on purpose:
//!   `huggingface_hub` 1.30–2.1 compare host names, not ports, when deciding
//!   whether to follow a redirect during the metadata `HEAD`.
//!
//! Routing works on the raw request path (a revision such as
//! `refs%2Fheads%2Fv1` is one segment), and captured segments are
//! percent-decoded afterwards. Every error carries `X-Error-Code`,
//! because `huggingface_hub` maps errors by that header first and its URL-based
//! fallback never matches `http://` endpoints.

pub mod access_log;
mod cdn;
pub mod content;
pub mod control;
mod glob;
mod hub;
pub mod listener;
pub mod mirror;
mod reload;
mod small_files;
pub mod writer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::body::HttpBody as _;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use kernels_types::CommitId;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

pub use access_log::AccessLogTarget;
use control::{Control, Faults, Listener, LogEntry, StatusFault};
pub use listener::Limits;
pub use mirror::{Mirror, MirrorError};
pub use reload::ReloadEvent;

/// Options of [`serve`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Mirror root.
    pub mirror_dir: PathBuf,
    /// Address of the Hub listener.
    pub host: String,
    /// Port of the Hub listener (0: any free port).
    pub port: u16,
    /// Port of the CDN listener (0: any free port).
    pub cdn_port: u16,
    /// Host name of the CDN listener, used both to bind and in redirect URLs.
    /// `None`: `localhost` (bound on `127.0.0.1` and `::1`), or `127.0.0.1`
    /// when the Hub itself is on `localhost`. It must differ from the host name
    /// clients use for the Hub (see the module docs).
    pub cdn_host: Option<String>,
    /// Tree listing page size; `None` means the Hub's 1000 (50 with `expand=true`).
    pub page_size: Option<usize>,
    /// Serve `/__fixture/…` (request log, fault rules). Tests only.
    pub test_control: bool,
    /// Let the CDN accept requests carrying `Authorization` (rejected with 400 by default).
    pub cdn_allow_auth: bool,
    /// Answer non-LFS downloads with a relative `307` to `/api/resolve-cache/…`
    /// (the current Hub's behaviour) instead of a direct `200`.
    pub resolve_cache: bool,
    /// Base URL of the Hub in absolute URLs the server writes (the next-page
    /// `Link`); `None`: the listener's own URL. Never taken from `Host`.
    pub public_url: Option<String>,
    /// Base URL of the CDN in LFS redirects; `None`: the CDN listener's URL.
    pub cdn_public_url: Option<String>,
    /// Timeouts and the connection cap.
    pub limits: Limits,
    /// Where to write the access log, if anywhere.
    pub access_log: Option<AccessLogTarget>,
    /// Poll the mirror for changes this often and reload it (`--watch`).
    /// `SIGHUP` reloads in any case.
    pub watch: Option<Duration>,
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ServeError {
    /// The mirror is malformed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Mirror(#[from] MirrorError),
    /// A listener could not bind.
    #[error("cannot listen on {addr}: {source}")]
    #[diagnostic(
        code(kernels::serve::bind),
        help(
            "choose another address or port (`--host`, `--port`, `--cdn-port`); port 0 picks a free one"
        )
    )]
    Bind {
        /// The address that failed.
        addr: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A `--public-url` or `--cdn-public-url` is not a usable base URL.
    #[error("`{url}` is not a usable public URL: {problem}")]
    #[diagnostic(
        code(kernels::serve::public_url),
        help(
            "give the scheme, host and optional port and path clients use, e.g. `https://hub.example.internal`"
        )
    )]
    PublicUrl {
        /// The value given.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The access log cannot be opened.
    #[error("cannot open the access log {path}: {source}")]
    #[diagnostic(code(kernels::serve::access_log))]
    AccessLog {
        /// The path given.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A listener failed while running.
    #[error("the server failed: {0}")]
    #[diagnostic(code(kernels::serve::io))]
    Io(#[from] std::io::Error),
}

/// Base URLs of a running server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// Hub base URL written into answers: `--public-url`, else `hub_local`.
    pub hub: String,
    /// CDN base URL written into LFS redirects: `--cdn-public-url`, else `cdn_local`.
    pub cdn: String,
    /// URL of the Hub listener as bound, e.g. `http://127.0.0.1:41234`.
    pub hub_local: String,
    /// URL of the CDN listener as bound, e.g. `http://localhost:41235`.
    pub cdn_local: String,
}

/// A `--public-url` value without its trailing `/`.
fn public_base(url: &str) -> Result<String, ServeError> {
    let bad = |problem: &str| ServeError::PublicUrl {
        url: url.to_owned(),
        problem: problem.to_owned(),
    };
    let parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("the scheme must be http or https"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() || !parsed.username().is_empty() {
        return Err(bad("it must not have a query, fragment or user name"));
    }
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// Shared state of both listeners.
pub(crate) struct App {
    mirror: Mirror,
    endpoints: Endpoints,
    page_size: Option<usize>,
    test_control: bool,
    cdn_allow_auth: bool,
    resolve_cache: bool,
    /// Per-process key of the (fake) signed CDN URLs.
    secret: [u8; 16],
    /// Request log and fault rules; they outlive reloads.
    control: Arc<Control>,
    next_request: Arc<AtomicU64>,
    /// Small files of this mirror held in memory (a reload starts afresh).
    small_files: Arc<small_files::SmallFiles>,
}

impl App {
    /// The same server state over another mirror (a reload).
    fn with_mirror(&self, mirror: Mirror) -> App {
        App {
            mirror,
            endpoints: self.endpoints.clone(),
            page_size: self.page_size,
            test_control: self.test_control,
            cdn_allow_auth: self.cdn_allow_auth,
            resolve_cache: self.resolve_cache,
            secret: self.secret,
            control: self.control.clone(),
            next_request: self.next_request.clone(),
            small_files: Arc::default(),
        }
    }

    /// Signature of a CDN URL for an object.
    fn signature(&self, sha256: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.secret);
        h.update(sha256.as_bytes());
        hex::encode(h.finalize())
    }
}

/// A JSON API error (`{"error": message}` plus `X-Error-Code`/`X-Error-Message`).
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: Option<&'static str>,
    message: String,
    repo_commit: Option<CommitId>,
}

impl ApiError {
    fn new(status: StatusCode, code: Option<&'static str>, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            repo_commit: None,
        }
    }

    /// Unknown or hidden repo: 401 without credentials (as the Hub does), 404 with.
    fn repo_not_found(authorized: bool) -> Self {
        let status = if authorized {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::UNAUTHORIZED
        };
        Self::new(status, Some("RepoNotFound"), "Repository not found")
    }

    fn revision_not_found(rev: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            Some("RevisionNotFound"),
            format!("Invalid rev id: {rev}"),
        )
    }

    fn entry_not_found(repo_commit: Option<CommitId>) -> Self {
        ApiError {
            repo_commit,
            ..Self::new(
                StatusCode::NOT_FOUND,
                Some("EntryNotFound"),
                "Entry not found",
            )
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, None, message)
    }

    fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, None, "Not Found")
    }

    fn into_response(self, request_id: &str) -> Response {
        let mut resp = (
            self.status,
            axum::Json(serde_json::json!({ "error": self.message })),
        )
            .into_response();
        let headers = resp.headers_mut();
        if let Some(code) = self.code {
            headers.insert("x-error-code", HeaderValue::from_static(code));
        }
        headers.insert("x-error-message", header_value(&self.message));
        headers.insert("x-request-id", header_value(request_id));
        if let Some(sha) = &self.repo_commit {
            headers.insert("x-repo-commit", header_value(sha.as_str()));
            headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            headers.insert(header::VARY, HeaderValue::from_static("Origin, Accept"));
        }
        resp
    }
}

/// A header value from arbitrary text, replacing characters HTTP does not allow.
pub(crate) fn header_value(text: &str) -> HeaderValue {
    let clean: String = text
        .chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect();
    HeaderValue::from_str(&clean).unwrap_or_else(|_| HeaderValue::from_static("?"))
}

/// Runs the server until SIGINT or SIGTERM. `on_ready` is called once both
/// listeners are bound and the mirror is loaded (the CLI prints the endpoints
/// there); `on_reload` after every reload (`SIGHUP`, `--watch`).
pub async fn serve(
    options: ServeOptions,
    on_ready: impl FnOnce(&Endpoints, &Mirror),
    on_reload: impl Fn(ReloadEvent) + Send + Sync + 'static,
) -> Result<(), ServeError> {
    let public_hub = options.public_url.as_deref().map(public_base).transpose()?;
    let public_cdn = options
        .cdn_public_url
        .as_deref()
        .map(public_base)
        .transpose()?;
    let access_log = start_access_log(&options)?;
    let dir = options.mirror_dir.clone();
    let mirror = tokio::task::spawn_blocking(move || Mirror::load(&dir))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;

    let sockets = Sockets::bind(&options).await?;
    let endpoints = Endpoints {
        hub: public_hub.unwrap_or_else(|| sockets.hub_local.clone()),
        cdn: public_cdn.unwrap_or_else(|| sockets.cdn_local.clone()),
        hub_local: sockets.hub_local.clone(),
        cdn_local: sockets.cdn_local.clone(),
    };
    let mut secret = [0u8; 16];
    rand::fill(&mut secret);
    let app = App {
        mirror,
        endpoints: endpoints.clone(),
        page_size: options.page_size,
        test_control: options.test_control,
        cdn_allow_auth: options.cdn_allow_auth,
        resolve_cache: options.resolve_cache,
        secret,
        control: Arc::default(),
        next_request: Arc::new(AtomicU64::new(1)),
        small_files: Arc::default(),
    };
    let limits = Limits {
        max_connections: listener::fit_to_fd_limit(options.limits.max_connections),
        ..options.limits
    };
    let tracker = Arc::new(listener::Tracker::new(limits));
    let shutdown = shutdown_signal();
    let reloader = reload::Reloader::new(options.mirror_dir.clone(), options.watch);
    on_ready(&endpoints, &app.mirror);
    let shared = Arc::new(reload::Shared::new(app, access_log));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    for (socket, kind) in sockets.listeners() {
        tasks.spawn(listener::run(
            socket,
            kind,
            shared.clone(),
            tracker.clone(),
            stop_rx.clone(),
        ));
    }
    let reloader = tokio::spawn(reload::run(shared.clone(), reloader, on_reload));

    shutdown.await;
    let _ = stop_tx.send(true);
    reloader.abort();
    while tasks.join_next().await.is_some() {}
    // Give in-flight downloads a moment, then stop regardless.
    let _ = tokio::time::timeout(Duration::from_secs(5), tracker.drained()).await;
    Ok(())
}

/// The access log of `options`, started (`None` without `--access-log`).
fn start_access_log(options: &ServeOptions) -> Result<Option<access_log::AccessLog>, ServeError> {
    let Some(target) = &options.access_log else {
        return Ok(None);
    };
    access_log::AccessLog::start(target.clone())
        .map(Some)
        .map_err(|source| ServeError::AccessLog {
            path: match target {
                AccessLogTarget::Stderr => "-".to_owned(),
                AccessLogTarget::File(p) => p.display().to_string(),
            },
            source,
        })
}

/// The bound sockets of the Hub API and the CDN, with the local URLs they
/// answer at.
struct Sockets {
    hub: TcpListener,
    cdn_main: TcpListener,
    /// The CDN on `::1` too, when its host is `localhost` and IPv6 exists.
    cdn_extra: Option<TcpListener>,
    hub_local: String,
    cdn_local: String,
}

impl Sockets {
    /// Binds the Hub on `options.host` and the CDN on `options.cdn_host`
    /// (see [`ServeOptions::cdn_host`] for the default).
    async fn bind(options: &ServeOptions) -> Result<Sockets, ServeError> {
        let hub = bind(&options.host, options.port).await?;
        let hub_addr = hub.local_addr()?;
        let cdn_host = options.cdn_host.clone().unwrap_or_else(|| {
            if options.host.eq_ignore_ascii_case("localhost") {
                "127.0.0.1".to_owned()
            } else {
                "localhost".to_owned()
            }
        });
        let (cdn_main, cdn_extra) = if cdn_host.eq_ignore_ascii_case("localhost") {
            let v4 = bind("127.0.0.1", options.cdn_port).await?;
            let port = v4.local_addr()?.port();
            // `localhost` may resolve to ::1 first; serve there too when IPv6 exists.
            (v4, TcpListener::bind(("::1", port)).await.ok())
        } else {
            (bind(&cdn_host, options.cdn_port).await?, None)
        };
        let cdn_port = cdn_main.local_addr()?.port();
        let cdn_authority = if cdn_host.contains(':') {
            format!("[{cdn_host}]:{cdn_port}")
        } else {
            format!("{cdn_host}:{cdn_port}")
        };
        Ok(Sockets {
            hub,
            cdn_main,
            cdn_extra,
            hub_local: format!("http://{}", hub_authority(&options.host, hub_addr)),
            cdn_local: format!("http://{cdn_authority}"),
        })
    }

    /// Every socket with the listener it serves.
    fn listeners(self) -> impl Iterator<Item = (TcpListener, Listener)> {
        [(self.hub, Listener::Hub), (self.cdn_main, Listener::Cdn)]
            .into_iter()
            .chain(self.cdn_extra.map(|l| (l, Listener::Cdn)))
    }
}

async fn bind(host: &str, port: u16) -> Result<TcpListener, ServeError> {
    TcpListener::bind((host, port))
        .await
        .map_err(|source| ServeError::Bind {
            addr: format!("{host}:{port}"),
            source,
        })
}

/// The Hub's URL authority: a host name is kept as given (clients must see the
/// same name the CDN is distinguished from), an unspecified address becomes
/// the loopback address, other addresses are used as bound.
fn hub_authority(host: &str, addr: SocketAddr) -> String {
    match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() && ip.is_ipv4() => format!("127.0.0.1:{}", addr.port()),
        Ok(ip) if ip.is_unspecified() => format!("[::1]:{}", addr.port()),
        Ok(_) => url_authority(addr),
        Err(_) => format!("{host}:{}", addr.port()),
    }
}

fn url_authority(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.to_string(),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

/// Installs the SIGINT/SIGTERM handlers now and returns a future that completes
/// when one of them arrives. Installing before the endpoint is printed means a
/// signal sent right after that line still shuts the server down gracefully.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut int), Ok(mut term)) => {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Entry point of both listeners: control routes, faults, routing, HEAD
/// handling and the request log.
pub(crate) async fn dispatch(
    State(app): State<Arc<App>>,
    listener: Listener,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    if listener == Listener::Hub && app.test_control && path.starts_with("/__fixture/") {
        return control_route(&app, &parts.method, &path, body).await;
    }
    let request_id = format!(
        "Root=1-{:08x}",
        app.next_request.fetch_add(1, Ordering::Relaxed)
    );
    let method = parts.method.as_str().to_owned();
    let _in_flight = app.test_control.then(|| app.control.enter(listener));
    let faults = if app.test_control {
        app.control.take_faults(listener, &method, &path)
    } else {
        Faults::default()
    };
    if faults.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(faults.latency_ms)).await;
    }
    if faults.reset_connection {
        // A body that fails before its first byte makes the connection close
        // without a response being sent (also for HEAD, hence no `finish`).
        let stream = futures_util::stream::once(async {
            Err::<bytes::Bytes, _>(std::io::Error::other("fault injection: connection reset"))
        });
        log(&app, listener, &parts, 0, Arc::default());
        return Response::new(Body::from_stream(stream));
    }
    let resp = if faults.disable_route {
        ApiError::not_found().into_response(&request_id)
    } else if let Some(redirect) = &faults.redirect {
        let location = redirect.to.clone().unwrap_or_else(|| {
            parts
                .uri
                .path_and_query()
                .map_or_else(|| path.clone(), |pq| pq.as_str().to_owned())
        });
        let status = StatusCode::from_u16(redirect.code).unwrap_or(StatusCode::TEMPORARY_REDIRECT);
        let body = format!("Redirecting to {location}");
        (status, [(header::LOCATION, header_value(&location))], body).into_response()
    } else if let Some((status, retry_after)) = &faults.status {
        canned(status, *retry_after, &request_id)
    } else {
        let result = match listener {
            Listener::Hub => {
                // Only `paths-info` reads a request body (a small form or JSON document).
                let body = if parts.method == axum::http::Method::POST {
                    axum::body::to_bytes(body, 1 << 20)
                        .await
                        .unwrap_or_default()
                } else {
                    bytes::Bytes::new()
                };
                hub::route(&app, &parts, &body, &faults).await
            }
            Listener::Cdn => Ok(cdn::route(&app, &parts, &faults)),
        };
        result.unwrap_or_else(|err| err.into_response(&request_id))
    };
    let mut resp = finish(&app, listener, &parts, resp);
    for name in &faults.drop_headers {
        resp.headers_mut().remove(name.as_str());
    }
    resp
}

/// Adds a request to the log (only kept with `--test-control`).
fn log(
    app: &App,
    listener: Listener,
    parts: &axum::http::request::Parts,
    status: u16,
    bytes: Arc<AtomicU64>,
) {
    if !app.test_control {
        return;
    }
    app.control.record(LogEntry {
        listener,
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: lower_headers(&parts.headers),
        status,
        bytes,
    });
}

/// Strips the body of HEAD answers (keeping `Content-Length`), counts body
/// bytes and logs the request.
fn finish(
    app: &App,
    listener: Listener,
    parts: &axum::http::request::Parts,
    resp: Response,
) -> Response {
    let (mut head, body) = resp.into_parts();
    let bodyless_status = head.status == StatusCode::NOT_MODIFIED || head.status.is_informational();
    if !bodyless_status
        && !head.headers.contains_key(header::CONTENT_LENGTH)
        && let Some(n) = body.size_hint().exact()
    {
        head.headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(n));
    }
    let bytes = Arc::new(AtomicU64::new(0));
    let body = if parts.method == axum::http::Method::HEAD {
        Body::empty()
    } else if !app.test_control {
        // Only the request log counts bytes; an unwrapped body keeps its
        // exact size, so hyper writes a small answer in one go.
        body
    } else {
        let counter = bytes.clone();
        Body::from_stream(body.into_data_stream().map(move |chunk| {
            if let Ok(data) = &chunk {
                counter.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
            chunk
        }))
    };
    log(app, listener, parts, head.status.as_u16(), bytes);
    Response::from_parts(head, body)
}

fn lower_headers(headers: &HeaderMap) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::<String, String>::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        out.entry(name.as_str().to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    out
}

fn canned(status: &StatusFault, retry_after: Option<u64>, request_id: &str) -> Response {
    let (code, headers, body) = match status {
        StatusFault::Code(code) => (*code, Default::default(), None),
        StatusFault::Full {
            code,
            headers,
            body,
        } => (*code, headers.clone(), body.clone()),
    };
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = format!("fault injection: {status}");
    let mut resp = match body {
        Some(body) => (status, body).into_response(),
        None => (status, axum::Json(serde_json::json!({ "error": message }))).into_response(),
    };
    let map = resp.headers_mut();
    map.insert("x-request-id", header_value(request_id));
    if let Some(secs) = retry_after {
        map.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    for (name, value) in headers {
        if let Ok(name) = axum::http::HeaderName::from_bytes(name.as_bytes()) {
            map.insert(name, header_value(&value));
        }
    }
    resp
}

/// `/__fixture/requests|concurrency|reset|faults|refs` (only with `--test-control`).
async fn control_route(app: &App, method: &axum::http::Method, path: &str, body: Body) -> Response {
    use axum::http::Method;
    let json = |value: serde_json::Value| axum::Json(value).into_response();
    match (method, path) {
        (&Method::GET, "/__fixture/requests") => json(app.control.log_json()),
        (&Method::GET, "/__fixture/concurrency") => json(app.control.concurrency_json()),
        (&Method::POST, "/__fixture/reset") => {
            app.control.reset();
            json(serde_json::json!({ "ok": true }))
        }
        (&Method::POST, "/__fixture/refs") => {
            let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
                return (StatusCode::BAD_REQUEST, "unreadable body").into_response();
            };
            match serde_json::from_slice::<control::MoveRef>(&bytes) {
                Ok(mv) => {
                    app.control.move_ref(&mv);
                    json(serde_json::json!({ "ok": true }))
                }
                Err(err) => (
                    StatusCode::BAD_REQUEST,
                    axum::Json(serde_json::json!({ "error": format!("bad ref move: {err}") })),
                )
                    .into_response(),
            }
        }
        (&Method::DELETE, "/__fixture/faults") => {
            app.control.clear_rules();
            json(serde_json::json!({ "ok": true }))
        }
        (&Method::POST, "/__fixture/faults") => {
            let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
                return (StatusCode::BAD_REQUEST, "unreadable body").into_response();
            };
            #[derive(serde::Deserialize)]
            #[serde(untagged)]
            enum OneOrMany {
                Many(Vec<control::FaultRule>),
                One(Box<control::FaultRule>),
            }
            match serde_json::from_slice::<OneOrMany>(&bytes) {
                Ok(rules) => {
                    let rules = match rules {
                        OneOrMany::Many(r) => r,
                        OneOrMany::One(r) => vec![*r],
                    };
                    let n = rules.len();
                    app.control.add_rules(rules);
                    json(serde_json::json!({ "added": n }))
                }
                Err(err) => (
                    StatusCode::BAD_REQUEST,
                    axum::Json(serde_json::json!({ "error": format!("bad fault rule: {err}") })),
                )
                    .into_response(),
            }
        }
        _ => ApiError::not_found().into_response("control"),
    }
}
