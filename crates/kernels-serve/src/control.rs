//! Test-only instrumentation (`--test-control`): the request log and fault
//! injection rules, driven through `/__fixture/…` on the Hub listener.
//!
//! * `GET /__fixture/requests` → JSON array, oldest first, of
//!   `{"listener": "hub"|"cdn", "method", "path" (raw), "query" (raw or null),
//!   "headers": {lower-cased name: value}, "status" (0 = connection reset),
//!   "bytes" (body bytes sent so far), "authorization": bool}`.
//!   Control requests themselves are not logged.
//! * `POST /__fixture/reset` clears the log, every rule and every moved branch.
//! * `POST /__fixture/refs` moves a branch: `{"repo": "acme/relu", "ref": "main",
//!   "to_commit": "<40 hex>"}` (the `move_ref` action does the same when its
//!   rule fires).
//! * `POST /__fixture/faults` adds one rule object or an array of them
//!   (see [`FaultRule`]), for example
//!   `{"listener": "cdn", "path": "/lfs/*", "truncate_after_bytes": 12582912, "count": 1}` or
//!   `{"path": "/api/*/refs", "status": 429, "retry_after": 2}`;
//!   `DELETE /__fixture/faults` removes them all.
//! * `GET /__fixture/concurrency` → `{"hub": {"in_flight", "peak"}, "cdn": {…}}`:
//!   requests of each listener being answered now (from arrival until the
//!   answer's head is ready, injected latency included) and the most seen at
//!   once since the last reset. A client's parallelism is read from `peak`
//!   without timing it.
//!
//! Every rule matching a request applies (their actions combine), and each
//! matching rule's `count` goes down by one.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use kernels_types::CommitId;
use serde::{Deserialize, Serialize};

use super::content::BodyFaults;
use super::glob::fnmatch;

/// Which listener a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Listener {
    /// The Hub API and `/resolve/` listener.
    Hub,
    /// The LFS "CDN" listener.
    Cdn,
}

/// One logged request. `bytes` grows while the body is streamed.
#[derive(Debug)]
pub struct LogEntry {
    /// Listener that served it.
    pub listener: Listener,
    /// HTTP method.
    pub method: String,
    /// Raw (undecoded) path.
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// Headers with lower-cased names; repeated headers are joined with `, `.
    pub headers: BTreeMap<String, String>,
    /// Response status.
    pub status: u16,
    /// Body bytes handed to the connection so far.
    pub bytes: Arc<AtomicU64>,
}

/// JSON shape of a log entry in `GET /__fixture/requests`.
#[derive(Debug, Serialize)]
struct LogRecord<'a> {
    listener: Listener,
    method: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    headers: &'a BTreeMap<String, String>,
    status: u16,
    bytes: u64,
    authorization: bool,
}

/// A canned response: a bare status code or `{code, headers, body}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StatusFault {
    /// Only the status code (500, 502, 503, 504, 408, 429…).
    Code(u16),
    /// Status code with extra headers and a body.
    Full {
        /// Status code.
        code: u16,
        /// Extra response headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Response body (default: a JSON error naming the fault).
        body: Option<String>,
    },
}

/// `corrupt` action: XOR the byte at `offset` (of the file) with `xor`.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Corrupt {
    /// File offset of the byte to flip.
    pub offset: u64,
    /// Mask (default `0xff`).
    #[serde(default = "default_xor")]
    pub xor: u8,
}

fn default_xor() -> u8 {
    0xff
}

/// `stall_after_bytes` action: send `n` body bytes, then pause `ms` milliseconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    /// Body bytes sent before the pause.
    pub n: u64,
    /// Length of the pause in milliseconds.
    pub ms: u64,
}

