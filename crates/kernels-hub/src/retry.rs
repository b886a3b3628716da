//! The one retry policy of the crate, used by the Hub API calls and by file
//! downloads ([`crate::HubClient::download_blob`]): one [`RetryState`] per
//! request, one [`RetryNotice`] per retry.
//!
//! A failure is retried when [`crate::HubError::is_retryable`] says so
//! (connection errors, timeouts, 408, 429, 500, 502, 503, 504), at most
//! [`RetryPolicy::max_retries`] times. The wait before retry `n` (0-based) is
//! the server's wait when it sent one (`RateLimit` reset + 1 s, else
//! `Retry-After`; capped at [`RetryPolicy::max_wait`], default 300 s), else an exponential backoff `BASE · 2ⁿ` capped at
//! [`MAX_BACKOFF`], with "equal jitter": a uniformly random value between half
//! and all of it, so that parallel clients do not retry in lockstep.

use std::time::Duration;

use rand::Rng;

/// First backoff step.
pub const BASE: Duration = Duration::from_millis(500);

/// Longest backoff between two attempts (without `Retry-After`).
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Default ceiling of a wait the server asks for (`RateLimit` reset or
/// `Retry-After`): the Hub's rate-limit window, 5 minutes.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Retry budget and timeouts shared by every request of one process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`KERNELS_MAX_RETRIES`, default 5).
    pub max_retries: u32,
    /// Longest wait for a connection to be set up (`HF_HUB_ETAG_TIMEOUT`,
    /// which bounds huggingface_hub's metadata request; `kernels` sends no
    /// metadata request of its own, see `docs/downloading.md`).
    pub etag_timeout: Duration,
    /// Longest wait for the response headers of a file download, and longest
    /// pause of a socket read (`HF_HUB_DOWNLOAD_TIMEOUT`).
    pub download_timeout: Duration,
    /// Stall watchdog: longest time without a body byte during a file
    /// download (`KERNELS_STALL_TIMEOUT`).
    pub stall_timeout: Duration,
    /// Deadline of one whole API exchange (request, response headers and the
    /// complete body) of a JSON call: refs, revision, tree and commit pages,
    /// organization overview, `metadata.json` (`KERNELS_API_TIMEOUT`).
    pub api_timeout: Duration,
    /// Longest wait honoured from the server (`RateLimit` reset, `Retry-After`),
    /// also when pacing requests after `r` reached 0
    /// (`KERNELS_MAX_RATE_LIMIT_WAIT`, default [`MAX_RETRY_AFTER`]).
    pub max_wait: Duration,
}

/// Default of [`RetryPolicy::api_timeout`].
pub const DEFAULT_API_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for RetryPolicy {
    /// huggingface_hub's defaults: 10 s timeouts, 5 retries, 60 s per API exchange.
    fn default() -> Self {
        let ten = Duration::from_secs(10);
        RetryPolicy {
            max_retries: 5,
            etag_timeout: ten,
            download_timeout: ten,
            stall_timeout: ten,
            api_timeout: DEFAULT_API_TIMEOUT,
            max_wait: MAX_RETRY_AFTER,
        }
    }
}

impl RetryPolicy {
    /// How long to wait before retry number `retry` (0 for the first retry),
    /// given the server's `Retry-After` in seconds, if any.
    pub fn delay(&self, retry: u32, retry_after: Option<u64>) -> Duration {
        if let Some(secs) = retry_after {
            return Duration::from_secs(secs).min(self.max_wait);
        }
        let full = BASE.saturating_mul(1u32 << retry.min(16)).min(MAX_BACKOFF);
        let jitter: f64 = rand::rng().random_range(0.5..=1.0);
        full.mul_f64(jitter)
    }
}

/// The retries of one request (an API exchange, or one file download over
/// all its attempts), as uv's `RetryState`: counts them against
/// [`RetryPolicy::max_retries`] and says how long to wait before the next.
#[derive(Debug, Clone)]
pub struct RetryState {
    policy: RetryPolicy,
    retries: u32,
}

impl RetryState {
    /// No retry made yet.
    pub fn new(policy: RetryPolicy) -> Self {
        RetryState { policy, retries: 0 }
    }

    /// Counts one more retry and returns the wait before it
    /// ([`RetryPolicy::delay`], given the server's wait in seconds), or `None`
    /// when the budget is spent.
    pub fn next_wait(&mut self, retry_after: Option<u64>) -> Option<Duration> {
        if self.retries >= self.policy.max_retries {
            return None;
        }
        let wait = self.policy.delay(self.retries, retry_after);
        self.retries += 1;
        Some(wait)
    }

    /// The notice of the retry [`RetryState::next_wait`] just counted.
    pub fn notice(
        &self,
        url: &str,
        file: Option<String>,
        reason: String,
        wait: Duration,
    ) -> RetryNotice {
        RetryNotice {
            url: kernels_types::text::redact(url).into_owned(),
            file,
            reason: kernels_types::text::safe(&reason),
            wait,
            attempt: self.retries,
            max: self.policy.max_retries,
        }
    }
}

/// A request that failed transiently and is about to be tried again: the one
/// retry event, for API calls (passed to the observer of
/// [`crate::HubClient::with_retry_observer`]) and file downloads (passed to
/// [`crate::BlobSink::retry`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The request URL, its secrets removed ([`kernels_types::text::redact`]).
    pub url: String,
    /// The file being downloaded, as `owner/name: path`; `None` for an API call.
    pub file: Option<String>,
    /// Why the attempt failed, printable ([`kernels_types::text::safe`]), one line: the deepest cause for an API call
    /// (the URL is named elsewhere), the error's first line for a file.
    pub reason: String,
    /// The pause before the next attempt.
    pub wait: Duration,
    /// The number of the retry about to happen (1-based).
    pub attempt: u32,
    /// Retries allowed in all.
    pub max: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            etag_timeout: Duration::from_secs(1),
            download_timeout: Duration::from_secs(1),
            stall_timeout: Duration::from_secs(1),
            api_timeout: Duration::from_secs(1),
            max_wait: MAX_RETRY_AFTER,
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let p = policy();
        for retry in 0..8 {
            let full = BASE.saturating_mul(1 << retry).min(MAX_BACKOFF);
            let d = p.delay(retry, None);
            assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
        }
    }

    #[test]
    fn state_counts_retries_up_to_the_budget() {
        let mut p = policy();
        p.max_retries = 2;
        let mut state = RetryState::new(p);
        assert_eq!(state.next_wait(Some(1)), Some(Duration::from_secs(1)));
        let notice = state.notice("http://h/x", None, "reset".into(), Duration::from_secs(1));
        assert_eq!((notice.attempt, notice.max), (1, 2));
        assert!(state.next_wait(None).is_some());
        assert_eq!(state.next_wait(None), None);
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = policy();
        assert_eq!(p.delay(0, Some(2)), Duration::from_secs(2));
        assert_eq!(p.delay(3, Some(0)), Duration::ZERO);
        assert_eq!(p.delay(0, Some(86_400)), MAX_RETRY_AFTER);
    }
}
