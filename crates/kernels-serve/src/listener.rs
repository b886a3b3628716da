//! Accepting and running connections, with the limits a server on a shared
//! network needs.
//!
//! * Every accepted socket gets `TCP_NODELAY` (small answers are not held back
//!   by Nagle's algorithm waiting for a delayed ACK) and TCP keep-alive probes.
//! * **Header-read timeout**: a connection that has started sending a request
//!   head must finish it in time, however slowly it trickles bytes.
//! * **Idle timeout**: a connection with no request in flight and no bytes
//!   of a new one is closed after that long; so is one whose response has not
//!   moved a byte for that long (a client that stopped reading).
//! * **Connection cap**, shared by every listener: when it is reached, the
//!   longest-idle connection without a request in flight is closed to make
//!   room (what nginx does with its keep-alive connections); when every
//!   connection is busy, the new one is answered `503` with `Retry-After` and
//!   closed. So idle or slow connections cannot lock legitimate clients out.
//!   Running out of file descriptors is treated the same way.
//!
//! HTTP/1.1 only, with keep-alive (hyper's connection driver).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::access_log::Entry;
use super::control::Listener;
use super::reload::Shared;

/// Connection limits (`kernels serve --header-timeout`, `--idle-timeout`,
/// `--max-connections`, `--retry-after`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time a client has to send a whole request head once it has started.
    pub header_timeout: Duration,
    /// Time a connection may sit without a request, or without progress.
    pub idle_timeout: Duration,
    /// Open connections over all listeners.
    pub max_connections: usize,
    /// `Retry-After` seconds of the `503` beyond the cap.
    pub retry_after: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            retry_after: 1,
        }
    }
}

/// `busy` value of a connection chosen for eviction.
const EVICTED: u32 = u32::MAX;
/// Connections being answered `503` at once; more are closed unanswered.
const MAX_REJECTING: usize = 64;

/// State of one connection, shared by its driver, its I/O and its requests.
struct Conn {
    /// Requests in flight (response not yet fully sent), or [`EVICTED`].
    busy: AtomicU32,
    /// Last byte read or written (ms since [`Tracker::epoch`]).
    last_io: AtomicU64,
    /// When the connection last became idle (opened, or a response finished).
    idle_since: AtomicU64,
    /// 1 + when the first byte of a new request head arrived; 0: none yet.
    head_started: AtomicU64,
    kill: tokio::sync::Notify,
}

impl Conn {
    /// Counts a request in, unless the connection is being evicted.
    fn begin(&self, now: u64) -> bool {
        let ok = self
            .busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b != EVICTED).then_some(b + 1)
            })
            .is_ok();
        self.head_started.store(0, Ordering::Release);
        self.last_io.store(now, Ordering::Release);
        ok
    }

    fn end(&self, now: u64) {
        self.idle_since.store(now, Ordering::Release);
        self.last_io.store(now, Ordering::Release);
        let _ = self
            .busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b != EVICTED && b > 0).then(|| b - 1)
            });
    }

    /// Whether a limit says the connection must close now.
    fn expired(&self, now: u64, limits: &Limits) -> bool {
        let ms = |d: Duration| d.as_millis() as u64;
        match self.busy.load(Ordering::Acquire) {
            EVICTED => true,
            0 => match self.head_started.load(Ordering::Acquire) {
                0 => {
                    now.saturating_sub(self.idle_since.load(Ordering::Acquire))
                        >= ms(limits.idle_timeout)
                }
                started => now.saturating_sub(started - 1) >= ms(limits.header_timeout),
            },
            _ => {
                now.saturating_sub(self.last_io.load(Ordering::Acquire)) >= ms(limits.idle_timeout)
            }
        }
    }
}

/// Every open connection of the server.
pub(crate) struct Tracker {
    limits: Limits,
    epoch: Instant,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    rejecting: AtomicUsize,
    drained: tokio::sync::Notify,
}

