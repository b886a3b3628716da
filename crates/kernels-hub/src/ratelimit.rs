//! The Hub's rate-limit headers (IETF draft `RateLimit` / `RateLimit-Policy`,
//! as huggingface_hub 2.4 reads them) and the events the client reports.
//!
//! `RateLimit: "api";r=0;t=55` says the `api` quota has `r` requests left and
//! resets in `t` seconds; `RateLimit-Policy: "fixed window";"api";q=500;w=300`
//! says the quota is `q` requests per `w` seconds. When `r` is 0 the wait before
//! the next request is `t + 1` seconds (huggingface_hub adds one to avoid
//! rounding issues), preferred over `Retry-After`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;

/// One parsed `RateLimit` header (with its policy, when sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    /// Quota name, e.g. `api` or `resolvers`.
    pub resource: String,
    /// Requests left in the window.
    pub remaining: u64,
    /// Seconds until the window resets.
    pub reset_secs: u64,
    /// Requests per window (`q`), if the policy was sent.
    pub limit: Option<u64>,
    /// Window length in seconds (`w`), if the policy was sent.
    pub window_secs: Option<u64>,
}

fn param(part: &str, name: &str) -> Option<u64> {
    let (key, value) = part.split_once('=')?;
    (key.trim() == name).then(|| value.trim().parse().ok())?
}

impl RateLimit {
    /// Parses `RateLimit` (and `RateLimit-Policy`) from response headers; `None`
    /// without a well-formed `RateLimit`.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<RateLimit> {
        let value = headers.get("ratelimit")?.to_str().ok()?;
        let mut parts = value.split(';').map(str::trim);
        let resource = parts.next()?.strip_prefix('"')?.strip_suffix('"')?;
        if resource.is_empty() || !resource.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest: Vec<&str> = parts.collect();
        let remaining = rest.iter().find_map(|p| param(p, "r"))?;
        let reset_secs = rest.iter().find_map(|p| param(p, "t"))?;
        let policy: Vec<&str> = headers
            .get("ratelimit-policy")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').map(str::trim).collect())
            .unwrap_or_default();
        let limit = policy.iter().find_map(|p| param(p, "q"));
        let window_secs = limit.and(policy.iter().find_map(|p| param(p, "w")));
        Some(RateLimit {
            resource: resource.to_owned(),
            remaining,
            reset_secs,
            limit: window_secs.and(limit),
            window_secs,
        })
    }

    /// The wait before the next request when the quota is used up: `t + 1` s.
    pub fn wait(&self) -> Option<Duration> {
        (self.remaining == 0).then(|| Duration::from_secs(self.reset_secs.saturating_add(1)))
    }
}

/// Something the client wants the user to know; the library never prints, the
/// CLI decides how to show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubEvent {
    /// The Hub's rate limit is reached; the client waits before the next request.
    RateLimited {
        /// How long the client waits.
        wait: Duration,
        /// The quota (`api`, `resolvers`, …), when the Hub named it.
        resource: Option<String>,
        /// `q` requests per `w` seconds, when the Hub sent its policy.
        policy: Option<(u64, u64)>,
    },
    /// The stored OAuth token was close to expiry and has been refreshed
    /// (`stored_tokens` and the token file rewritten).
    TokenRefreshed,
    /// The stored OAuth token could not be refreshed; the old one is used.
    TokenRefreshFailed {
        /// Why (one line, server text escaped).
        reason: String,
    },
}

impl fmt::Display for HubEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubEvent::RateLimited {
                wait,
                resource,
                policy,
            } => {
                let secs = wait.as_secs_f64().ceil() as u64;
                write!(f, "rate limited by the Hub, waiting {secs} s")?;
                match (resource, policy) {
                    (Some(r), Some((q, w))) => write!(f, " (`{r}` quota: {q} requests per {w} s)"),
                    (Some(r), None) => write!(f, " (`{r}` quota)"),
                    _ => Ok(()),
                }
            }
            HubEvent::TokenRefreshed => write!(f, "refreshed the stored Hub access token"),
            HubEvent::TokenRefreshFailed { reason } => write!(
                f,
                "warning: could not refresh the Hub access token ({reason}); using the stored one (run `hf auth login` if it has expired)"
            ),
        }
    }
}

/// Where a client reports [`HubEvent`]s (cheap to clone).
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(&HubEvent) + Send + Sync>);

impl EventSink {
    /// A sink calling `f` for every event.
    pub fn new(f: impl Fn(&HubEvent) + Send + Sync + 'static) -> Self {
        EventSink(Arc::new(f))
    }

    /// Reports one event.
    pub fn emit(&self, event: &HubEvent) {
        (self.0)(event);
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn parses_the_hub_headers() {
        let h = headers(&[
            ("ratelimit", "\"api\";r=0;t=55"),
            ("ratelimit-policy", "\"fixed window\";\"api\";q=500;w=300"),
        ]);
        let rl = RateLimit::from_headers(&h).unwrap();
        assert_eq!(
            rl,
            RateLimit {
                resource: "api".into(),
                remaining: 0,
                reset_secs: 55,
                limit: Some(500),
                window_secs: Some(300),
            }
        );
        assert_eq!(rl.wait(), Some(Duration::from_secs(56)));
        let h = headers(&[("ratelimit", "\"resolvers\" ; r = 12 ; t = 3")]);
        let rl = RateLimit::from_headers(&h).unwrap();
        assert_eq!((rl.remaining, rl.wait(), rl.limit), (12, None, None));
        for bad in ["garbage", "\"api\";r=x;t=1", "api;r=0;t=1", "\"api\";t=5"] {
            let h = headers(&[("ratelimit", bad)]);
            assert_eq!(RateLimit::from_headers(&h), None, "{bad}");
        }
    }

    #[test]
    fn event_line() {
        let e = HubEvent::RateLimited {
            wait: Duration::from_millis(56_000),
            resource: Some("api".into()),
            policy: Some((500, 300)),
        };
        assert_eq!(
            e.to_string(),
            "rate limited by the Hub, waiting 56 s (`api` quota: 500 requests per 300 s)"
        );
    }
}