/// `rate_limit` action: a `429` with `Retry-After` and/or the IETF
/// `RateLimit` / `RateLimit-Policy` headers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// `Retry-After` in seconds.
    pub retry_after_s: Option<u64>,
    /// `RateLimit` header value, e.g. `"api";r=0;t=2`.
    pub ratelimit: Option<String>,
    /// `RateLimit-Policy` header value, e.g. `"api";q=1000;w=300`.
    pub policy: Option<String>,
}

/// `wrong_content_length` action: advertise `Content-Length` off by `delta`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrongLength {
    /// Added to the true length (may be negative).
    pub delta: i64,
}

/// `redirect` action: answer with a redirect instead of the real response.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redirect {
    /// Status code (default `307`).
    #[serde(default = "default_redirect_code")]
    pub code: u16,
    /// `Location` value, relative or absolute (default: the request's own path
    /// and query, so a rule without `count` makes a redirect loop).
    pub to: Option<String>,
}

fn default_redirect_code() -> u16 {
    307
}

/// `move_ref` action: when the rule fires, branch `ref` of `repo` is moved to
/// `to_commit` (for every later request, until `/__fixture/reset`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveRef {
    /// `owner/name`.
    pub repo: String,
    /// Branch name (without `refs/heads/`).
    #[serde(rename = "ref")]
    pub branch: String,
    /// The commit the branch points at afterwards.
    pub to_commit: CommitId,
}

/// A fault rule (`POST /__fixture/faults` takes one rule or an array).
///
/// Matchers: `listener` (`hub`|`cdn`), `method`, `path` (an `fnmatch` glob on
/// the raw path, `*` crossing `/`), and `count` (apply to the first N matching
/// requests only). Actions may be combined in one rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// Only requests on this listener.
    pub listener: Option<Listener>,
    /// Only this method (case-insensitive).
    pub method: Option<String>,
    /// Only raw paths matching this glob.
    pub path: Option<String>,
    /// Apply to at most this many matching requests.
    pub count: Option<u64>,
    /// Delay before answering, in milliseconds.
    pub latency_ms: Option<u64>,
    /// Answer with this status instead of the real response.
    pub status: Option<StatusFault>,
    /// `Retry-After` seconds on the canned response (meant for 429).
    pub retry_after: Option<u64>,
    /// Advertise the full length, send this many body bytes, then cut the connection.
    pub truncate_after_bytes: Option<u64>,
    /// Flip one byte of the body, same length.
    pub corrupt: Option<Corrupt>,
    /// Answer Range requests with `200` and the whole body.
    #[serde(default)]
    pub ignore_range: bool,
    /// Answer every file request with `416`.
    #[serde(default)]
    pub range_416: bool,
    /// Close the connection without answering.
    #[serde(default)]
    pub reset_connection: bool,
    /// Pause once mid-body.
    pub stall_after_bytes: Option<Stall>,
    /// Limit body bytes to this many per second.
    pub throttle_bps: Option<u64>,
    /// Answer `429` with rate-limit headers.
    pub rate_limit: Option<RateLimit>,
    /// Advertise a wrong `Content-Length`.
    pub wrong_content_length: Option<WrongLength>,
    /// Remove these response headers (case-insensitive names).
    #[serde(default)]
    pub drop_headers: Vec<String>,
    /// Gzip the body (`Content-Encoding: gzip`, no `Content-Length`, Range ignored).
    #[serde(default)]
    pub gzip: bool,
    /// Answer with a redirect.
    pub redirect: Option<Redirect>,
    /// Move a branch when the rule fires.
    pub move_ref: Option<MoveRef>,
    /// CDN: reject signed URLs as expired (`403 AccessDenied`).
    #[serde(default)]
    pub cdn_expire_urls: bool,
    /// Add Xet headers (`X-Xet-Hash`, `Link: …; rel="xet-auth"`) to `/resolve/` answers.
    #[serde(default)]
    pub xet_headers: bool,
    /// Answer `404 Not Found` as if the route did not exist.
    #[serde(default)]
    pub disable_route: bool,
}