impl Tracker {
    pub(crate) fn new(limits: Limits) -> Tracker {
        Tracker {
            limits,
            epoch: Instant::now(),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            rejecting: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a connection if there is room (making room by evicting an
    /// idle one if needed); `None` when every connection is busy.
    fn admit(&self) -> Option<(u64, Arc<Conn>)> {
        let mut conns = self.lock();
        if conns.len() >= self.limits.max_connections && !Self::evict_locked(&mut conns) {
            return None;
        }
        let now = self.now();
        let conn = Arc::new(Conn {
            busy: AtomicU32::new(0),
            last_io: AtomicU64::new(now),
            idle_since: AtomicU64::new(now),
            head_started: AtomicU64::new(0),
            kill: tokio::sync::Notify::new(),
        });
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        conns.insert(id, conn.clone());
        Some((id, conn))
    }

    /// Closes the longest-idle connection without a request in flight.
    fn evict_locked(conns: &mut HashMap<u64, Arc<Conn>>) -> bool {
        let mut candidates: Vec<(u64, u64)> = conns
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
            .map(|(&id, c)| (c.idle_since.load(Ordering::Acquire), id))
            .collect();
        candidates.sort_unstable();
        for (_, id) in candidates {
            let Some(conn) = conns.get(&id) else { continue };
            if conn
                .busy
                .compare_exchange(0, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                conn.kill.notify_one();
                conns.remove(&id);
                return true;
            }
        }
        false
    }

    fn evict_one(&self) -> bool {
        Self::evict_locked(&mut self.lock())
    }

    fn remove(&self, id: u64) {
        let mut conns = self.lock();
        conns.remove(&id);
        if conns.is_empty() {
            self.drained.notify_waiters();
        }
    }

    /// Waits until every connection has closed.
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.drained.notified();
            if self.lock().is_empty() {
                return;
            }
            notified.await;
        }
    }

    fn tick(&self) -> Duration {
        (self.limits.header_timeout.min(self.limits.idle_timeout) / 4)
            .clamp(Duration::from_millis(20), Duration::from_secs(1))
    }
}

/// Lowers the connection cap to what the file-descriptor limit allows, after
/// raising the soft limit to the hard one. Returns the cap to use.
pub(crate) fn fit_to_fd_limit(max_connections: usize) -> usize {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut limit = getrlimit(Resource::Nofile);
        if let Some(hard) = limit.maximum
            && limit.current.is_some_and(|soft| soft < hard)
        {
            let raised = rustix::process::Rlimit {
                current: Some(hard),
                maximum: Some(hard),
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                limit = getrlimit(Resource::Nofile);
            }
        }
        // Keep descriptors for listeners, mirror files being streamed, the
        // log and the runtime, and for the 503 answers beyond the cap.
        if let Some(soft) = limit.current {
            let reserve = 64 + MAX_REJECTING as u64;
            let room = soft.saturating_sub(reserve).max(1) / 2;
            return max_connections.min(room.max(1) as usize);
        }
    }
    max_connections
}

/// Accepts connections on `listener` until `stop` turns true.
pub(crate) async fn run(
    listener: TcpListener,
    kind: Listener,
    shared: Arc<Shared>,
    tracker: Arc<Tracker>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => return,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(err) if is_per_connection(&err) => continue,
            Err(err) => {
                // Out of descriptors (or memory): free an idle connection if
                // there is one, else wait a little instead of spinning.
                tracing::warn!("accept failed: {err}");
                if !tracker.evict_one() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        configure(&stream);
        match tracker.admit() {
            Some((id, conn)) => {
                let (shared, tracker, stop) = (shared.clone(), tracker.clone(), stop.clone());
                tokio::spawn(async move {
                    serve_connection(stream, peer, kind, shared, &tracker, conn, stop).await;
                    tracker.remove(id);
                });
            }
            None => {
                if tracker.rejecting.fetch_add(1, Ordering::AcqRel) >= MAX_REJECTING {
                    tracker.rejecting.fetch_sub(1, Ordering::AcqRel);
                    drop(stream);
                    continue;
                }
                let (shared, tracker) = (shared.clone(), tracker.clone());
                tokio::spawn(async move {
                    reject(stream, peer, &shared, &tracker).await;
                    tracker.rejecting.fetch_sub(1, Ordering::AcqRel);
                });
            }
        }
    }
}

fn is_per_connection(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        err.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    )
}

/// `TCP_NODELAY` and keep-alive probes on an accepted socket.
fn configure(stream: &TcpStream) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {err}");
    }
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(60))
        .with_interval(Duration::from_secs(15));
    if let Err(err) = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive) {
        tracing::debug!("cannot enable TCP keep-alive: {err}");
    }
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    kind: Listener,
    shared: Arc<Shared>,
    tracker: &Arc<Tracker>,
    conn: Arc<Conn>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let io = TokioIo::new(Tracked {
        inner: stream,
        conn: conn.clone(),
        tracker: tracker.clone(),
    });
    let service = {
        let (conn, tracker) = (conn.clone(), tracker.clone());
        hyper::service::service_fn(move |req: Request<Incoming>| {
            handle(
                req,
                peer,
                kind,
                shared.clone(),
                conn.clone(),
                tracker.clone(),
            )
        })
    };
    let driver = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // Our own header timer (in `Conn::expired`) does not count the idle
        // wait before a request as header time; hyper's would.
        .header_read_timeout(None)
        .keep_alive(true)
        // A client that shuts its write side after the request (`nc -N`,
        // `shutdown(SHUT_WR)`) still gets the answer: without this, hyper
        // closes the connection at the EOF before the answer is written.
        .half_close(true)
        .serve_connection(io, service);
    tokio::pin!(driver);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = driver.as_mut() => break,
            () = conn.kill.notified() => break,
            _ = stop.wait_for(|s| *s), if !stopping => {
                // Finish the request in flight, then close.
                driver.as_mut().graceful_shutdown();
                stopping = true;
            }
            () = tokio::time::sleep(tracker.tick()) => {
                if conn.expired(tracker.now(), &tracker.limits) {
                    break;
                }
            }
        }
    }
}

/// Answers the requests of one connection beyond the cap with `503`.
async fn reject(stream: TcpStream, peer: SocketAddr, shared: &Arc<Shared>, tracker: &Tracker) {
    let retry_after = tracker.limits.retry_after;
    let shared = shared.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let entry = shared.access_log().map(|_| Entry::new(peer, &req));
        let resp = overloaded(retry_after);
        let guard = Guard {
            conn: None,
            tracker: None,
            log: entry.map(|e| (e, shared.clone())),
            status: resp.status().as_u16(),
            bytes: 0,
        };
        let resp = resp.map(|inner| Guarded { inner, guard });
        async move { Ok::<_, Infallible>(resp) }
    });
    let driver = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .half_close(true)
        .serve_connection(TokioIo::new(stream), service);
    let deadline = tracker.limits.header_timeout.min(Duration::from_secs(5));
    let _ = tokio::time::timeout(deadline, driver).await;
}

fn overloaded(retry_after: u64) -> Response<Body> {
    let message = "The server is at its connection limit; try again later.";
    let mut resp = Response::new(Body::from(
        serde_json::json!({ "error": message }).to_string(),
    ));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    headers.insert("x-error-message", HeaderValue::from_static(message));
    resp
}

async fn handle(
    req: Request<Incoming>,
    peer: SocketAddr,
    kind: Listener,
    shared: Arc<Shared>,
    conn: Arc<Conn>,
    tracker: Arc<Tracker>,
) -> Result<Response<Guarded>, Infallible> {
    let admitted = conn.begin(tracker.now());
    let entry = shared.access_log().map(|_| Entry::new(peer, &req));
    let mut guard = Guard {
        conn: admitted.then_some(conn),
        tracker: Some(tracker.clone()),
        log: entry.map(|e| (e, shared.clone())),
        status: 0,
        bytes: 0,
    };
    let resp = if admitted {
        let app = shared.app();
        super::dispatch(State(app), kind, req.map(Body::new)).await
    } else {
        overloaded(tracker.limits.retry_after)
    };
    guard.status = resp.status().as_u16();
    Ok(resp.map(|inner| Guarded { inner, guard }))
}

/// Ends a request when its response body is done or dropped: counts it out
/// of its connection and writes its access-log line.
struct Guard {
    conn: Option<Arc<Conn>>,
    tracker: Option<Arc<Tracker>>,
    log: Option<(Entry, Arc<Shared>)>,
    status: u16,
    bytes: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let (Some(conn), Some(tracker)) = (&self.conn, &self.tracker) {
            conn.end(tracker.now());
        }
        if let Some((entry, shared)) = &self.log
            && let Some(log) = shared.access_log()
        {
            log.write(entry.line(self.status, self.bytes));
        }
    }
}

/// A response body that counts its bytes and carries the request's [`Guard`].
pub(crate) struct Guarded {
    inner: Body,
    guard: Guard,
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.guard.bytes += data.len() as u64;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The socket, noting when bytes move (for the idle and header timers).
struct Tracked {
    inner: TcpStream,
    conn: Arc<Conn>,
    tracker: Arc<Tracker>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let now = this.tracker.now();
            this.conn.last_io.store(now, Ordering::Release);
            if this.conn.busy.load(Ordering::Acquire) == 0 {
                let _ = this.conn.head_started.compare_exchange(
                    0,
                    now + 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
            }
        }
        polled
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.conn
                .last_io
                .store(this.tracker.now(), Ordering::Release);
        }
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            this.conn
                .last_io
                .store(this.tracker.now(), Ordering::Release);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