impl FaultRule {
    fn matches(&self, listener: Listener, method: &str, path: &str) -> bool {
        self.listener.is_none_or(|l| l == listener)
            && self
                .method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(method))
            && self.path.as_deref().is_none_or(|p| fnmatch(p, path))
            && self.count != Some(0)
    }
}

/// The faults that apply to one request (the union of every matching rule).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Total delay before answering.
    pub latency_ms: u64,
    /// Canned status, with `Retry-After` seconds.
    pub status: Option<(StatusFault, Option<u64>)>,
    /// Body changes.
    pub body: BodyFaults,
    /// Serve `200` to Range requests.
    pub ignore_range: bool,
    /// Serve `416` to file requests.
    pub range_416: bool,
    /// Drop the connection.
    pub reset_connection: bool,
    /// Remove these response headers (lower-case names).
    pub drop_headers: Vec<String>,
    /// Gzip the body.
    pub gzip: bool,
    /// Redirect instead of answering.
    pub redirect: Option<Redirect>,
    /// CDN: signed URLs are expired.
    pub cdn_expire_urls: bool,
    /// Add Xet headers to `/resolve/` answers.
    pub xet_headers: bool,
    /// Answer `404`.
    pub disable_route: bool,
    /// Advertise `Content-Length` off by this much.
    pub length_delta: Option<i64>,
}

/// Request log and fault rules shared by both listeners.
#[derive(Debug, Default)]
pub struct Control {
    log: Mutex<Vec<LogEntry>>,
    rules: Mutex<Vec<FaultRule>>,
    /// Branches moved at runtime: (repo id, branch) → commit sha.
    moved_refs: Mutex<BTreeMap<(String, String), CommitId>>,
    /// Requests being answered on the Hub and the CDN listener.
    gauges: [Gauge; 2],
}

/// Requests of one listener being answered now, and the most at once.
#[derive(Debug, Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

/// Counts one request as being answered until it is dropped ([`Control::enter`]).
#[derive(Debug)]
pub struct InFlight<'a>(&'a Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::AcqRel);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Control {
    /// Counts a request of `listener` in until the guard is dropped, raising
    /// the listener's peak when more are in flight than ever since the reset.
    pub fn enter(&self, listener: Listener) -> InFlight<'_> {
        let gauge = &self.gauges[listener as usize];
        let now = gauge.now.fetch_add(1, Ordering::AcqRel) + 1;
        gauge.peak.fetch_max(now, Ordering::AcqRel);
        InFlight(gauge)
    }

    /// `{"hub": {"in_flight", "peak"}, "cdn": {…}}` (see the module docs).
    pub fn concurrency_json(&self) -> serde_json::Value {
        let gauge = |g: &Gauge| {
            serde_json::json!({
                "in_flight": g.now.load(Ordering::Acquire),
                "peak": g.peak.load(Ordering::Acquire),
            })
        };
        serde_json::json!({
            "hub": gauge(&self.gauges[Listener::Hub as usize]),
            "cdn": gauge(&self.gauges[Listener::Cdn as usize]),
        })
    }

    /// Appends a log entry.
    pub fn record(&self, entry: LogEntry) {
        lock(&self.log).push(entry);
    }

    /// The log as a JSON array.
    pub fn log_json(&self) -> serde_json::Value {
        let log = lock(&self.log);
        let records: Vec<LogRecord<'_>> = log
            .iter()
            .map(|e| LogRecord {
                listener: e.listener,
                method: &e.method,
                path: &e.path,
                query: e.query.as_deref(),
                headers: &e.headers,
                status: e.status,
                bytes: e.bytes.load(Ordering::Relaxed),
                authorization: e.headers.contains_key("authorization"),
            })
            .collect();
        serde_json::to_value(records).unwrap_or_default()
    }

    /// Clears the log, every fault rule, every moved branch and the peaks
    /// (to the requests in flight now).
    pub fn reset(&self) {
        for gauge in &self.gauges {
            gauge
                .peak
                .store(gauge.now.load(Ordering::Acquire), Ordering::Release);
        }
        lock(&self.log).clear();
        lock(&self.rules).clear();
        lock(&self.moved_refs).clear();
    }

    /// Moves a branch (also `POST /__fixture/refs`).
    pub fn move_ref(&self, mv: &MoveRef) {
        lock(&self.moved_refs).insert((mv.repo.clone(), mv.branch.clone()), mv.to_commit.clone());
    }

    /// The commit a moved branch points at, if it was moved.
    pub fn moved_ref(&self, repo: &str, branch: &str) -> Option<CommitId> {
        lock(&self.moved_refs)
            .get(&(repo.to_owned(), branch.to_owned()))
            .cloned()
    }

    /// Every moved branch of `repo`: branch → commit sha.
    pub fn moved_refs(&self, repo: &str) -> BTreeMap<String, CommitId> {
        lock(&self.moved_refs)
            .iter()
            .filter(|((r, _), _)| r == repo)
            .map(|((_, b), sha)| (b.clone(), sha.clone()))
            .collect()
    }

    /// Adds fault rules.
    pub fn add_rules(&self, rules: Vec<FaultRule>) {
        lock(&self.rules).extend(rules);
    }

    /// Removes every fault rule.
    pub fn clear_rules(&self) {
        lock(&self.rules).clear();
    }

    /// Collects (and counts down) the rules matching a request.
    pub fn take_faults(&self, listener: Listener, method: &str, path: &str) -> Faults {
        let mut faults = Faults::default();
        let mut moves = Vec::new();
        for rule in lock(&self.rules).iter_mut() {
            if !rule.matches(listener, method, path) {
                continue;
            }
            if let Some(n) = rule.count.as_mut() {
                *n -= 1;
            }
            faults.latency_ms += rule.latency_ms.unwrap_or(0);
            if faults.status.is_none()
                && let Some(status) = &rule.status
            {
                faults.status = Some((status.clone(), rule.retry_after));
            }
            faults.body.truncate_after = faults.body.truncate_after.or(rule.truncate_after_bytes);
            faults.body.corrupt = faults
                .body
                .corrupt
                .or(rule.corrupt.map(|c| (c.offset, c.xor)));
            faults.ignore_range |= rule.ignore_range;
            faults.range_416 |= rule.range_416;
            faults.reset_connection |= rule.reset_connection;
            if let Some(stall) = rule.stall_after_bytes {
                faults.body.stall.get_or_insert((stall.n, stall.ms));
            }
            faults.body.throttle_bps = faults.body.throttle_bps.or(rule.throttle_bps);
            if faults.status.is_none()
                && let Some(limit) = &rule.rate_limit
            {
                let mut headers = BTreeMap::new();
                if let Some(v) = &limit.ratelimit {
                    headers.insert("ratelimit".to_owned(), v.clone());
                }
                if let Some(v) = &limit.policy {
                    headers.insert("ratelimit-policy".to_owned(), v.clone());
                }
                let status = StatusFault::Full {
                    code: 429,
                    headers,
                    body: None,
                };
                faults.status = Some((status, limit.retry_after_s));
            }
            if let Some(wrong) = rule.wrong_content_length {
                faults.length_delta.get_or_insert(wrong.delta);
            }
            faults
                .drop_headers
                .extend(rule.drop_headers.iter().map(|h| h.to_ascii_lowercase()));
            faults.gzip |= rule.gzip;
            if faults.redirect.is_none() {
                faults.redirect.clone_from(&rule.redirect);
            }
            if let Some(mv) = &rule.move_ref {
                moves.push(mv.clone());
            }
            faults.cdn_expire_urls |= rule.cdn_expire_urls;
            faults.xet_headers |= rule.xet_headers;
            faults.disable_route |= rule.disable_route;
        }
        for mv in &moves {
            self.move_ref(mv);
        }
        faults
    }
}
